import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import type { Outcome, TrialsByInstance } from '../src/stats.js';
import { pairedComparison, passAtK, passHatK, percentile, summarizeTrials, wilsonInterval } from '../src/stats.js';

/** C(n, k) from Pascal's triangle: sums only, so it shares nothing with the product forms under test. */
function pascal(size: number): number[][] {
  const rows: number[][] = [[1]];
  for (let n = 1; n <= size; n++) {
    const above = rows[n - 1] ?? [];
    rows.push(Array.from({ length: n + 1 }, (_, k) => (above[k - 1] ?? 0) + (above[k] ?? 0)));
  }
  return rows;
}
const binomials = pascal(20);
const choose = (n: number, k: number): number => (k > n ? 0 : (binomials[n]?.[k] ?? Number.NaN));

const results = (byId: Record<string, Outcome[]>): TrialsByInstance => new Map(Object.entries(byId));

/** `count` instances `i00`, `i01`…, each with the trials `outcomes(i)`. */
function instances(count: number, outcomes: (i: number) => Outcome[]): TrialsByInstance {
  return new Map(Array.from({ length: count }, (_, i) => [`i${String(i).padStart(2, '0')}`, outcomes(i)]));
}

describe('passAtK', () => {
  it('matches worked examples', () => {
    // k = 1: 1 − C(7,1)/C(10,1) = 1 − 7/10 = c/n.
    expect(passAtK(10, 3, 1)).toBeCloseTo(0.3, 12);
    // 1 − C(7,5)/C(10,5) = 1 − 21/252.
    expect(passAtK(10, 3, 5)).toBeCloseTo(1 - 21 / 252, 12);
    // Only 4 failures: every 5-subset holds a success.
    expect(passAtK(10, 6, 5)).toBe(1);
    expect(passAtK(10, 0, 5)).toBe(0);
    expect(passAtK(10, 10, 1)).toBe(1);
  });

  it('equals 1 − C(n−c, k)/C(n, k) on every n ≤ 20', () => {
    for (let n = 1; n <= 20; n++) {
      for (let c = 0; c <= n; c++) {
        for (let k = 1; k <= n; k++) {
          expect(passAtK(n, c, k)).toBeCloseTo(1 - choose(n - c, k) / choose(n, k), 12);
        }
      }
    }
  });

  it('stays exact where the binomial coefficients overflow a double', () => {
    // C(1999, 1000)/C(2000, 1000) = (2000 − 1000)/2000, so pass@1000 with one success is 1/2;
    // C(2000, 1000) ≈ 2e600 is Infinity as a double.
    expect(passAtK(2000, 1, 1000)).toBeCloseTo(0.5, 12);
    // 1 − C(10, 2)/C(5000, 2) = 1 − 45/12 497 500.
    expect(passAtK(5000, 4990, 2)).toBeCloseTo(1 - 45 / 12_497_500, 15);
  });

  it('rejects counts that describe no trials', () => {
    expect(() => passAtK(5, 2, 6)).toThrow(
      new RangeError('k (6) cannot exceed n (5 trials): an estimate at k needs k trials'),
    );
    expect(() => passAtK(5, 6, 1)).toThrow(new RangeError('c (6 successes) cannot exceed n (5 trials)'));
    expect(() => passAtK(5, 2, 0)).toThrow(new RangeError('k must be at least 1, got 0'));
    expect(() => passAtK(-1, 0, 1)).toThrow(new RangeError('n must be a non-negative integer, got -1'));
    expect(() => passAtK(5, 2.5, 1)).toThrow(new RangeError('c must be a non-negative integer, got 2.5'));
    expect(() => passAtK(5, 2, Number.NaN)).toThrow(RangeError);
    expect(() => passAtK(0, 0, 0)).toThrow(RangeError);
  });
});

describe('passHatK', () => {
  it('matches worked examples', () => {
    // C(3,2)/C(10,2) = 3/45.
    expect(passHatK(10, 3, 2)).toBeCloseTo(3 / 45, 12);
    // k = 1: C(3,1)/C(10,1) = c/n.
    expect(passHatK(10, 3, 1)).toBeCloseTo(0.3, 12);
    // Fewer successes than draws: no k-subset is all successes.
    expect(passHatK(10, 3, 4)).toBe(0);
    expect(passHatK(10, 10, 7)).toBe(1);
  });

  it('equals C(c, k)/C(n, k) on every n ≤ 20', () => {
    for (let n = 1; n <= 20; n++) {
      for (let c = 0; c <= n; c++) {
        for (let k = 1; k <= n; k++) expect(passHatK(n, c, k)).toBeCloseTo(choose(c, k) / choose(n, k), 12);
      }
    }
  });

  it('stays exact where the binomial coefficients overflow a double', () => {
    // C(1999, 1000)/C(2000, 1000) = 1000/2000.
    expect(passHatK(2000, 1999, 1000)).toBeCloseTo(0.5, 12);
  });

  it('validates like passAtK', () => {
    expect(() => passHatK(3, 1, 4)).toThrow(RangeError);
    expect(() => passHatK(3, 4, 1)).toThrow(RangeError);
  });

  it('brackets pass@1 with pass@k above and pass^k below, both monotone in k', () => {
    const counts = fc
      .integer({ min: 1, max: 60 })
      .chain((n) => fc.tuple(fc.constant(n), fc.integer({ min: 0, max: n }), fc.integer({ min: 1, max: n })));
    fc.assert(
      fc.property(counts, ([n, c, k]) => {
        const rate = c / n;
        expect(passAtK(n, c, k)).toBeGreaterThanOrEqual(rate - 1e-12);
        expect(passHatK(n, c, k)).toBeLessThanOrEqual(rate + 1e-12);
        if (k < n) {
          expect(passAtK(n, c, k + 1)).toBeGreaterThanOrEqual(passAtK(n, c, k) - 1e-12);
          expect(passHatK(n, c, k + 1)).toBeLessThanOrEqual(passHatK(n, c, k) + 1e-12);
        }
      }),
    );
  });
});

describe('wilsonInterval', () => {
  it('matches the published interval for 8 of 10', () => {
    const { low, high } = wilsonInterval(8, 10);
    expect(low).toBeCloseTo(0.4902, 4);
    expect(high).toBeCloseTo(0.9433, 4);
  });

  it('has closed forms at 0 and at all successes', () => {
    // p = 0: the centre and the half-width are both (z²/2n)/(1 + z²/n), so high = z²/(n + z²).
    const z2 = 1.96 * 1.96;
    expect(wilsonInterval(0, 10)).toEqual({ low: 0, high: expect.closeTo(z2 / (10 + z2), 12) });
    expect(wilsonInterval(10, 10)).toEqual({ low: expect.closeTo(10 / (10 + z2), 12), high: 1 });
  });

  it('ends exactly at 0 and 1 for every total, where rounding would leave 1e-17 past them', () => {
    for (let total = 1; total <= 2_000; total++) {
      expect(wilsonInterval(0, total).low).toBe(0);
      expect(wilsonInterval(total, total).high).toBe(1);
    }
  });

  it('says nothing of no trials', () => {
    expect(wilsonInterval(0, 0)).toEqual({ low: 0, high: 1 });
  });

  it('widens with z', () => {
    const at95 = wilsonInterval(8, 10);
    const at99 = wilsonInterval(8, 10, 2.576);
    expect(at99.low).toBeLessThan(at95.low);
    expect(at99.high).toBeGreaterThan(at95.high);
  });

  it('holds the observed rate, inside [0, 1], mirrored for failures', () => {
    const counts = fc
      .integer({ min: 1, max: 500 })
      .chain((n) => fc.tuple(fc.constant(n), fc.integer({ min: 0, max: n })));
    fc.assert(
      fc.property(counts, ([total, successes]) => {
        const { low, high } = wilsonInterval(successes, total);
        const mirror = wilsonInterval(total - successes, total);
        expect(0 <= low && low <= successes / total && successes / total <= high && high <= 1).toBe(true);
        expect(low).toBeCloseTo(1 - mirror.high, 12);
      }),
    );
  });

  it('rejects impossible counts', () => {
    expect(() => wilsonInterval(11, 10)).toThrow(RangeError);
    expect(() => wilsonInterval(-1, 10)).toThrow(RangeError);
    expect(() => wilsonInterval(1.5, 10)).toThrow(RangeError);
    expect(() => wilsonInterval(1, 10, 0)).toThrow(RangeError);
  });
});

describe('percentile', () => {
  it('takes the nearest rank, as in the textbook examples', () => {
    const small = [15, 20, 35, 40, 50];
    expect([5, 30, 40, 50, 100].map((p) => percentile(small, p))).toEqual([15, 20, 20, 35, 50]);
    const ten = [3, 6, 7, 8, 8, 10, 13, 15, 16, 20];
    expect([0, 25, 50, 75, 100].map((p) => percentile(ten, p))).toEqual([3, 7, 8, 15, 20]);
    // 21% of 10 values is 2.1, so the rank is the 3rd value, not the 2nd.
    expect(percentile(ten, 21)).toBe(7);
  });

  it('sorts numerically and leaves its input alone', () => {
    const walls = [900, 80, 1000, 7];
    expect(percentile(walls, 50)).toBe(80);
    expect(walls).toEqual([900, 80, 1000, 7]);
  });

  it('has no percentile of nothing, and no percentile outside 0–100', () => {
    expect(percentile([], 50)).toBeUndefined();
    expect(() => percentile([1], 101)).toThrow(RangeError);
    expect(() => percentile([1], Number.NaN)).toThrow(RangeError);
  });
});

describe('summarizeTrials', () => {
  it('averages over instances, leaving out those with fewer than k trials', () => {
    const summary = summarizeTrials(results({ x: [1, 0, 1, 1], y: [false, false], z: [true], w: [] }), [1, 2, 5]);
    expect(summary.instances).toBe(4);
    expect(summary.trials).toBe(7);
    // x 3/4, y 0, z 1; w has no trial: (0.75 + 0 + 1)/3.
    expect(summary.resolvedRate).toBeCloseTo(1.75 / 3, 12);
    const [k1, k2, k5] = summary.byK;
    expect(k1).toEqual({
      k: 1,
      passAtK: expect.closeTo(1.75 / 3, 12),
      passHatK: expect.closeTo(1.75 / 3, 12),
      instances: 3,
      excluded: 1,
    });
    // x: pass@2 = 1 (one failure < 2), pass^2 = C(3,2)/C(4,2) = 1/2; y: 0 and 0; z and w excluded.
    expect(k2).toEqual({ k: 2, passAtK: 0.5, passHatK: 0.25, instances: 2, excluded: 2 });
    expect(k5).toEqual({ k: 5, passAtK: undefined, passHatK: undefined, instances: 0, excluded: 4 });
  });

  it('has no rate without trials', () => {
    expect(summarizeTrials(new Map())).toEqual({
      instances: 0,
      trials: 0,
      resolvedRate: undefined,
      byK: [{ k: 1, passAtK: undefined, passHatK: undefined, instances: 0, excluded: 0 }],
    });
  });

  it('rejects a bad k and an outcome that is not 0/1/boolean', () => {
    expect(() => summarizeTrials(results({ x: [1] }), [0])).toThrow(RangeError);
    expect(() => summarizeTrials(results({ x: [1, 2 as Outcome] }))).toThrow(
      new RangeError('instance x: a trial outcome must be 0, 1, true or false, got 2'),
    );
  });
});

describe('pairedComparison', () => {
  it('compares only the instances both configurations ran', () => {
    const a = results({ x: [1, 1, 0, 0], y: [1], z: [0, 0], onlyA: [1], emptyInA: [] });
    const b = results({ x: [true, false], y: [0, 0, 1], z: [1, 0, 0, 0], onlyB: [0], emptyInA: [1] });
    const compared = pairedComparison(a, b, { resamples: 500 });
    // x 1/2 vs 1/2 tie, y 1 vs 1/3 win, z 0 vs 1/4 loss; difference (0 + 2/3 − 1/4)/3 = 5/36.
    expect(compared).toMatchObject({ instances: 3, wins: 1, losses: 1, ties: 1 });
    expect(compared.difference).toBeCloseTo(5 / 36, 12);
    expect(compared.unpaired).toEqual({ a: ['onlyA'], b: ['emptyInA', 'onlyB'] });
    expect(compared.winner).toBeUndefined();
    expect(compared.reason).toBe('only 3 paired instances; 20 are needed to call a winner');
  });

  it('is reproducible for a seed, whatever order the maps were filled in', () => {
    const a = instances(30, (i) => [i % 2, i % 3 === 0 ? 1 : 0, 1] as Outcome[]);
    const b = instances(30, (i) => [i % 5 === 0 ? 1 : 0, 1, 0] as Outcome[]);
    const reversed = (m: TrialsByInstance) => new Map([...m].reverse());
    const first = pairedComparison(a, b, { seed: 7 });
    expect(pairedComparison(a, b, { seed: 7 })).toEqual(first);
    expect(pairedComparison(reversed(a), reversed(b), { seed: 7 })).toEqual(first);
    // The seed is used: five seeds do not all draw the same interval.
    const intervals = [1, 2, 3, 4, 5].map((seed) => JSON.stringify(pairedComparison(a, b, { seed }).interval));
    expect(new Set(intervals).size).toBeGreaterThan(1);
  });

  it('names a clearly better configuration on 30 instances, either way round', () => {
    const better = instances(30, (i) => [i < 25 ? 1 : 0]);
    const worse = instances(30, (i) => [i >= 5 && i < 10 ? 1 : 0]);
    const compared = pairedComparison(better, worse);
    // 25 resolved against 5: 20/30 apart; wins where only `better` resolved (i < 5 and 10–24).
    expect(compared).toMatchObject({ instances: 30, wins: 20, losses: 0, ties: 10, winner: 'a' });
    expect(compared.difference).toBeCloseTo(20 / 30, 12);
    expect(compared.interval?.low).toBeGreaterThan(0);
    expect(compared.reason).toMatch(/^a resolves more: the 95% interval excludes 0 \(a − b in \[0\.\d+, 0\.\d+\]\)$/);
    expect(pairedComparison(worse, better)).toMatchObject({ winner: 'b', wins: 0, losses: 20 });
  });

  it('names no winner from 12 instances however far apart', () => {
    const compared = pairedComparison(
      instances(12, () => [1]),
      instances(12, () => [0]),
    );
    expect(compared.interval).toEqual({ low: 1, high: 1 });
    expect(compared.winner).toBeUndefined();
    expect(compared.reason).toBe('only 12 paired instances; 20 are needed to call a winner');
    expect(
      pairedComparison(
        instances(12, () => [1]),
        instances(12, () => [0]),
        { minInstances: 10 },
      ).winner,
    ).toBe('a');
  });

  it('calls a winner from exactly 20 instances, not from 19', () => {
    const apart = (count: number) =>
      pairedComparison(
        instances(count, () => [1]),
        instances(count, () => [0]),
      );
    expect(apart(20).winner).toBe('a');
    expect(apart(19).reason).toBe('only 19 paired instances; 20 are needed to call a winner');
  });

  it('names no winner between identical configurations', () => {
    const same = instances(40, (i) => [i % 2, i % 3 === 0] as Outcome[]);
    const compared = pairedComparison(same, same);
    expect(compared).toMatchObject({ instances: 40, ties: 40, difference: 0, interval: { low: 0, high: 0 } });
    expect(compared.winner).toBeUndefined();
    expect(compared.reason).toMatch(/^the 95% interval includes 0/);
  });

  it('centres the interval on 0 when equal rates come from different instances', () => {
    // a resolves the first 15, b the last 15: the differences are 15 × +1 and 15 × −1, of
    // standard deviation 1, so the interval is about ±1.96/√30 = ±0.358.
    const compared = pairedComparison(
      instances(30, (i) => [i < 15 ? 1 : 0]),
      instances(30, (i) => [i >= 15 ? 1 : 0]),
    );
    expect(compared.difference).toBe(0);
    expect(compared.interval?.low).toBeCloseTo(-0.358, 1);
    expect(compared.interval?.high).toBeCloseTo(0.358, 1);
    expect(compared.winner).toBeUndefined();
  });

  it('agrees with the normal approximation on a large sample', () => {
    // 60 of 100 differences are 1, the rest 0: mean 0.6, standard error √(0.24/100) = 0.049,
    // so the 95% interval is about 0.6 ± 0.096.
    const compared = pairedComparison(
      instances(100, (i) => [i < 60 ? 1 : 0]),
      instances(100, () => [0]),
    );
    expect(Math.abs((compared.interval?.low ?? 0) - 0.504)).toBeLessThan(0.015);
    expect(Math.abs((compared.interval?.high ?? 0) - 0.696)).toBeLessThan(0.015);
    // At 50% the interval is about ±0.674 standard errors: ±0.033.
    const half = pairedComparison(
      instances(100, (i) => [i < 60 ? 1 : 0]),
      instances(100, () => [0]),
      { confidence: 0.5 },
    );
    expect(Math.abs((half.interval?.high ?? 0) - (half.interval?.low ?? 0) - 0.066)).toBeLessThan(0.015);
    expect(half.reason).toMatch(/^a resolves more: the 50% interval excludes 0/);
  });

  it('holds the observed difference inside its interval', () => {
    const outcomes = fc.array(fc.constantFrom<Outcome>(0, 1), { minLength: 1, maxLength: 4 });
    const configuration = fc.array(outcomes, { minLength: 25, maxLength: 25 });
    fc.assert(
      fc.property(configuration, configuration, fc.integer(), (trialsA, trialsB, seed) => {
        const compared = pairedComparison(
          instances(25, (i) => trialsA[i] ?? []),
          instances(25, (i) => trialsB[i] ?? []),
          { resamples: 2_000, seed },
        );
        const { low, high } = compared.interval ?? { low: Number.NaN, high: Number.NaN };
        expect(low).toBeLessThanOrEqual((compared.difference ?? Number.NaN) + 1e-12);
        expect(high).toBeGreaterThanOrEqual((compared.difference ?? Number.NaN) - 1e-12);
      }),
      { numRuns: 25 },
    );
  });

  it('says so when nothing is paired', () => {
    const compared = pairedComparison(results({ x: [1] }), results({ y: [1] }));
    expect(compared).toMatchObject({ instances: 0, difference: undefined, interval: undefined, winner: undefined });
    expect(compared.reason).toBe('no instance has trials under both configurations');
  });

  it('rejects options that cannot resample', () => {
    const one = results({ x: [1] });
    expect(() => pairedComparison(one, one, { resamples: 0 })).toThrow(RangeError);
    expect(() => pairedComparison(one, one, { confidence: 1 })).toThrow(RangeError);
    expect(() => pairedComparison(one, one, { minInstances: 0 })).toThrow(RangeError);
    expect(() => pairedComparison(one, one, { seed: 0.5 })).toThrow(RangeError);
  });
});
