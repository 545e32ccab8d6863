/**
 * The statistics of an eval report, as pure functions: how often a configuration resolves an
 * instance (pass@k, pass^k, a Wilson interval), how long runs take (percentiles), and whether
 * one configuration beats another on the same instances (a paired bootstrap).
 *
 * pass@k and pass^k are estimated from n ≥ k trials per instance rather than by running exactly
 * k: with n trials the estimate averages over every k-subset, so it has far less variance, and
 * one set of trials serves every k. Both are computed as products of ratios, never as binomial
 * coefficients, which overflow a double once n passes about 1000 and lose precision well before.
 */

/** One trial's outcome: `1` or `true` when the instance was resolved, `0` or `false` when not. */
export type Outcome = 0 | 1 | boolean;

/** One configuration's results: each instance id's trial outcomes, in any order. */
export type TrialsByInstance = ReadonlyMap<string, readonly Outcome[]>;

/** A closed interval `[low, high]` of a rate or of a difference of rates. */
export interface Interval {
  low: number;
  high: number;
}

/**
 * pass@k: the chance that at least one of k trials drawn without replacement from n, of which
 * c succeeded, succeeds: 1 − C(n−c, k) / C(n, k), the unbiased estimator of the Codex paper
 * (Chen et al., 2021, "Evaluating Large Language Models Trained on Code"). Exactly 1 when
 * fewer than k trials failed, since every k-subset then holds a success.
 * @throws RangeError unless n, c, k are integers with 0 ≤ c ≤ n and 1 ≤ k ≤ n.
 */
export function passAtK(n: number, c: number, k: number): number {
  checkCounts(n, c, k);
  if (n - c < k) return 1;
  // C(n−c, k) / C(n, k) = ∏_{i=n−c+1..n} (1 − k/i): c factors, each in (0, 1].
  let allFail = 1;
  for (let i = n - c + 1; i <= n; i++) allFail *= 1 - k / i;
  return 1 - allFail;
}

/**
 * pass^k: the chance that all k trials drawn without replacement from n, of which c succeeded,
 * succeed: C(c, k) / C(n, k). It measures reliability, where pass@k measures reach: an agent
 * that resolves an instance one time in two has pass@8 near 1 and pass^8 near 0.
 * @throws RangeError unless n, c, k are integers with 0 ≤ c ≤ n and 1 ≤ k ≤ n.
 */
export function passHatK(n: number, c: number, k: number): number {
  checkCounts(n, c, k);
  // C(c, k) / C(n, k) = ∏_{i=0..k−1} (c − i) / (n − i); with fewer than k successes the factor at
  // i = c is 0, so the product is exactly 0.
  let allSucceed = 1;
  for (let i = 0; i < k; i++) allSucceed *= (c - i) / (n - i);
  return allSucceed;
}

function checkCounts(n: number, c: number, k: number): void {
  for (const [name, value] of [
    ['n', n],
    ['c', c],
    ['k', k],
  ] as const) {
    if (!Number.isSafeInteger(value) || value < 0) {
      throw new RangeError(`${name} must be a non-negative integer, got ${value}`);
    }
  }
  if (k < 1) throw new RangeError(`k must be at least 1, got ${k}`);
  if (c > n) throw new RangeError(`c (${c} successes) cannot exceed n (${n} trials)`);
  if (k > n) throw new RangeError(`k (${k}) cannot exceed n (${n} trials): an estimate at k needs k trials`);
}

/**
 * The Wilson score interval of a rate of `successes` in `total`, at the normal quantile `z`
 * (1.96 for 95%). Unlike the normal approximation p ± z·√(p(1−p)/n), it stays inside [0, 1]
 * and does not collapse to a point at 0 or n successes, which eval's small samples hit often.
 * No trials tell nothing: `[0, 1]`.
 * @throws RangeError unless 0 ≤ successes ≤ total are integers and z is positive.
 */
export function wilsonInterval(successes: number, total: number, z = 1.96): Interval {
  if (!Number.isSafeInteger(total) || total < 0) {
    throw new RangeError(`total must be a non-negative integer, got ${total}`);
  }
  if (!Number.isSafeInteger(successes) || successes < 0 || successes > total) {
    throw new RangeError(`successes must be an integer from 0 to total (${total}), got ${successes}`);
  }
  if (!Number.isFinite(z) || z <= 0) throw new RangeError(`z must be a positive number, got ${z}`);
  if (total === 0) return { low: 0, high: 1 };
  const p = successes / total;
  const spread = (z * z) / total;
  const center = (p + spread / 2) / (1 + spread);
  const half = (z / (1 + spread)) * Math.sqrt((p * (1 - p)) / total + spread / (4 * total));
  // The bounds are exact at 0 and at total; rounding would otherwise leave 1e-17 past them.
  return {
    low: successes === 0 ? 0 : Math.max(0, center - half),
    high: successes === total ? 1 : Math.min(1, center + half),
  };
}

/**
 * The `p`-th percentile (0–100) of `values` by nearest rank: the smallest value with at least
 * p% of the values at or below it; undefined when there are none. Nearest rank rather than
 * interpolation, so that a p95 wall time is a time some run really took: with the few dozen
 * instances of an eval, interpolating would report a time between two runs that none took.
 * @throws RangeError when p is outside [0, 100].
 */
export function percentile(values: readonly number[], p: number): number | undefined {
  return nearestRank(Float64Array.from(values).sort(), p);
}

function nearestRank(sorted: Float64Array, p: number): number | undefined {
  if (!(p >= 0 && p <= 100)) throw new RangeError(`p must be a percentile from 0 to 100, got ${p}`);
  if (sorted.length === 0) return undefined;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

/** pass@k and pass^k of one configuration at one k, averaged over the instances that allow it. */
export interface AtK {
  k: number;
  /** Mean pass@k over the instances with at least k trials; undefined when none has. */
  passAtK: number | undefined;
  /** Mean pass^k over the same instances. */
  passHatK: number | undefined;
  /** Instances averaged: those with at least k trials. */
  instances: number;
  /** Instances left out because they have fewer than k trials. */
  excluded: number;
}

/** What one configuration resolved over its trials. */
export interface TrialSummary {
  /** Instance ids in the results, with or without trials. */
  instances: number;
  /** Trials over all instances. */
  trials: number;
  /** pass@1: the mean over instances with a trial of each one's share of resolved trials. */
  resolvedRate: number | undefined;
  /** One entry per requested k, in the order asked. */
  byK: AtK[];
}

/**
 * Summarizes one configuration's trials: its resolved rate (pass@1) and pass@k / pass^k for
 * each of `ks`. Each instance weighs the same whatever its number of trials, so an instance
 * that happened to run more often does not count more.
 */
export function summarizeTrials(trials: TrialsByInstance, ks: readonly number[] = [1]): TrialSummary {
  const counts = [...trials].map(([id, outcomes]) => ({ n: outcomes.length, c: resolvedCount(id, outcomes) }));
  const byK = ks.map((k): AtK => {
    if (!Number.isSafeInteger(k) || k < 1) throw new RangeError(`each k must be an integer of at least 1, got ${k}`);
    const eligible = counts.filter(({ n }) => n >= k);
    return {
      k,
      passAtK: mean(eligible.map(({ n, c }) => passAtK(n, c, k))),
      passHatK: mean(eligible.map(({ n, c }) => passHatK(n, c, k))),
      instances: eligible.length,
      excluded: counts.length - eligible.length,
    };
  });
  return {
    instances: counts.length,
    trials: counts.reduce((sum, { n }) => sum + n, 0),
    resolvedRate: mean(counts.filter(({ n }) => n > 0).map(({ n, c }) => c / n)),
    byK,
  };
}

function resolvedCount(id: string, outcomes: readonly Outcome[]): number {
  let resolved = 0;
  for (const outcome of outcomes) {
    if (outcome === 1 || outcome === true) resolved++;
    // Results come from JSON files; a 2 or a "1" there is a bug upstream, not a failure.
    else if (outcome !== 0 && outcome !== false) {
      throw new RangeError(`instance ${id}: a trial outcome must be 0, 1, true or false, got ${String(outcome)}`);
    }
  }
  return resolved;
}

function mean(values: readonly number[]): number | undefined {
  if (values.length === 0) return undefined;
  return values.reduce((sum, value) => sum + value, 0) / values.length;
}

/** How {@link pairedComparison} resamples and when it names a winner. */
export interface PairedOptions {
  /** Bootstrap resamples; default 10 000. */
  resamples?: number;
  /** Seed of the resampling generator: the same results and seed give the same interval. Default 1. */
  seed?: number;
  /** Confidence of the interval, in (0, 1); default 0.95. */
  confidence?: number;
  /** Fewest paired instances at which a winner may be named; default 20. */
  minInstances?: number;
}

/** Two configurations compared on the instances both ran; "a" is the first argument. */
export interface PairedComparison {
  /** Instances with at least one trial under both configurations: the only ones compared. */
  instances: number;
  /** Paired instances where a's share of resolved trials is higher than b's. */
  wins: number;
  /** Paired instances where it is lower. */
  losses: number;
  /** Paired instances where it is the same. */
  ties: number;
  /** a's resolved rate minus b's over the paired instances; undefined when none is paired. */
  difference: number | undefined;
  /** The paired bootstrap interval of `difference` at the asked confidence. */
  interval: Interval | undefined;
  /** The configuration that resolves more, named only when the evidence is enough. */
  winner: 'a' | 'b' | undefined;
  /** Why `winner` is what it is, as a sentence for the report. */
  reason: string;
  /** Ids with trials under one configuration only, sorted; left out of the comparison. */
  unpaired: { a: string[]; b: string[] };
}

/**
 * Compares two configurations on the instances both ran. Pairing matters: instances differ in
 * difficulty far more than configurations do, so comparing each instance with itself removes
 * most of the noise that comparing two overall rates would keep. The interval comes from
 * resampling instances with replacement and is reproducible for a seed; instances are taken in
 * id order, so the order the maps were filled in does not change it.
 *
 * A winner is named when, in this order:
 * 1. at least `minInstances` (20) instances are paired: below that one instance moves the rate
 *    by 5 points or more, and a bootstrap interval of so few comes out too narrow;
 * 2. the interval excludes 0; the side it lies on names the winner.
 */
export function pairedComparison(
  a: TrialsByInstance,
  b: TrialsByInstance,
  options: PairedOptions = {},
): PairedComparison {
  const settings = checkPairedOptions(options);
  const { paired, unpaired } = pair(a, b);
  let wins = 0;
  let losses = 0;
  // Cross-multiplied counts compare the shares exactly, with no rounding of c/n.
  for (const { ca, na, cb, nb } of paired) {
    if (ca * nb > cb * na) wins++;
    else if (ca * nb < cb * na) losses++;
  }
  const differences = paired.map(({ ca, na, cb, nb }) => ca / na - cb / nb);
  const interval =
    differences.length === 0
      ? undefined
      : bootstrapMeanInterval(differences, settings.resamples, settings.confidence, mulberry32(settings.seed));
  return {
    instances: paired.length,
    wins,
    losses,
    ties: paired.length - wins - losses,
    difference: mean(differences),
    interval,
    ...verdict(paired.length, interval, settings),
    unpaired,
  };
}

function checkPairedOptions(options: PairedOptions): Required<PairedOptions> {
  const settings = {
    resamples: options.resamples ?? 10_000,
    seed: options.seed ?? 1,
    confidence: options.confidence ?? 0.95,
    minInstances: options.minInstances ?? 20,
  };
  for (const key of ['resamples', 'minInstances'] as const) {
    if (!Number.isSafeInteger(settings[key]) || settings[key] < 1) {
      throw new RangeError(`${key} must be an integer of at least 1, got ${settings[key]}`);
    }
  }
  if (!Number.isSafeInteger(settings.seed)) throw new RangeError(`seed must be an integer, got ${settings.seed}`);
  if (!(settings.confidence > 0 && settings.confidence < 1)) {
    throw new RangeError(`confidence must be between 0 and 1, got ${settings.confidence}`);
  }
  return settings;
}

interface Pair {
  ca: number;
  na: number;
  cb: number;
  nb: number;
}

function pair(a: TrialsByInstance, b: TrialsByInstance): { paired: Pair[]; unpaired: PairedComparison['unpaired'] } {
  const ran = (results: TrialsByInstance) =>
    [...results].filter(([, outcomes]) => outcomes.length > 0).map(([id]) => id);
  const inA = new Set(ran(a));
  const inB = new Set(ran(b));
  const paired = [...inA]
    .filter((id) => inB.has(id))
    .sort()
    .map((id): Pair => {
      const outcomesA = a.get(id) ?? [];
      const outcomesB = b.get(id) ?? [];
      return {
        ca: resolvedCount(id, outcomesA),
        na: outcomesA.length,
        cb: resolvedCount(id, outcomesB),
        nb: outcomesB.length,
      };
    });
  return {
    paired,
    unpaired: { a: [...inA].filter((id) => !inB.has(id)).sort(), b: [...inB].filter((id) => !inA.has(id)).sort() },
  };
}

function verdict(
  instances: number,
  interval: Interval | undefined,
  { confidence, minInstances }: Required<PairedOptions>,
): Pick<PairedComparison, 'winner' | 'reason'> {
  if (interval === undefined) return { winner: undefined, reason: 'no instance has trials under both configurations' };
  if (instances < minInstances) {
    const noun = instances === 1 ? 'instance' : 'instances';
    return {
      winner: undefined,
      reason: `only ${instances} paired ${noun}; ${minInstances} are needed to call a winner`,
    };
  }
  const level = `${Number((confidence * 100).toFixed(1))}%`;
  const range = `(a − b in [${interval.low.toFixed(3)}, ${interval.high.toFixed(3)}])`;
  if (interval.low > 0) return { winner: 'a', reason: `a resolves more: the ${level} interval excludes 0 ${range}` };
  if (interval.high < 0) return { winner: 'b', reason: `b resolves more: the ${level} interval excludes 0 ${range}` };
  return { winner: undefined, reason: `the ${level} interval includes 0 ${range}` };
}

/** The percentile bootstrap interval of the mean of `values`. */
function bootstrapMeanInterval(
  values: readonly number[],
  resamples: number,
  confidence: number,
  random: () => number,
): Interval {
  const means = new Float64Array(resamples);
  for (let r = 0; r < resamples; r++) {
    let sum = 0;
    for (let i = 0; i < values.length; i++) sum += values[Math.floor(random() * values.length)] ?? 0;
    means[r] = sum / values.length;
  }
  means.sort();
  const tail = ((1 - confidence) / 2) * 100;
  // Both ranks exist: `means` is never empty and the tail is within (0, 50).
  return { low: nearestRank(means, tail) ?? Number.NaN, high: nearestRank(means, 100 - tail) ?? Number.NaN };
}

/**
 * mulberry32: a 32-bit seeded generator of uniform numbers in [0, 1). Small and fast, and its
 * quality is ample for drawing resample indices; not for anything secret.
 */
function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}
