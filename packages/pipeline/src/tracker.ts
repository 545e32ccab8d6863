import { maskSecrets, type Logger, type SecretSource } from '@codefleet/log';
import type { RunRecord } from '@codefleet/core';
import type { RunStore } from '@codefleet/store';

/** Every string in `value` (a JSON-shaped record) with secrets masked. */
function maskStrings<T>(value: T, secrets: SecretSource | undefined): T {
  if (typeof value === 'string') return maskSecrets(value, secrets) as T;
  if (Array.isArray(value)) return value.map((item: unknown) => maskStrings(item, secrets)) as T;
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, maskStrings(item, secrets)])) as T;
  }
  return value;
}

/**
 * Holds the current version of a run record and writes every new version to the store.
 * A failed write is a warning, never a job failure (AR): the work matters more than its
 * audit trail, and the next successful write carries the whole record anyway. Secrets
 * are masked in every version (an agent may print its API key), so neither the store nor
 * the PR body rendered from {@link run} ever holds one.
 */
export class RunTracker {
  #run: RunRecord;
  readonly #store: RunStore;
  readonly #log: Logger;

  readonly #secrets: SecretSource | undefined;

  constructor(run: RunRecord, store: RunStore, log: Logger, secrets?: SecretSource) {
    this.#secrets = secrets;
    this.#run = maskStrings(run, secrets);
    this.#store = store;
    this.#log = log;
  }

  get run(): RunRecord {
    return this.#run;
  }

  /** Applies a pure update from core's run-update helpers and saves the result. */
  async update(change: (run: RunRecord) => RunRecord): Promise<RunRecord> {
    this.#run = maskStrings(change(this.#run), this.#secrets);
    try {
      await this.#store.save(this.#run);
    } catch (err) {
      this.#log.warn({ err, event: 'run.save_failed', run_id: this.#run.run_id }, 'could not save the run record');
    }
    return this.#run;
  }
}
