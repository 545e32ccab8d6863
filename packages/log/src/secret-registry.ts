/**
 * Where masking gets its secret values: a fixed list (the config's collected secrets) or a
 * {@link SecretRegistry} that grows while the process runs.
 */
export type SecretSource = readonly string[] | SecretRegistry;

/** Options of {@link SecretRegistry}. */
export interface SecretRegistryOptions {
  /**
   * How many values added at run time are kept, newest first; older ones are dropped (the
   * initial values never are). Installation tokens live an hour and are replaced every
   * half hour or so, so the default keeps well over a day of them while bounding the size
   * of the masking pattern in a worker that runs for months. Default: 64.
   */
  maxAdded?: number;
}

// Shorter values are ignored: masking `true` or `1234` would garble every line (as config does).
const minLength = 6;

/**
 * The secret values of one process: those known at start (environment secrets) plus those
 * obtained at run time, such as the GitHub App installation tokens minted every hour. Create
 * one where the config is loaded, hand it to whatever mints credentials (`add`) and to
 * whatever masks (`createLogger`, `maskSecrets`, run records): a value added later is masked
 * from then on everywhere, without rebuilding the logger.
 */
export class SecretRegistry {
  readonly #initial: readonly string[];
  readonly #added: string[] = [];
  readonly #maxAdded: number;
  #snapshot: readonly string[];

  constructor(initial: Iterable<string> = [], options: SecretRegistryOptions = {}) {
    this.#initial = [...new Set([...initial].filter((value) => value.length >= minLength))];
    this.#maxAdded = options.maxAdded ?? 64;
    this.#snapshot = Object.freeze([...this.#initial]);
  }

  /** Masks `value` (and its trimmed form) from now on; short and known values are ignored. */
  add(value: string): void {
    let changed = false;
    for (const form of new Set([value, value.trim()])) {
      if (form.length < minLength || this.#initial.includes(form) || this.#added.includes(form)) continue;
      this.#added.push(form);
      changed = true;
    }
    if (!changed) return;
    this.#added.splice(0, Math.max(0, this.#added.length - this.#maxAdded));
    this.#snapshot = Object.freeze([...this.#initial, ...this.#added]);
  }

  /**
   * Every value to mask now. The same array is returned until the next change, so a masker
   * compiled for it (see `maskSecrets`) is reused line after line.
   */
  values(): readonly string[] {
    return this.#snapshot;
  }
}

/** The values of `source` as of now; an empty list for none. */
export function secretValues(source: SecretSource | undefined): readonly string[] {
  if (source === undefined) return [];
  // By shape rather than instanceof: another copy of this package may have made the registry.
  return Array.isArray(source) ? source : (source as SecretRegistry).values();
}
