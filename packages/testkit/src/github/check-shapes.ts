import { idOf, repository, user, type RepoFacts, type ShapeContext } from './shapes.js';
import type { StandInCheckRun, StandInStatus } from './state.js';

// Checks and statuses as the GitHub STAND-IN answers them, shaped as GitHub's OpenAPI
// description requires (`check-run`, `combined-commit-status`, `simple-commit-status`).

/** `integration`: the GitHub App behind a check run. */
function app(ctx: ShapeContext, slug: string): Record<string, unknown> {
  const id = idOf('app', slug);
  return {
    id,
    slug,
    node_id: `A_${id}`,
    owner: user(ctx, slug === 'github-actions' ? 'github' : slug),
    name: slug === 'github-actions' ? 'GitHub Actions' : slug,
    description: null,
    external_url: `${ctx.base}/apps/${slug}`,
    html_url: `${ctx.base}/apps/${slug}`,
    created_at: '2018-07-30T09:30:17Z',
    updated_at: '2018-07-30T09:30:17Z',
    permissions: { checks: 'write', contents: 'read' },
    events: ['check_run', 'check_suite'],
  };
}

/** An open pull request a check run matches, as `pull-request-minimal`. */
export interface MinimalPull {
  number: number;
  headRef: string;
  headSha: string;
  baseRef: string;
  baseSha: string;
}

/** `check-run`. */
export function checkRun(
  ctx: ShapeContext,
  repo: string,
  run: StandInCheckRun,
  pulls: MinimalPull[],
): Record<string, unknown> {
  const repoRef = { id: idOf('repo', repo), url: `${ctx.base}/repos/${repo}`, name: repo.split('/')[1] ?? '' };
  return {
    id: run.id,
    node_id: `CR_${run.id}`,
    head_sha: run.headSha,
    external_id: '',
    url: `${ctx.base}/repos/${repo}/check-runs/${run.id}`,
    html_url: `${ctx.base}/${repo}/runs/${run.id}`,
    details_url: `${ctx.base}/${repo}/actions/runs/${run.suiteId}/job/${run.id}`,
    status: run.status,
    conclusion: run.conclusion,
    started_at: run.startedAt,
    completed_at: run.completedAt,
    name: run.name,
    output: {
      ...run.output,
      annotations_count: 0,
      annotations_url: `${ctx.base}/repos/${repo}/check-runs/${run.id}/annotations`,
    },
    check_suite: { id: run.suiteId },
    app: app(ctx, run.app),
    pull_requests: pulls.map((p) => ({
      id: idOf('pull', `${repo}#${p.number}`),
      number: p.number,
      url: `${ctx.base}/repos/${repo}/pulls/${p.number}`,
      head: { ref: p.headRef, sha: p.headSha, repo: repoRef },
      base: { ref: p.baseRef, sha: p.baseSha, repo: repoRef },
    })),
  };
}

/** `simple-commit-status`. */
function status(ctx: ShapeContext, s: StandInStatus): Record<string, unknown> {
  return {
    id: s.id,
    node_id: `SC_${s.id}`,
    state: s.state,
    context: s.context,
    description: s.description,
    target_url: s.targetUrl,
    avatar_url: null,
    url: `${ctx.base}/statuses/${s.sha}`,
    created_at: s.createdAt,
    updated_at: s.createdAt,
  };
}

/**
 * `combined-commit-status`: the latest status per context; `failure` if any is error or
 * failure, else `pending` if any is pending or there are none, else `success` (GitHub's rule).
 */
export function combinedStatus(
  ctx: ShapeContext,
  repo: RepoFacts,
  sha: string,
  all: StandInStatus[],
): Record<string, unknown> {
  const latest = new Map<string, StandInStatus>();
  for (const s of [...all].sort((a, b) => a.id - b.id)) latest.set(s.context, s);
  const statuses = [...latest.values()];
  const state = statuses.some((s) => s.state === 'error' || s.state === 'failure')
    ? 'failure'
    : statuses.length === 0 || statuses.some((s) => s.state === 'pending')
      ? 'pending'
      : 'success';
  const full = repository(ctx, repo);
  return {
    state,
    sha,
    total_count: statuses.length,
    statuses: statuses.map((s) => status(ctx, s)),
    repository: full,
    commit_url: `${ctx.base}/repos/${repo.fullName}/commits/${sha}`,
    url: `${ctx.base}/repos/${repo.fullName}/commits/${sha}/status`,
  };
}
