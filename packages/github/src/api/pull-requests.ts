import type { Octokit } from '@octokit/rest';
import { limits, type EnsurePullRequestRequest, type PullRequest } from '@codefleet/forge';
import { githubFailure } from './errors.js';

/** A pull request as the REST API returns it, as far as the adapter reads it. */
export interface ApiPull {
  number: number;
  node_id: string;
  html_url: string;
  title: string;
  body?: string | null;
  head: { ref: string; sha?: string };
  base: { ref: string };
  state: string;
  draft?: boolean;
  merged_at?: string | null;
  closed_at?: string | null;
  labels?: { name?: string }[];
  created_at: string;
  updated_at: string;
}

/**
 * How a pull request that should be a draft is marked where GitHub refuses drafts
 * (private repositories on the Free plan): this label, this title prefix and a comment.
 * Such a pull request reads as a draft through this adapter (`draft: true`), so callers
 * see one meaning of "draft" on every repository.
 */
const draftStandIn = { label: 'codefleet:draft', titlePrefix: '[Draft] ', marker: 'draft-refused' } as const;

/** What the pull request code needs from the adapter. */
export interface PullContext {
  octokit: Octokit;
  owner: string;
  repo: string;
  call<T>(operation: string, fn: () => Promise<T>): Promise<T>;
  /** The adapter's own `ensureLabels` and `ensureComment`, on the pull request. */
  labels(number: number, change: { add?: string[]; remove?: string[] }): Promise<void>;
  comment(number: number, marker: string, body: string): Promise<void>;
  /** Whether the comment with `marker` exists on the pull request. */
  hasComment(number: number, marker: string): Promise<boolean>;
}

const markedComment = [
  '⚠️ **This pull request stands for a draft: do not merge it as it is.**',
  '',
  'codefleet asked for a draft pull request because the definition of done failed, but GitHub does not allow drafts in this',
  `repository (private repositories on GitHub Free). It is marked instead: the \`${draftStandIn.label}\` label and the`,
  `\`${draftStandIn.titlePrefix.trim()}\` title prefix. codefleet removes both once a later run passes the definition of done.`,
].join('\n');
const unmarkedComment = '✅ The definition of done passes now: this pull request no longer stands for a draft.';

/** True for GitHub's refusal of a draft (REST 422 on create, a GraphQL error on convert). */
function draftRefused(error: unknown): boolean {
  const e = error as { status?: number; errors?: unknown; response?: { data?: unknown } };
  const text = JSON.stringify(e.response?.data ?? e.errors ?? '') + String((error as Error | undefined)?.message ?? '');
  return /draft pull requests are not supported/i.test(text);
}

const isMarked = (p: ApiPull) => (p.labels ?? []).some((l) => l.name?.toLowerCase() === draftStandIn.label);
const titled = (title: string, marked: boolean) =>
  marked ? `${draftStandIn.titlePrefix}${title}`.slice(0, limits.title) : title;

/** The port's view of a REST pull request; a marked one reads as a draft. */
export function toPullRequest(p: ApiPull, marked = isMarked(p)): PullRequest {
  return {
    number: p.number,
    url: p.html_url,
    title: p.title,
    body: p.body ?? '',
    head: p.head.ref,
    base: p.base.ref,
    state: p.merged_at ? 'merged' : p.state === 'open' ? 'open' : 'closed',
    draft: (p.draft ?? false) || marked,
    ...(p.head.sha === undefined ? {} : { headSha: p.head.sha }),
    createdAt: p.created_at,
    updatedAt: p.updated_at,
    ...(p.closed_at ? { closedAt: p.closed_at } : {}),
  };
}

/**
 * Creates the pull request as asked; where GitHub refuses a draft, creates a regular one
 * marked as {@link draftStandIn} so a failed definition of done still gets its pull
 * request, clearly not ready. Throws what `create` threw otherwise (the caller handles
 * "already exists").
 */
export async function createPull(ctx: PullContext, req: EnsurePullRequestRequest): Promise<PullRequest> {
  const { octokit, owner, repo } = ctx;
  const create = (draft: boolean, title: string) =>
    octokit.rest.pulls.create({ owner, repo, head: req.head, base: req.base, title, body: req.body, draft });
  try {
    return toPullRequest((await create(req.draft, req.title)).data as ApiPull);
  } catch (error) {
    if (!req.draft || !draftRefused(error)) throw error;
  }
  const { data } = await create(false, titled(req.title, true));
  await mark(ctx, data.number);
  return toPullRequest(data as ApiPull, true);
}

/**
 * Brings an open pull request to `req`: title, body and base through REST, the draft flag
 * through GraphQL (the only way GitHub offers). Where the conversion to draft is refused
 * the pull request is marked instead; a marked one that need not be a draft any more is
 * unmarked.
 */
export async function updatePull(ctx: PullContext, pull: ApiPull, req: EnsurePullRequestRequest): Promise<PullRequest> {
  const { octokit, owner, repo } = ctx;
  const wasMarked = isMarked(pull);
  let marked = wasMarked && req.draft;
  let current = pull;
  if (!marked && (pull.draft ?? false) !== req.draft) {
    const mutation = req.draft
      ? 'mutation($id: ID!) { result: convertPullRequestToDraft(input: { pullRequestId: $id }) { pullRequest { isDraft } } }'
      : 'mutation($id: ID!) { result: markPullRequestReadyForReview(input: { pullRequestId: $id }) { pullRequest { isDraft } } }';
    try {
      await octokit.graphql(mutation, { id: pull.node_id });
      current = (
        await ctx.call('get pull request', () => octokit.rest.pulls.get({ owner, repo, pull_number: pull.number }))
      ).data as ApiPull;
    } catch (error) {
      if (!req.draft || !draftRefused(error)) throw githubFailure('change draft state', error);
      marked = true;
    }
  }
  const title = titled(req.title, marked);
  if (current.title !== title || (current.body ?? '') !== req.body || current.base.ref !== req.base) {
    const { data } = await ctx.call('update pull request', () =>
      octokit.rest.pulls.update({ owner, repo, pull_number: pull.number, title, body: req.body, base: req.base }),
    );
    current = data as ApiPull;
  }
  if (marked) await mark(ctx, pull.number);
  else if (wasMarked) {
    await ctx.labels(pull.number, { remove: [draftStandIn.label] });
    if (await ctx.hasComment(pull.number, draftStandIn.marker))
      await ctx.comment(pull.number, draftStandIn.marker, unmarkedComment);
  }
  return toPullRequest(current, marked);
}

async function mark(ctx: PullContext, number: number): Promise<void> {
  await ctx.labels(number, { add: [draftStandIn.label] });
  await ctx.comment(number, draftStandIn.marker, markedComment);
}

/** True for GitHub's 422 saying a pull request for the head already exists. */
export function alreadyExists(error: unknown): boolean {
  const status = (error as { status?: number }).status;
  return (
    status === 422 &&
    /already exists/i.test(JSON.stringify((error as { response?: { data?: unknown } }).response?.data ?? ''))
  );
}
