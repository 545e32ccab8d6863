import { setTimeout as sleep } from 'node:timers/promises';
import { formatUsd } from '@codefleet/core';
import type { Logger } from '@codefleet/log';
import { utcDay, type SpendLedger } from '@codefleet/store';

/** The fleet's daily money budget as the worker enforces it (config `costs.budget_usd.day`). */
export interface DayBudget {
  /** Where every worker adds each agent run's cost (the run store). */
  ledger: Pick<SpendLedger, 'spentOn'>;
  /** Most the fleet may spend in one UTC day, in US dollars. */
  limitUsd: number;
  /** How often a paused worker looks again (default 60 s); it also looks right after UTC midnight. */
  recheckMs?: number;
  now?: () => Date;
}

/** Whether claiming is paused, and what the day has spent, after the last look. */
export interface DayBudgetState {
  paused: boolean;
  day: string;
  spentUsd: number;
  limitUsd: number;
}

/**
 * The claim gate of a worker with a daily budget: when the fleet's spend of the UTC day
 * has reached the limit, nothing is claimed (jobs wait in the queue, nothing is lost; the
 * running ones got at most the remainder from the pipeline) until the next UTC day. It says
 * so once per pause, and once when it resumes. A ledger that cannot be read does not stop
 * the fleet: the gate stays as it was and says why.
 */
export class DayBudgetGate {
  readonly #budget: DayBudget;
  readonly #log: Logger;
  readonly #onChange: ((state: DayBudgetState) => void) | undefined;
  #state: DayBudgetState;

  constructor(budget: DayBudget, log: Logger, onChange?: (state: DayBudgetState) => void) {
    this.#budget = budget;
    this.#log = log;
    this.#onChange = onChange;
    this.#state = { paused: false, day: utcDay(this.#now()), spentUsd: 0, limitUsd: budget.limitUsd };
  }

  get state(): DayBudgetState {
    return this.#state;
  }

  #now(): Date {
    return (this.#budget.now ?? (() => new Date()))();
  }

  /** Looks at the ledger once; resolves whether a claim may go ahead. */
  async check(): Promise<boolean> {
    const day = utcDay(this.#now());
    let spentUsd: number;
    try {
      spentUsd = await this.#budget.ledger.spentOn(day);
    } catch (err) {
      this.#log.warn({ err, event: 'budget.day_unreadable' }, "could not read the day's spend; claiming as before");
      return !this.#state.paused;
    }
    const { limitUsd } = this.#budget;
    const paused = spentUsd >= limitUsd;
    const was = this.#state.paused;
    this.#state = { paused, day, spentUsd, limitUsd };
    if (paused && !was) {
      this.#log.warn(
        { event: 'budget.day_paused', day, spent_usd: spentUsd, limit_usd: limitUsd },
        `the fleet spent ${formatUsd(spentUsd)} of its ${formatUsd(limitUsd)} daily budget (costs.budget_usd.day): claiming paused until the next UTC day; queued jobs wait`,
      );
    } else if (!paused && was) {
      this.#log.info(
        { event: 'budget.day_resumed', day, spent_usd: spentUsd, limit_usd: limitUsd },
        `claiming resumed: ${formatUsd(spentUsd)} of the ${formatUsd(limitUsd)} daily budget spent on ${day}`,
      );
    }
    if (paused !== was) this.#onChange?.(this.#state);
    return !paused;
  }

  /**
   * Before a claim: whether it may go ahead. With `wait`, waits for the gate to open (see
   * {@link waitOpen}); without (`worker --once`), looks once, so a paused day ends the run.
   */
  async admit(signal: AbortSignal, wait: boolean): Promise<boolean> {
    return wait ? this.waitOpen(signal) : this.check();
  }

  /** Resolves once a claim may go ahead, or when `signal` aborts (then false). */
  async waitOpen(signal: AbortSignal): Promise<boolean> {
    while (!signal.aborted) {
      if (await this.check()) return true;
      const now = this.#now();
      const midnight = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1);
      // Right after midnight rather than up to a recheck late.
      const untilTomorrow = Math.max(1_000, midnight - now.getTime() + 1_000);
      await sleep(Math.min(this.#budget.recheckMs ?? 60_000, untilTomorrow), undefined, { signal }).catch(
        () => undefined,
      );
    }
    return false;
  }
}
