import type { IncomingMessage } from 'node:http';
import { pageOf } from './paging.js';
import * as shape from './shapes.js';
import type { IssueFacts } from './shapes.js';
import type { Permission, RepoState, StandInComment, StandInPull } from './state.js';

// The REST routes of the GitHub STAND-IN: the subset the forge adapter and the producer
// use, answering as GitHub does (shapes, paging, ordering, the refusals that matter).

/** What the routes need from the server. */
export interface RouteContext {
  shapes: shape.ShapeContext;
  /** The login the token acts as. */
  bot: string;
  /** The repository, or a thrown 404. */
  repo(fullName: string): RepoState;
  repos(): Iterable<RepoState>;
  now(): string;
  nextCommentId(): number;
  /** Records a label event and touches the issue. */
  addEvent(state: RepoState, issueNumber: number, event: 'labeled' | 'unlabeled', label: string, actor: string): void;
  /** The sha `ref` points at in the bare repository, if it exists. */
  sha(state: RepoState, ref: string): Promise<string | undefined>;
  /** Every branch of the bare repository and its sha, read at once: for a page of pull requests. */
  branches(state: RepoState): Promise<Map<string, string>>;
}

type Reply = (status: number, body: unknown, headers?: Record<string, string>) => void;
type Handler = (m: RegExpExecArray, req: IncomingMessage, url: URL, reply: Reply) => Promise<void> | void;
/** Method, path pattern, the operation's path template in GitHub's OpenAPI description, handler. */
export type Route = [string, RegExp, string, Handler];

async function readBody(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  return text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
}

const notFound = shape.error('Not Found');
const repoPath = '([^/]+/[^/]+)';

/** The routes, bound to one stand-in. */
export function createRoutes(ctx: RouteContext): Route[] {
  const facts = (state: RepoState) => ({
    fullName: state.fullName,
    private: state.options.private,
    createdAt: state.createdAt,
    openIssues: [...state.issues.values(), ...state.pulls.values()].filter((i) => i.state === 'open').length,
  });
  const commentCount = (state: RepoState, n: number) =>
    [...state.comments.values()].filter((c) => c.issue_number === n).length;
  /** A pull request as the issues API shows it. */
  const asIssue = (state: RepoState, p: StandInPull): IssueFacts => ({
    number: p.number,
    title: p.title,
    body: p.body,
    user: p.user,
    labels: p.labels,
    state: p.state,
    locked: p.locked,
    created_at: p.created_at,
    updated_at: p.updated_at,
    closed_at: p.state === 'closed' ? p.updated_at : null,
    comments: commentCount(state, p.number),
    pull: true,
    pull_merged_at: p.merged_at,
  });
  const item = (state: RepoState, n: number) => state.issues.get(n) ?? state.pulls.get(n);
  const issueOut = (state: RepoState, n: number) => {
    const found = state.issues.get(n);
    if (found) return shape.issue(ctx.shapes, state.fullName, { ...found, comments: commentCount(state, n) });
    const p = state.pulls.get(n);
    return p ? shape.issue(ctx.shapes, state.fullName, asIssue(state, p)) : undefined;
  };
  const pullOut = async (state: RepoState, p: StandInPull, simple = false, branches?: Map<string, string>) => {
    const sha = async (ref: string) => (branches === undefined ? ctx.sha(state, ref) : branches.get(ref));
    // A fork's head branch is in the fork, not here: its sha is the one it was opened with.
    const head = p.headRepo === undefined ? await sha(p.head.ref) : p.head.sha;
    const base = (await sha(p.base.ref)) ?? '0'.repeat(40);
    return shape.pull(
      ctx.shapes,
      facts(state),
      { ...p, head: { ...p.head, ...(head === undefined ? {} : { sha: head }) } },
      base,
      simple,
    );
  };
  const paged = <T>(reply: Reply, url: URL, items: readonly T[], render: (x: T) => unknown) => {
    const { items: page, link } = pageOf(items, url);
    reply(200, page.map(render), link === undefined ? {} : { link });
  };
  const commentOut = (state: RepoState, c: StandInComment) => shape.comment(ctx.shapes, state.fullName, c);
  const labelsOut = (state: RepoState, labels: { name: string }[]) =>
    labels.map((l) => shape.label(ctx.shapes, state.fullName, l.name));
  const desc = (url: URL, fallback: 'asc' | 'desc') => (url.searchParams.get('direction') ?? fallback) === 'desc';

  return [
    [
      'GET',
      new RegExp(`^/repos/${repoPath}$`),
      '/repos/{owner}/{repo}',
      (m, _req, _url, reply) => {
        reply(200, shape.repository(ctx.shapes, facts(ctx.repo(m[1] ?? '')), true));
      },
    ],
    [
      'GET',
      new RegExp(`^/repos/${repoPath}/issues$`),
      '/repos/{owner}/{repo}/issues',
      (m, _req, url, reply) => {
        const state = ctx.repo(m[1] ?? '');
        const labels = (url.searchParams.get('labels') ?? '')
          .split(',')
          .filter((l) => l !== '')
          .map((l) => l.toLowerCase());
        const since = url.searchParams.get('since');
        const wanted = url.searchParams.get('state') ?? 'open';
        const key = url.searchParams.get('sort') === 'updated' ? 'updated_at' : 'created_at';
        const all = [...state.issues.values(), ...[...state.pulls.values()].map((p) => asIssue(state, p))]
          .filter(
            (i) =>
              (wanted === 'all' || i.state === wanted) &&
              labels.every((l) => i.labels.some((x) => x.name.toLowerCase() === l)) &&
              (since === null || i.updated_at >= since),
          )
          .sort((a, b) => a[key].localeCompare(b[key]) || a.number - b.number);
        // GitHub's default: newest first.
        if (desc(url, 'desc')) all.reverse();
        paged(reply, url, all, (i) =>
          shape.issue(ctx.shapes, state.fullName, { ...i, comments: commentCount(state, i.number) }),
        );
      },
    ],
    [
      'GET',
      new RegExp(`^/repos/${repoPath}/issues/(\\d+)$`),
      '/repos/{owner}/{repo}/issues/{issue_number}',
      (m, _req, _url, reply) => {
        const found = issueOut(ctx.repo(m[1] ?? ''), Number(m[2]));
        reply(found ? 200 : 404, found ?? notFound);
      },
    ],
    [
      'GET',
      new RegExp(`^/repos/${repoPath}/issues/comments$`),
      '/repos/{owner}/{repo}/issues/comments',
      (m, _req, url, reply) => {
        const state = ctx.repo(m[1] ?? '');
        const since = url.searchParams.get('since');
        const sort = url.searchParams.get('sort');
        const key = sort === 'updated' ? 'updated_at' : 'created_at';
        const found = [...state.comments.values()]
          .filter((c) => since === null || c.updated_at >= since)
          .sort((a, b) => a[key].localeCompare(b[key]) || a.id - b.id);
        if (sort !== null && desc(url, 'desc')) found.reverse();
        paged(reply, url, found, (c) => commentOut(state, c));
      },
    ],
    [
      'GET',
      new RegExp(`^/repos/${repoPath}/issues/(\\d+)/events$`),
      '/repos/{owner}/{repo}/issues/{issue_number}/events',
      (m, _req, url, reply) => {
        const state = ctx.repo(m[1] ?? '');
        if (!item(state, Number(m[2]))) return reply(404, notFound);
        paged(
          reply,
          url,
          state.events.filter((e) => e.issue_number === Number(m[2])),
          (e) => shape.event(ctx.shapes, state.fullName, e),
        );
      },
    ],
    [
      'GET',
      new RegExp(`^/repos/${repoPath}/issues/(\\d+)/comments$`),
      '/repos/{owner}/{repo}/issues/{issue_number}/comments',
      (m, _req, url, reply) => {
        const state = ctx.repo(m[1] ?? '');
        if (!item(state, Number(m[2]))) return reply(404, notFound);
        const since = url.searchParams.get('since');
        const found = [...state.comments.values()]
          .filter((c) => c.issue_number === Number(m[2]) && (since === null || c.updated_at >= since))
          .sort((a, b) => a.id - b.id);
        paged(reply, url, found, (c) => commentOut(state, c));
      },
    ],
    [
      'POST',
      new RegExp(`^/repos/${repoPath}/issues/(\\d+)/comments$`),
      '/repos/{owner}/{repo}/issues/{issue_number}/comments',
      async (m, req, _url, reply) => {
        const body = await readBody(req);
        const state = ctx.repo(m[1] ?? '');
        const target = item(state, Number(m[2]));
        if (!target) return reply(404, notFound);
        if (target.locked) return reply(403, shape.error('Unable to create comment because issue is locked.'));
        const comment: StandInComment = {
          id: ctx.nextCommentId(),
          issue_number: Number(m[2]),
          body: String(body.body ?? ''),
          user: { login: ctx.bot },
          created_at: ctx.now(),
          updated_at: ctx.now(),
        };
        state.comments.set(comment.id, comment);
        reply(201, commentOut(state, comment), {
          location: `${ctx.shapes.base}/repos/${state.fullName}/issues/comments/${comment.id}`,
        });
      },
    ],
    [
      'PATCH',
      new RegExp(`^/repos/${repoPath}/issues/comments/(\\d+)$`),
      '/repos/{owner}/{repo}/issues/comments/{comment_id}',
      async (m, req, _url, reply) => {
        const state = ctx.repo(m[1] ?? '');
        const comment = state.comments.get(Number(m[2]));
        if (!comment) return reply(404, notFound);
        comment.body = String((await readBody(req)).body ?? '');
        comment.updated_at = ctx.now();
        reply(200, commentOut(state, comment));
      },
    ],
    [
      'POST',
      new RegExp(`^/repos/${repoPath}/issues/(\\d+)/labels$`),
      '/repos/{owner}/{repo}/issues/{issue_number}/labels',
      async (m, req, _url, reply) => {
        const state = ctx.repo(m[1] ?? '');
        const target = item(state, Number(m[2]));
        if (!target) return reply(404, notFound);
        for (const name of (await readBody(req)).labels as string[]) {
          if (!target.labels.some((l) => l.name.toLowerCase() === name.toLowerCase())) {
            target.labels.push({ name });
            ctx.addEvent(state, target.number, 'labeled', name, ctx.bot);
          }
        }
        reply(200, labelsOut(state, target.labels));
      },
    ],
    [
      'DELETE',
      new RegExp(`^/repos/${repoPath}/issues/(\\d+)/labels/([^/]+)$`),
      '/repos/{owner}/{repo}/issues/{issue_number}/labels/{name}',
      (m, _req, _url, reply) => {
        const state = ctx.repo(m[1] ?? '');
        const target = item(state, Number(m[2]));
        const name = decodeURIComponent(m[3] ?? '').toLowerCase();
        const had = target?.labels.find((l) => l.name.toLowerCase() === name);
        if (!target || !had) return reply(404, shape.error('Label does not exist'));
        target.labels = target.labels.filter((l) => l !== had);
        ctx.addEvent(state, target.number, 'unlabeled', had.name, ctx.bot);
        reply(200, labelsOut(state, target.labels));
      },
    ],
    [
      'GET',
      new RegExp(`^/repos/${repoPath}/issues/(\\d+)/labels$`),
      '/repos/{owner}/{repo}/issues/{issue_number}/labels',
      (m, _req, url, reply) => {
        const state = ctx.repo(m[1] ?? '');
        const target = item(state, Number(m[2]));
        if (!target) return reply(404, notFound);
        paged(reply, url, target.labels, (l) => shape.label(ctx.shapes, state.fullName, l.name));
      },
    ],
    [
      'GET',
      new RegExp(`^/repos/${repoPath}/pulls$`),
      '/repos/{owner}/{repo}/pulls',
      async (m, _req, url, reply) => {
        const state = ctx.repo(m[1] ?? '');
        const wanted = url.searchParams.get('state') ?? 'open';
        const head = url.searchParams.get('head');
        const base = url.searchParams.get('base');
        // `created` (GitHub's default) or `updated`; popularity and long-running are not kept.
        const key = url.searchParams.get('sort') === 'updated' ? 'updated_at' : 'created_at';
        const found = [...state.pulls.values()]
          .filter(
            (p) =>
              (wanted === 'all' || p.state === wanted) &&
              (head === null || p.head.label === head) &&
              (base === null || p.base.ref === base),
          )
          .sort((a, b) => a[key].localeCompare(b[key]) || a.number - b.number);
        if (desc(url, 'desc')) found.reverse();
        const { items, link } = pageOf(found, url);
        const branches = await ctx.branches(state);
        reply(
          200,
          await Promise.all(items.map((p) => pullOut(state, p, true, branches))),
          link === undefined ? {} : { link },
        );
      },
    ],
    [
      'POST',
      new RegExp(`^/repos/${repoPath}/pulls$`),
      '/repos/{owner}/{repo}/pulls',
      async (m, req, _url, reply) => {
        const state = ctx.repo(m[1] ?? '');
        const body = await readBody(req);
        const head = String(body.head ?? '');
        const ref = head.includes(':') ? head.slice(head.indexOf(':') + 1) : head;
        const label = `${state.fullName.split('/')[0]}:${ref}`;
        const invalid = (field: string) =>
          reply(
            422,
            shape.error('Validation Failed', { errors: [{ resource: 'PullRequest', field, code: 'invalid' }] }),
          );
        if ((await ctx.sha(state, ref)) === undefined) return invalid('head');
        if ((await ctx.sha(state, String(body.base ?? ''))) === undefined) return invalid('base');
        if (body.draft === true && !state.options.draftPullRequests)
          return reply(422, shape.error('Draft pull requests are not supported in this repository.'));
        // Checked and created with no await in between: GitHub enforces one open PR per head atomically.
        if ([...state.pulls.values()].some((p) => p.state === 'open' && p.head.label === label)) {
          return reply(
            422,
            shape.error('Validation Failed', {
              errors: [
                { resource: 'PullRequest', code: 'custom', message: `A pull request already exists for ${label}.` },
              ],
            }),
          );
        }
        state.next += 1;
        const pull: StandInPull = {
          number: state.next,
          node_id: `PR_${state.fullName}#${state.next}`,
          title: String(body.title ?? ''),
          body: String(body.body ?? ''),
          head: { ref, label },
          base: { ref: String(body.base) },
          draft: body.draft === true,
          state: 'open',
          html_url: `${ctx.shapes.base}/${state.fullName}/pull/${state.next}`,
          labels: [],
          user: { login: ctx.bot },
          locked: false,
          created_at: ctx.now(),
          updated_at: ctx.now(),
          merged_at: null,
        };
        state.pulls.set(pull.number, pull);
        state.creations.set(ref, (state.creations.get(ref) ?? 0) + 1);
        reply(201, await pullOut(state, pull));
      },
    ],
    [
      'GET',
      new RegExp(`^/repos/${repoPath}/pulls/(\\d+)$`),
      '/repos/{owner}/{repo}/pulls/{pull_number}',
      async (m, _req, _url, reply) => {
        const state = ctx.repo(m[1] ?? '');
        const pull = state.pulls.get(Number(m[2]));
        reply(pull ? 200 : 404, pull ? await pullOut(state, pull) : notFound);
      },
    ],
    [
      'PATCH',
      new RegExp(`^/repos/${repoPath}/pulls/(\\d+)$`),
      '/repos/{owner}/{repo}/pulls/{pull_number}',
      async (m, req, _url, reply) => {
        const state = ctx.repo(m[1] ?? '');
        const pull = state.pulls.get(Number(m[2]));
        if (!pull) return reply(404, notFound);
        const body = await readBody(req);
        if (typeof body.title === 'string') pull.title = body.title;
        if (typeof body.body === 'string') pull.body = body.body;
        if (typeof body.base === 'string') pull.base = { ref: body.base };
        if (body.state === 'open' || body.state === 'closed') pull.state = body.state;
        pull.updated_at = ctx.now();
        reply(200, await pullOut(state, pull));
      },
    ],
    [
      'GET',
      new RegExp(`^/repos/${repoPath}/pulls/(\\d+)/reviews/(\\d+)/comments$`),
      '/repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}/comments',
      async (m, _req, url, reply) => {
        const state = ctx.repo(m[1] ?? '');
        const pull = state.pulls.get(Number(m[2]));
        const sha = (pull && (await ctx.sha(state, pull.head.ref))) ?? '0'.repeat(40);
        const found = state.reviewComments.filter(
          (c) => c.pull_number === Number(m[2]) && c.review_id === Number(m[3]),
        );
        paged(reply, url, found, (c) => shape.reviewComment(ctx.shapes, state.fullName, c, sha));
      },
    ],
    [
      'GET',
      new RegExp(`^/repos/${repoPath}/collaborators/([^/]+)/permission$`),
      '/repos/{owner}/{repo}/collaborators/{username}/permission',
      (m, _req, _url, reply) => {
        const login = decodeURIComponent(m[2] ?? '');
        const role: Permission = ctx.repo(m[1] ?? '').permissions.get(login.toLowerCase()) ?? 'none';
        // Like GitHub: `permission` is the legacy level (maintain reads as write, triage as read); `role_name` the role.
        const legacy: Record<Permission, string> = {
          admin: 'admin',
          maintain: 'write',
          write: 'write',
          triage: 'read',
          read: 'read',
          none: 'none',
        };
        reply(200, shape.permission(ctx.shapes, login, role, legacy[role]));
      },
    ],
    // GitHub changes the draft flag only through GraphQL; the two mutations the adapter uses.
    [
      'POST',
      /^\/graphql$/,
      '/graphql',
      async (_m, req, _url, reply) => {
        const { query = '', variables = {} } = (await readBody(req)) as { query?: string; variables?: { id?: string } };
        const draft = /convertPullRequestToDraft/.test(query)
          ? true
          : /markPullRequestReadyForReview/.test(query)
            ? false
            : undefined;
        const owner = [...ctx.repos()].find((r) => [...r.pulls.values()].some((p) => p.node_id === variables.id));
        const pull = owner && [...owner.pulls.values()].find((p) => p.node_id === variables.id);
        if (draft === undefined || !owner || !pull)
          return reply(200, {
            data: null,
            errors: [{ type: 'NOT_FOUND', message: 'not supported by the stand-in, or no such pull request' }],
          });
        if (draft && !owner.options.draftPullRequests) {
          return reply(200, {
            data: { result: null },
            errors: [
              {
                type: 'UNPROCESSABLE',
                path: ['result'],
                message: 'Draft pull requests are not supported in this repository.',
              },
            ],
          });
        }
        pull.draft = draft;
        pull.updated_at = ctx.now();
        reply(200, { data: { result: { pullRequest: { isDraft: draft } } } });
      },
    ],
  ];
}
