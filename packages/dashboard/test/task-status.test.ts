import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { advance, finish, setPublication, type PullRequestStatesReader, type RunRecord } from '@codefleet/core';
import { implementingRun, jobOf, openBackends, startDashboard, token, type Backends } from './helpers.js';

// The derived task status on the runs list and the run page: the dashboard asks the forge's
// PR states through the reader it is given (here scripted), once per page.

let b: Backends;
const bearer = { authorization: `Bearer ${token}` };
beforeEach(async () => {
  b = await openBackends();
});
afterEach(async () => {
  await b.dispose();
});

function publishedRun(id: string, number: number): RunRecord {
  const now = new Date();
  let run = implementingRun(jobOf(id), now);
  for (const stage of ['testing', 'validating', 'publishing'] as const) run = advance(run, stage, { now });
  run = setPublication(
    run,
    { branch: `ai/${id}`, pullRequest: { number, head: `ai/${id}`, base: 'main', draft: false } },
    { now },
  );
  return finish(run, 'succeeded', { now });
}

describe('task status', () => {
  it('shows done for a merged PR, open for one in review, in_progress while running; asks for PR runs only', async () => {
    await b.store.save(publishedRun('job-merged', 5));
    await b.store.save(publishedRun('job-review', 6));
    await b.store.save(implementingRun(jobOf('job-running')));
    const asked: string[] = [];
    const reader: PullRequestStatesReader = async (keys) => {
      asked.push(...keys.map((k) => `${k.repo}#${k.number}`));
      return new Map([
        ['octo/widgets#5', { state: 'merged' as const }],
        ['octo/widgets#6', { state: 'open' as const }],
      ]);
    };
    const dash = await startDashboard(b, { pullRequestStates: reader });
    try {
      const page = await (await fetch(`${dash.base}/runs`, { headers: bearer })).text();
      const statusOf = (id: string) => new RegExp(`/runs/${id}"[\\s\\S]*?data-status="([^"]+)"`).exec(page)?.[1];
      expect([statusOf('job-merged'), statusOf('job-review'), statusOf('job-running')]).toEqual([
        'done',
        'open',
        'in_progress',
      ]);
      expect(asked.sort()).toEqual(['octo/widgets#5', 'octo/widgets#6']);
      const run = await (await fetch(`${dash.base}/runs/job-merged`, { headers: bearer })).text();
      expect(run).toMatch(/Status: <span class="status status-done" data-status="done">done<\/span> · PR #5 merged/);
    } finally {
      await dash.close();
    }
  });

  it('shows open? with the reason when the forge cannot be read, and the page still renders', async () => {
    await b.store.save(publishedRun('job-x', 7));
    const dash = await startDashboard(b, {
      pullRequestStates: async () => {
        throw new Error('GitHub is down');
      },
    });
    try {
      const res = await fetch(`${dash.base}/runs/job-x`, { headers: bearer });
      expect(res.status).toBe(200);
      expect(await res.text()).toContain(
        'data-status="open?">open?</span> · PR #7: forge not readable: GitHub is down',
      );
    } finally {
      await dash.close();
    }
  });
});
