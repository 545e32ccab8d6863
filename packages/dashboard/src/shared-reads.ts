/**
 * One read per key and interval, shared by every caller within it: each open tab of the
 * overview (or of one run's page) polls on its own timer, and without this each would read
 * the store every interval, so eight tabs cost eight times the reads of one and slowed the
 * jobs of the worker serving them. A read that fails is forgotten at once, so the next caller
 * tries again rather than sharing the failure for a whole interval.
 */
export class SharedReads {
  readonly #ttlMs: number;
  readonly #entries = new Map<string, { at: number; value: Promise<unknown> }>();
  readonly #now: () => number;

  constructor(ttlMs: number, now: () => number = Date.now) {
    this.#ttlMs = ttlMs;
    this.#now = now;
  }

  /** `load()`'s promise, started now unless one for `key` started less than the interval ago. */
  read<T>(key: string, load: () => Promise<T>): Promise<T> {
    const now = this.#now();
    const hit = this.#entries.get(key);
    if (hit !== undefined && now - hit.at < this.#ttlMs) return hit.value as Promise<T>;
    this.#forgetOld(now);
    const value = load();
    this.#entries.set(key, { at: now, value });
    value.catch(() => {
      if (this.#entries.get(key)?.value === value) this.#entries.delete(key);
    });
    return value;
  }

  // A run page closed long ago leaves its entry behind; drop the stale ones as reads come.
  #forgetOld(now: number): void {
    for (const [key, entry] of this.#entries) if (now - entry.at >= this.#ttlMs) this.#entries.delete(key);
  }
}
