import type { Forge, PullRequestState } from './port.js';

/** A pull request to ask about. */
export interface PullRequestKey {
  repo: string;
  number: number;
}

/** What was learned of one pull request: its state, or why it is not known. */
export type PullRequestStateAnswer = { state: PullRequestState } | { state?: undefined; why: string };

/** Bounds of {@link createPullRequestStates}. */
export interface PullRequestStatesOptions {
  /** Per request; past it the answer is "unknown (timed out)". Default 5 s. */
  timeoutMs?: number;
  /** Requests in flight at once. Default 4. */
  concurrency?: number;
  /** How long an answer (a state or a failure) is reused. Default 30 s. */
  ttlMs?: number;
  /** At most this many pull requests asked per call; the rest answer "not asked". Default 100. */
  maxPerCall?: number;
  /** Clock, for tests; default `Date.now`. */
  now?: () => number;
}

/** Reads pull request states for status pages: bounded, cached, never throws. */
export interface PullRequestStates {
  /**
   * The state of each pull request, keyed `repo#number`. Never rejects: a forge outage, a
   * missing token or a timeout answers `{ why }` for the ones it touched, so a runs list
   * shows `open?` rather than failing.
   */
  statesOf(keys: readonly PullRequestKey[]): Promise<Map<string, PullRequestStateAnswer>>;
}

/** The key {@link PullRequestStates.statesOf} answers under. */
export const pullRequestKey = (key: PullRequestKey): string => `${key.repo}#${key.number}`;

/**
 * Asks `forge.pullRequestState` for many pull requests at once (the runs list, the
 * dashboard): at most `concurrency` requests at a time, each bounded by `timeoutMs`,
 * answers reused for `ttlMs` (a page refreshed every few seconds asks GitHub once). Once a
 * request fails for a reason every request would share (unauthorized, unreachable), the
 * rest of that call are not sent: one outage costs one timeout, not one per run.
 */
export function createPullRequestStates(
  forge: Pick<Forge, 'pullRequestState'>,
  options: PullRequestStatesOptions = {},
): PullRequestStates {
  const timeoutMs = options.timeoutMs ?? 5_000;
  const concurrency = Math.max(1, options.concurrency ?? 4);
  const ttlMs = options.ttlMs ?? 30_000;
  const maxPerCall = options.maxPerCall ?? 100;
  const now = options.now ?? Date.now;
  const cache = new Map<string, { at: number; answer: PullRequestStateAnswer }>();

  const askOne = async (key: PullRequestKey): Promise<PullRequestStateAnswer> => {
    try {
      return { state: await forge.pullRequestState(key.repo, key.number, AbortSignal.timeout(timeoutMs)) };
    } catch (error) {
      return { why: reasonOf(error, timeoutMs) };
    }
  };

  return {
    async statesOf(keys) {
      const out = new Map<string, PullRequestStateAnswer>();
      const wanted: PullRequestKey[] = [];
      for (const key of keys) {
        const id = pullRequestKey(key);
        if (out.has(id) || wanted.some((w) => pullRequestKey(w) === id)) continue;
        const hit = cache.get(id);
        if (hit !== undefined && now() - hit.at < ttlMs) out.set(id, hit.answer);
        else if (wanted.length < maxPerCall) wanted.push(key);
        else out.set(id, { why: 'not asked (too many at once)' });
      }
      let shared: string | undefined;
      let next = 0;
      const worker = async () => {
        while (next < wanted.length) {
          const key = wanted[next++]!;
          const answer: PullRequestStateAnswer = shared === undefined ? await askOne(key) : { why: shared };
          if (answer.state === undefined && shared === undefined && isShared(answer.why)) shared = answer.why;
          out.set(pullRequestKey(key), answer);
          cache.set(pullRequestKey(key), { at: now(), answer });
        }
      };
      await Promise.all(Array.from({ length: Math.min(concurrency, wanted.length) }, worker));
      return out;
    },
  };
}

// A failure that says nothing of this pull request but of the forge as a whole.
const isShared = (why: string) => !why.startsWith('not found');

function reasonOf(error: unknown, timeoutMs: number): string {
  const code = (error as { code?: unknown }).code;
  const message = error instanceof Error ? error.message : String(error);
  if (code === 'cancelled' || (error as { name?: unknown }).name === 'TimeoutError')
    return `forge did not answer within ${timeoutMs >= 1_000 ? `${Math.round(timeoutMs / 1_000)} s` : `${timeoutMs} ms`}`;
  if (code === 'forge_not_found') return 'not found on the forge';
  const first = message.split('\n')[0] ?? '';
  return `${typeof code === 'string' ? `${code}: ` : ''}${first}`.slice(0, 200);
}
