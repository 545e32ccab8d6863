import { afterEach, describe, expect, it } from '@jest/globals';
import { createFixture, exists, sampleFiles, type Fixture } from './helpers.js';

// A worker that stops mid-grade (killed, crashed) leaves `<copy>.grade` beside its copy, as
// large as the copy with its dependencies: the sweep that frees the copy takes it too.
describe('sweep of grading copies', () => {
  let fixture: Fixture | undefined;
  afterEach(async () => {
    await fixture?.dispose();
    fixture = undefined;
  });

  it.each([
    ['one-job copies', false],
    ['pool slots', true],
  ])('removes the grading copy of a job that stopped, never a running job’s (%s)', async (_, reuse) => {
    fixture = await createFixture(sampleFiles, reuse);
    const { origin, manager } = fixture;
    const gone = await manager.prepare({ jobId: 'job-gone', repoUrl: origin.path, branch: 'ai/gone-00000001' });
    const live = await manager.prepare({ jobId: 'job-live', repoUrl: origin.path, branch: 'ai/live-00000002' });
    const goneGrade = await gone.gradingCopy();
    const liveGrade = await live.gradingCopy();
    expect(await exists(goneGrade.dir)).toBe(true);

    await manager.sweep((jobId) => jobId === 'job-live');
    expect(await exists(goneGrade.dir)).toBe(false);
    expect(await exists(liveGrade.dir)).toBe(true);

    await liveGrade.remove();
    await live.release();
  });
});
