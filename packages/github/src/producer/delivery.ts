import { createHash } from 'node:crypto';
import { CodefleetError, createJob, maxBodyChars, objectIdPattern, type Job } from '@codefleet/core';

/**
 * What a webhook delivery asks codefleet to do, read from its payload once, at receipt:
 * all the processor needs, small enough to keep as a record (a review's text is bounded).
 */
export type DeliveryIntent =
  /** `issues.labeled` with the trigger label. */
  | { kind: 'label'; repo: string; issueNumber: number; actor: string; label: string }
  /** `/codefleet retry` or `/codefleet cancel` as the first line of a new issue comment. */
  | {
      kind: 'command';
      repo: string;
      issueNumber: number;
      actor: string;
      command: 'retry' | 'cancel';
      commentId?: number;
    }
  /** `pull_request_review.submitted`. */
  | {
      kind: 'review';
      repo: string;
      pullNumber: number;
      actor: string;
      headRef: string;
      headRepo: string;
      reviewBody: string;
      reviewState: string;
      reviewId?: number;
    }
  /**
   * Checks finished on a commit of an `ai/` branch (`check_run`, `check_suite`, `status`):
   * `failed` asks for a CI follow-up, `passed` (a whole suite) may end the loop.
   */
  | {
      kind: 'ci';
      repo: string;
      actor: string;
      sha: string;
      branch: string;
      pullNumbers: number[];
      outcome: 'failed' | 'passed';
      check: string;
    };

/** A recorded delivery: GitHub's id for it, the event, and what it asks. */
export interface Delivery {
  /** `X-GitHub-Delivery` (a GUID), or a digest of the body when GitHub sent none. */
  id: string;
  /** `X-GitHub-Event`. */
  event: string;
  intent: DeliveryIntent;
}

/** What reading a payload found. */
export type Reading =
  { kind: 'act'; intent: DeliveryIntent } | { kind: 'ignore'; reason: string } | { kind: 'invalid'; reason: string };

interface Payload {
  action?: string;
  label?: { name?: string };
  issue?: { number?: number; pull_request?: unknown };
  comment?: { id?: number; body?: string; user?: { login?: string } };
  repository?: { full_name?: string };
  sender?: { login?: string };
  review?: { id?: number; body?: string | null; state?: string };
  pull_request?: { number?: number; head?: { ref?: string; repo?: { full_name?: string } | null } };
  check_run?: CheckPayload & { name?: string; check_suite?: { head_branch?: string | null } };
  check_suite?: CheckPayload & { head_branch?: string | null };
  sha?: string;
  state?: string;
  context?: string;
  branches?: { name?: string }[];
}

interface CheckPayload {
  head_sha?: string;
  conclusion?: string | null;
  pull_requests?: { number?: number }[];
}

/** Check conclusions and status states that fail a commit (cancelled, skipped and neutral do not). */
const failing = new Set(['failure', 'timed_out', 'action_required', 'startup_failure', 'error']);

/** How much review text a record keeps: the job body it ends up in has GitHub's limit too. */
const reviewTextLimit = 60_000;

/** Reads what a delivery of event `name` asks, without calling GitHub. */
export function readDelivery(name: string, raw: unknown, triggerLabel: string): Reading {
  const event = (typeof raw === 'object' && raw !== null ? raw : {}) as Payload;
  const repo = event.repository?.full_name;
  const actor = event.sender?.login;
  if (name === 'pull_request_review' && event.action === 'submitted') {
    const pr = event.pull_request;
    if (!repo || !actor || !pr?.number)
      return { kind: 'invalid', reason: 'pull_request_review without repository, pull request or sender' };
    return {
      kind: 'act',
      intent: {
        kind: 'review',
        repo,
        pullNumber: pr.number,
        actor,
        headRef: pr.head?.ref ?? '',
        headRepo: pr.head?.repo?.full_name ?? '',
        reviewBody: (event.review?.body ?? '').slice(0, reviewTextLimit),
        reviewState: event.review?.state ?? '',
        ...(typeof event.review?.id === 'number' ? { reviewId: event.review.id } : {}),
      },
    };
  }
  if (name === 'check_run' || name === 'check_suite' || name === 'status') return readCi(name, event);
  const labeled =
    name === 'issues' && event.action === 'labeled' && event.label?.name?.toLowerCase() === triggerLabel.toLowerCase();
  const command =
    name === 'issue_comment' && event.action === 'created' && !event.issue?.pull_request
      ? /^\s*\/codefleet\s+(retry|cancel)\b/i.exec(event.comment?.body ?? '')?.[1]?.toLowerCase()
      : undefined;
  if (!labeled && command === undefined)
    return { kind: 'ignore', reason: `${name}.${event.action ?? ''} is not a codefleet trigger` };
  const issueNumber = event.issue?.number;
  if (!repo || !issueNumber || !actor)
    return { kind: 'invalid', reason: `${name} event without repository, issue or sender` };
  if (labeled)
    return {
      kind: 'act',
      intent: { kind: 'label', repo, issueNumber, actor, label: event.label?.name ?? triggerLabel },
    };
  const commentId = event.comment?.id;
  return {
    kind: 'act',
    intent: {
      kind: 'command',
      repo,
      issueNumber,
      actor,
      command: command === 'cancel' ? 'cancel' : 'retry',
      ...(typeof commentId === 'number' ? { commentId } : {}),
    },
  };
}

/**
 * A check event: acted on only when it finished on a codefleet branch (`ai/…`) and failed,
 * or (a whole suite, or a status) passed. A check run that passed says nothing of the rest.
 */
function readCi(name: string, event: Payload): Reading {
  const repo = event.repository?.full_name;
  const actor = event.sender?.login;
  const check = name === 'check_run' ? event.check_run : name === 'check_suite' ? event.check_suite : undefined;
  if (check !== undefined && event.action !== 'completed')
    return { kind: 'ignore', reason: `${name}.${event.action ?? ''} is not a finished check` };
  const sha = check?.head_sha ?? event.sha;
  const result = check === undefined ? event.state : check.conclusion;
  const branches =
    name === 'status'
      ? (event.branches ?? []).map((b) => b.name ?? '')
      : [(name === 'check_run' ? event.check_run?.check_suite?.head_branch : event.check_suite?.head_branch) ?? ''];
  const branch = branches.find((b) => b.startsWith('ai/'));
  const outcome = failing.has(result ?? '')
    ? 'failed'
    : result === 'success' && name !== 'check_run'
      ? 'passed'
      : undefined;
  if (outcome === undefined) return { kind: 'ignore', reason: `${name} ${result ?? 'pending'} asks for nothing` };
  if (branch === undefined) return { kind: 'ignore', reason: `${name} is not on a codefleet branch (ai/...)` };
  if (!repo || !actor || !sha || !objectIdPattern.test(sha))
    return { kind: 'invalid', reason: `${name} without repository, sender or commit sha` };
  const pullNumbers = (check?.pull_requests ?? [])
    .map((p) => p.number)
    .filter((n): n is number => Number.isSafeInteger(n) && (n ?? 0) > 0)
    .slice(0, 10);
  const label =
    (name === 'check_run' ? event.check_run?.name : name === 'status' ? event.context : 'check suite') ?? name;
  return {
    kind: 'act',
    intent: { kind: 'ci', repo, actor, sha, branch, pullNumbers, outcome, check: label.slice(0, 200) },
  };
}

/**
 * The delivery id to record: GitHub's `X-GitHub-Delivery` when it looks like one; a digest
 * of the body when the header is absent (so a replay of the same body is still one
 * delivery); undefined when the header is there but malformed.
 */
export function deliveryIdOf(header: string | undefined, body: Buffer): string | undefined {
  if (header === undefined || header === '')
    return `body-${createHash('sha256').update(body).digest('hex').slice(0, 40)}`;
  return /^[A-Za-z0-9-]{1,100}$/.test(header) ? header : undefined;
}

/**
 * The id of the job a delivery makes: from the GitHub object it is about where there is
 * one (a comment, a review: the same object never makes two jobs, whichever delivery
 * carried it), else from the delivery.
 */
export function jobIdOf(delivery: Delivery): string {
  const { intent } = delivery;
  if (intent.kind === 'command' && intent.commentId !== undefined) return `gh-comment-${intent.commentId}`;
  if (intent.kind === 'review' && intent.reviewId !== undefined) return `gh-review-${intent.reviewId}`;
  return `gh-delivery-${delivery.id}`;
}

/**
 * A delivery as a queue record: the delivery id is the job id and the idempotency key, so
 * recording it twice is one record; the intent travels as JSON in the body.
 */
export function deliveryJob(delivery: Delivery, now: Date): Job {
  let { intent } = delivery;
  const body = () => JSON.stringify({ v: 1, id: delivery.id, event: delivery.event, intent });
  // JSON escapes can grow review text past the body limit: cut it until the record fits.
  while (body().length > maxBodyChars && intent.kind === 'review')
    intent = { ...intent, reviewBody: intent.reviewBody.slice(0, -2_000) };
  return createJob(
    {
      id: `delivery-${delivery.id}`,
      idempotency_key: `github-delivery:${delivery.id}`,
      repo: intent.repo,
      source: { kind: 'record', of: 'github-delivery' },
      title: `GitHub ${delivery.event} delivery ${delivery.id}`,
      body: body(),
      requested_by: intent.actor,
    },
    { id: delivery.id, now },
  );
}

/** Reads a record back; `invalid_job` (permanent) when it is not one this producer wrote. */
export function deliveryOf(job: Job): Delivery & { receivedAt: string } {
  let parsed: {
    v?: unknown;
    id?: unknown;
    event?: unknown;
    intent?: Partial<DeliveryIntent> & Record<string, unknown>;
  };
  try {
    parsed = JSON.parse(job.body) as typeof parsed;
  } catch {
    throw new CodefleetError('invalid_job', `record ${job.id} is not a GitHub delivery (its body is not JSON)`, {
      verdict: 'permanent',
    });
  }
  const intent = parsed.intent;
  const str = (v: unknown) => typeof v === 'string' && v !== '';
  const num = (v: unknown) => Number.isSafeInteger(v) && (v as number) > 0;
  const ok =
    parsed.v === 1 &&
    str(parsed.id) &&
    str(parsed.event) &&
    intent !== undefined &&
    str(intent.repo) &&
    str(intent.actor) &&
    ((intent.kind === 'label' && num(intent.issueNumber) && str(intent.label)) ||
      (intent.kind === 'command' &&
        num(intent.issueNumber) &&
        (intent.command === 'retry' || intent.command === 'cancel')) ||
      (intent.kind === 'review' &&
        num(intent.pullNumber) &&
        typeof intent.headRef === 'string' &&
        typeof intent.headRepo === 'string' &&
        typeof intent.reviewBody === 'string' &&
        typeof intent.reviewState === 'string') ||
      (intent.kind === 'ci' &&
        str(intent.sha) &&
        str(intent.branch) &&
        Array.isArray(intent.pullNumbers) &&
        intent.pullNumbers.every(num) &&
        (intent.outcome === 'failed' || intent.outcome === 'passed') &&
        typeof intent.check === 'string'));
  if (!ok)
    throw new CodefleetError('invalid_job', `record ${job.id} is not a GitHub delivery this producer understands`, {
      verdict: 'permanent',
    });
  return {
    id: parsed.id as string,
    event: parsed.event as string,
    intent: intent as DeliveryIntent,
    receivedAt: job.created_at,
  };
}
