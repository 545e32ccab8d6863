import { setTimeout as sleep } from 'node:timers/promises';
import { CodefleetError } from '@codefleet/core';
import type { Logger } from '@codefleet/log';
import { paceEmptyClaim, type Lease, type Queue } from '@codefleet/queue';
import type { WorkerEvents } from './monitor.js';

/** The longest pause between two claims when the queue keeps failing them. */
const maxClaimBackoffMs = 30_000;

/** How the worker claims; the fields of WorkerOptions of the same names. */
export interface ClaimOptions {
  workerId: string;
  once?: boolean | undefined;
  shutdown: AbortSignal;
  log: Logger;
  claimWaitMs?: number | undefined;
  slowClaimMs?: number | undefined;
  giveUpAfterMs?: number | undefined;
  events?: WorkerEvents | undefined;
}

/**
 * What one claim came to: a job, `again` (nothing claimed, or the claim failed and was
 * backed off: look again), or `drained` (`once` and no job is left, delayed retries included).
 */
type Claimed = Lease | 'again' | 'drained';

/** The worker's claims, shared by its slots. */
export interface Claimer {
  /** Aborts when claims stop: on shutdown, or when the queue has not answered for `giveUpAfterMs`. */
  readonly signal: AbortSignal;
  /** One claim for `slot`. */
  claim(slot: number): Promise<Claimed>;
  /** Why the worker gave up on the queue (a `queue_unavailable` error), unless it did not. */
  gaveUp(): unknown;
}

/** What the claims of every slot share: the give-up switch and the queue's silence so far. */
interface ClaimState {
  readonly queue: Queue;
  readonly options: ClaimOptions;
  readonly giveUp: AbortController;
  /** Aborts when claims stop: on shutdown or on giving up. */
  readonly signal: AbortSignal;
  readonly waitMs: number;
  readonly slowClaimMs: number;
  /** Since when claims (of any slot) have failed or hung with no answer in between. */
  unreachableSince: number | undefined;
  /** Failed claims in a row, per slot: each slot backs off on its own. */
  readonly failures: number[];
}

/**
 * Claims for every slot of a worker. A failed claim is retried with a backoff doubling from
 * 1 s to {@link maxClaimBackoffMs} rather than ending the worker; a claim that hangs (Redis
 * down or paused: its connection waits rather than fails) is logged as
 * `queue.not_answering` while it lasts. With `giveUpAfterMs`, claims that failed or hung
 * that long with no answer in between stop claiming (see {@link Claimer.gaveUp}).
 */
export function startClaiming(queue: Queue, options: ClaimOptions): Claimer {
  const giveUp = new AbortController();
  const state: ClaimState = {
    queue,
    options,
    giveUp,
    signal: AbortSignal.any([options.shutdown, giveUp.signal]),
    waitMs: options.once ? 0 : (options.claimWaitMs ?? 1_000),
    slowClaimMs: options.slowClaimMs ?? 30_000,
    unreachableSince: undefined,
    failures: [],
  };
  return {
    signal: state.signal,
    claim: (slot) => claim(state, slot),
    gaveUp: () => (giveUp.signal.aborted && !options.shutdown.aborted ? giveUp.signal.reason : undefined),
  };
}

/** One claim for `slot`: a job, or what to do next. */
async function claim(state: ClaimState, slot: number): Promise<Claimed> {
  const { options, signal } = state;
  const started = Date.now();
  const unwatch = watch(state, slot, started);
  let lease: Lease | undefined;
  try {
    lease = await state.queue.claim({ workerId: options.workerId, waitMs: state.waitMs, signal });
    options.events?.claimSucceeded();
    state.unreachableSince = undefined;
    state.failures[slot] = 0;
  } catch (err) {
    options.events?.claimFailed(err);
    if (!signal.aborted) await backOff(state, err, slot, started);
    return 'again';
  } finally {
    unwatch();
  }
  if (lease) return lease;
  if (await drained(state)) return 'drained';
  await paceEmptyClaim(started, state.waitMs, state.signal);
  return 'again';
}

/** The timers around one claim: the silent-queue warning and the give-up deadline. */
function watch(state: ClaimState, slot: number, started: number): () => void {
  const { options, waitMs, slowClaimMs } = state;
  const silent = setInterval(() => {
    options.log.warn(
      { event: 'queue.not_answering', slot, waited_ms: waitMs + slowClaimMs },
      `the queue has not answered a claim for ${Math.round((waitMs + slowClaimMs) / 1000)} s (unreachable?); still waiting`,
    );
  }, waitMs + slowClaimMs);
  const since = state.unreachableSince ?? started;
  const limit =
    options.giveUpAfterMs === undefined
      ? undefined
      : setTimeout(
          () => {
            const seconds = Math.round((Date.now() - (state.unreachableSince ?? started)) / 1000);
            state.giveUp.abort(
              new CodefleetError(
                'queue_unavailable',
                `the queue did not answer for ${seconds} s: gave up (is it running and reachable?)`,
              ),
            );
          },
          Math.max(0, options.giveUpAfterMs - (started - since)),
        );
  return () => {
    clearInterval(silent);
    clearTimeout(limit);
  };
}

/** After a failed claim: logs it and waits out the backoff (cut short when claims stop). */
async function backOff(state: ClaimState, err: unknown, slot: number, started: number): Promise<void> {
  const unreachableSince = (state.unreachableSince ??= started);
  const failed = (state.failures[slot] ?? 0) + 1;
  state.failures[slot] = failed;
  const pauseMs = Math.min(maxClaimBackoffMs, 1_000 * 2 ** Math.min(failed - 1, 10));
  const failingS = Math.round((Date.now() - unreachableSince) / 1000);
  state.options.log.error(
    { err, event: 'queue.claim_failed', slot, failures: failed, failing_s: failingS, retry_in_ms: pauseMs },
    `claim failed (queue unreachable for ${failingS} s); retrying in ${pauseMs / 1000} s`,
  );
  await sleep(pauseMs, undefined, { signal: state.signal }).catch(() => undefined);
}

/** `once` ends when nothing is left, delayed retries included; a failing stats call ends it too. */
async function drained(state: ClaimState): Promise<boolean> {
  if (!state.options.once) return false;
  if (
    await state.queue.stats().then(
      (s) => s.depth === 0,
      () => true,
    )
  )
    return true;
  await sleep(100, undefined, { signal: state.signal }).catch(() => undefined);
  return false;
}
