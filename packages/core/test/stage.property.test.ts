import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { InvalidTransitionError } from '../src/errors.js';
import type { Stage } from '../src/stage.js';
import { happyPath, isTerminal, nextStages, stages, terminalStages, transition } from '../src/stage.js';

// The table written out independently of the implementation: a change to either one
// must be made to both on purpose.
const running = ['preparing', 'planning', 'implementing', 'testing', 'validating', 'publishing'] as const;
const expectedPairs = new Set<string>([
  'queued>preparing',
  'queued>failed',
  'queued>cancelled',
  'preparing>planning',
  'planning>implementing',
  'implementing>testing',
  'testing>validating',
  'testing>implementing',
  'validating>publishing',
  'publishing>done',
  ...running.flatMap((s) => [`${s}>failed`, `${s}>cancelled`, `${s}>retry_wait`]),
  'retry_wait>preparing',
  'retry_wait>failed',
  'retry_wait>cancelled',
]);

const stageArb = fc.constantFrom(...stages);
// Every stage can appear, but exits and retries are rarer, so that paths also get far.
const biasedStageArb = fc.oneof(
  { weight: 80, arbitrary: fc.constantFrom(...happyPath) },
  { weight: 2, arbitrary: fc.constant('retry_wait' as const) },
  { weight: 1, arbitrary: fc.constantFrom('failed' as const, 'cancelled' as const) },
);

/** Builds a valid path from queued, taking each candidate only when the move is allowed. */
function pathFrom(candidates: readonly Stage[]): Stage[] {
  const path: Stage[] = ['queued'];
  for (const next of candidates) {
    const last = path[path.length - 1] ?? 'queued';
    try {
      path.push(transition(last, next));
    } catch (err) {
      if (!(err instanceof InvalidTransitionError)) throw err;
    }
  }
  return path;
}

/** Random walk from queued using random choices among nextStages. */
function walk(choices: readonly number[]): Stage[] {
  const path: Stage[] = ['queued'];
  for (const choice of choices) {
    const options = nextStages(path[path.length - 1] ?? 'queued');
    if (options.length === 0) break;
    path.push(options[choice % options.length] ?? 'failed');
  }
  return path;
}

function isSubsequence(needle: readonly Stage[], hay: readonly Stage[]): boolean {
  let i = 0;
  for (const stage of hay) if (stage === needle[i]) i += 1;
  return i === needle.length;
}

describe('stage transitions (property-based)', () => {
  it('(a) walks that reach done start at queued and end with the full happy path since the last preparing (a tier going back to pass 1 aside)', () => {
    // Biased towards the first option (the happy-path step) so many walks reach done.
    const choice = fc.oneof({ weight: 4, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.nat(10) });
    let reachedDone = 0;
    fc.assert(
      fc.property(fc.array(choice, { maxLength: 60, size: 'max' }), (choices) => {
        const path = walk(choices);
        if (path[path.length - 1] !== 'done') return;
        reachedDone += 1;
        expect(path[0]).toBe('queued');
        const lastPreparing = path.lastIndexOf('preparing');
        // The next escalation tier goes back from testing to implementing: those loops fold away.
        const folded = path.slice(lastPreparing).join(',').replaceAll('testing,implementing,', '').split(',');
        expect(folded).toEqual(happyPath.slice(1));
      }),
      { numRuns: 2000 },
    );
    expect(reachedDone).toBeGreaterThan(100);
  });

  it('(b) transition throws InvalidTransitionError or the pair is in the table', () => {
    fc.assert(
      fc.property(fc.array(stageArb, { minLength: 2, maxLength: 30 }), (sequence) => {
        for (let i = 1; i < sequence.length; i += 1) {
          const from = sequence[i - 1] as Stage;
          const to = sequence[i] as Stage;
          let allowed: boolean;
          try {
            expect(transition(from, to)).toBe(to);
            allowed = true;
          } catch (err) {
            expect(err).toBeInstanceOf(InvalidTransitionError);
            allowed = false;
          }
          expect(allowed).toBe(expectedPairs.has(`${from}>${to}`));
        }
      }),
    );
  });

  it('(b) the whole table matches, pair by pair, and agrees with nextStages', () => {
    for (const from of stages) {
      for (const to of stages) {
        const inTable = expectedPairs.has(`${from}>${to}`);
        expect(nextStages(from).includes(to)).toBe(inTable);
        if (inTable) expect(transition(from, to)).toBe(to);
        else expect(() => transition(from, to)).toThrow(InvalidTransitionError);
      }
    }
  });

  it('(c) terminal stages have no way out', () => {
    for (const terminal of terminalStages) {
      expect(isTerminal(terminal)).toBe(true);
      expect(nextStages(terminal)).toEqual([]);
    }
    fc.assert(
      fc.property(fc.constantFrom(...terminalStages), stageArb, (terminal, to) => {
        expect(() => transition(terminal, to)).toThrow(InvalidTransitionError);
      }),
    );
    expect(stages.filter(isTerminal).sort()).toEqual([...terminalStages].sort());
  });

  it('(d) no valid path reaches done without every happy-path stage in order', () => {
    let reachedDone = 0;
    let retried = 0;
    fc.assert(
      fc.property(fc.array(biasedStageArb, { maxLength: 300, size: 'max' }), (candidates) => {
        const path = pathFrom(candidates);
        if (!path.includes('done')) return;
        reachedDone += 1;
        if (path.includes('retry_wait')) retried += 1;
        expect(path[path.length - 1]).toBe('done');
        expect(isSubsequence(happyPath, path)).toBe(true);
        // Stronger: every attempt that reached done ran the whole pipeline without a gap.
        expect(isSubsequence(happyPath.slice(1), path.slice(path.lastIndexOf('preparing')))).toBe(true);
      }),
      { numRuns: 1000 },
    );
    expect(reachedDone).toBeGreaterThan(100);
    // The interesting paths: done after at least one retry.
    expect(retried).toBeGreaterThan(30);
  });
});
