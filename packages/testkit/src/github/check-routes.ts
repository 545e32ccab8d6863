import { randomBytes } from 'node:crypto';
import * as checks from './check-shapes.js';
import { pageOf } from './paging.js';
import { error as errorBody } from './shapes.js';
import type { Route, RouteContext } from './routes.js';
import type { RepoState } from './state.js';

// The checks routes of the GitHub STAND-IN: check runs and the combined status of a
// commit, and the Actions job-logs endpoint, which answers 302 with a short-lived download
// URL (GitHub's is on another host and needs no token; the stand-in serves it from
// `/_standin/job-logs/<key>` without one, see {@link JobLogDownloads}).

/** Download keys handed out by the job-logs endpoint, and the logs they stand for. */
export type JobLogDownloads = Map<string, string>;

/** The path prefix of the download URLs. */
export const jobLogPath = '/_standin/job-logs/';

const repoPath = '([^/]+/[^/]+)';

/** The routes, bound to one stand-in. */
export function createCheckRoutes(ctx: RouteContext, downloads: JobLogDownloads): Route[] {
  const facts = (state: RepoState) => ({
    fullName: state.fullName,
    private: state.options.private,
    createdAt: state.createdAt,
    openIssues: [...state.issues.values(), ...state.pulls.values()].filter((i) => i.state === 'open').length,
  });
  /** A ref as GitHub takes it here: a full sha, or a branch name. */
  const resolve = async (state: RepoState, ref: string) =>
    /^[0-9a-f]{40}$/.test(ref) ? ref : await ctx.sha(state, decodeURIComponent(ref));
  /** The open pull requests (of this repository's branches) whose head is at `sha`. */
  const pullsAt = async (state: RepoState, sha: string): Promise<checks.MinimalPull[]> => {
    const found: checks.MinimalPull[] = [];
    for (const p of state.pulls.values()) {
      if (p.state !== 'open' || p.headRepo !== undefined || (await ctx.sha(state, p.head.ref)) !== sha) continue;
      found.push({
        number: p.number,
        headRef: p.head.ref,
        headSha: sha,
        baseRef: p.base.ref,
        baseSha: (await ctx.sha(state, p.base.ref)) ?? '0'.repeat(40),
      });
    }
    return found;
  };

  return [
    [
      'GET',
      new RegExp(`^/repos/${repoPath}/commits/([^/]+)/check-runs$`),
      '/repos/{owner}/{repo}/commits/{ref}/check-runs',
      async (m, _req, url, reply) => {
        const state = ctx.repo(m[1] ?? '');
        const sha = await resolve(state, m[2] ?? '');
        if (sha === undefined) return reply(422, errorBody(`No commit found for SHA: ${m[2] ?? ''}`));
        const latest = new Map<string, (typeof state.checkRuns)[number]>();
        // filter=latest (the default): the most recent run of each name.
        for (const run of state.checkRuns.filter((r) => r.headSha === sha)) {
          if (url.searchParams.get('filter') === 'all') latest.set(String(run.id), run);
          else latest.set(run.name, run);
        }
        const wanted = url.searchParams.get('status');
        const runs = [...latest.values()]
          .filter((r) => wanted === null || r.status === wanted)
          .sort((a, b) => b.id - a.id);
        const { items, link } = pageOf(runs, url);
        const pulls = await pullsAt(state, sha);
        reply(
          200,
          {
            total_count: runs.length,
            check_runs: items.map((r) => checks.checkRun(ctx.shapes, state.fullName, r, pulls)),
          },
          link === undefined ? {} : { link },
        );
      },
    ],
    [
      'GET',
      new RegExp(`^/repos/${repoPath}/commits/([^/]+)/status$`),
      '/repos/{owner}/{repo}/commits/{ref}/status',
      async (m, _req, _url, reply) => {
        const state = ctx.repo(m[1] ?? '');
        const sha = await resolve(state, m[2] ?? '');
        if (sha === undefined) return reply(404, errorBody('Not Found'));
        reply(
          200,
          checks.combinedStatus(
            ctx.shapes,
            facts(state),
            sha,
            state.statuses.filter((s) => s.sha === sha),
          ),
        );
      },
    ],
    [
      'GET',
      new RegExp(`^/repos/${repoPath}/actions/jobs/(\\d+)/logs$`),
      '/repos/{owner}/{repo}/actions/jobs/{job_id}/logs',
      (m, _req, _url, reply) => {
        const state = ctx.repo(m[1] ?? '');
        const run = state.checkRuns.find((r) => r.id === Number(m[2]) && r.app === 'github-actions');
        if (!run) return reply(404, errorBody('Not Found'));
        // GitHub: "Anyone with read access to the repository can use this endpoint"; the
        // answer is a redirect to a URL that expires after 1 minute.
        const key = randomBytes(16).toString('hex');
        downloads.set(key, run.log ?? '');
        reply(302, undefined, { location: `${ctx.shapes.base}${jobLogPath}${key}` });
      },
    ],
  ];
}
