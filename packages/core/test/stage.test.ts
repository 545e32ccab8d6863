import { describe, expect, it } from '@jest/globals';
import { InvalidTransitionError } from '../src/errors.js';
import { happyPath, isStage, isTerminal, nextStages, stageDocs, stages, transition } from '../src/stage.js';

describe('stages', () => {
  it('documents every stage', () => {
    expect(Object.keys(stageDocs).sort()).toEqual([...stages].sort());
    for (const stage of stages) expect(stageDocs[stage].length).toBeGreaterThan(10);
  });

  it('walks the happy path', () => {
    for (let i = 1; i < happyPath.length; i += 1) {
      expect(transition(happyPath[i - 1] ?? 'queued', happyPath[i] ?? 'done')).toBe(happyPath[i]);
    }
  });

  it('restarts a retried attempt at preparing', () => {
    expect(nextStages('retry_wait')).toEqual(['preparing', 'failed', 'cancelled']);
    expect(() => transition('retry_wait', 'implementing')).toThrow(InvalidTransitionError);
    expect(() => transition('queued', 'retry_wait')).toThrow(InvalidTransitionError);
  });

  it('refuses skipping a stage and names both ends', () => {
    expect(() => transition('implementing', 'publishing')).toThrow(
      'invalid stage transition: implementing -> publishing',
    );
  });

  it('refuses values that are not stages at run time', () => {
    expect(isStage('toString')).toBe(false);
    expect(() => transition('queued', 'toString' as never)).toThrow(InvalidTransitionError);
    expect(isTerminal('queued')).toBe(false);
  });
});
