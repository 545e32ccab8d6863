import type { Logger } from '@codefleet/log';
import type { RunRecord } from '@codefleet/core';
import type { RunStore } from '@codefleet/store';

/**
 * Holds the current version of a run record and writes every new version to the store.
 * A failed write is a warning, never a job failure (AR): the work matters more than its
 * audit trail, and the next successful write carries the whole record anyway.
 */
export class RunTracker {
  #run: RunRecord;
  readonly #store: RunStore;
  readonly #log: Logger;

  constructor(run: RunRecord, store: RunStore, log: Logger) {
    this.#run = run;
    this.#store = store;
    this.#log = log;
  }

  get run(): RunRecord {
    return this.#run;
  }

  /** Applies a pure update from core's run-update helpers and saves the result. */
  async update(change: (run: RunRecord) => RunRecord): Promise<RunRecord> {
    this.#run = change(this.#run);
    try {
      await this.#store.save(this.#run);
    } catch (err) {
      this.#log.warn({ err, event: 'run.save_failed', run_id: this.#run.run_id }, 'could not save the run record');
    }
    return this.#run;
  }
}
