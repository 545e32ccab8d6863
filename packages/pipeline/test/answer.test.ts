import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import type { Report } from '@codefleet/requester';
import { branchName } from '@codefleet/workspace';
import { createHarness, type Harness } from './harness.js';

// Read-only jobs (PLAN, ANALYZE, RESEARCH): the agent answers on a copy; nothing is
// committed, pushed or opened; the answer is recorded and reported. Scripted agents on
// real parts (git, the sandbox, the local forge).
let h: Harness | undefined;
afterEach(async () => {
  await h?.dispose();
  h = undefined;
});

const route = { name: 'ANALYZE' as const, source: 'command' as const, confidence: 1, reason: '/analyze' };

async function answerHarness(): Promise<{ h: Harness; reports: Report[] }> {
  const harness = await createHarness();
  const reports: Report[] = [];
  harness.deps.requester = {
    kind: 'recording',
    handles: () => true,
    report: async (r) => {
      reports.push(r);
    },
  };
  return { h: harness, reports };
}

describe('runJob: answer mode', () => {
  it('records and reports the answer the agent wrote; edits are discarded, no branch or PR', async () => {
    const setup = await answerHarness();
    h = setup.h;
    await h.agent(`
fs.writeFileSync(path.join(workdir, 'src', 'lib.js'), 'garbage\\n');
fs.writeFileSync(path.join(workdir, '.codefleet', 'answer.md'), '## How one() works\\nIt returns 1 (src/lib.js).\\n');
`);
    const job = h.job({ mode: 'answer', route, title: 'How does one() work?' });
    await h.drain(job);
    const run = await h.store.get(job.id);
    expect(run).toMatchObject({
      outcome: 'succeeded',
      stage: 'done',
      answer: '## How one() works\nIt returns 1 (src/lib.js).',
    });
    expect(run!.branch).toBeUndefined();
    expect(run!.stages.find((s) => s.stage === 'testing')?.note).toMatch(/changed 1 file\(s\); discarded/);
    expect(await h.forge.findBranch(job.repo, branchName(job))).toBeUndefined();
    expect(await h.forge.findPullRequest(job.repo, branchName(job))).toBeUndefined();
    // Progress goes in the background, latest wins: the stages told keep their order, and
    // the ones that passed while an edit was in flight are skipped. Planning and validating
    // are never told (each would be a status edit of its own); implementing is, with its note.
    const told: string[] = setup.reports.map((r) => (r.kind === 'progress' ? r.stage : r.kind));
    const stages = ['implementing', 'testing', 'publishing'];
    expect(told[0]).toBe('started');
    expect(told.at(-1)).toBe('answered');
    expect(told.slice(1, -1)).toEqual(stages.filter((stage) => told.includes(stage)));
    expect(setup.reports.at(-1)).toMatchObject({ kind: 'answered', answer: run!.answer });
  });

  it('takes the end of the output when the agent wrote no answer file (CLI agents print it)', async () => {
    const setup = await answerHarness();
    h = setup.h;
    await h.agent("console.log('The parser is in src/lib.js.');");
    const job = h.job({ mode: 'answer', route });
    await h.drain(job);
    expect((await h.store.get(job.id))?.answer).toContain('The parser is in src/lib.js.');
  });

  it('never follows an answer file that is a link to a host file', async () => {
    const setup = await answerHarness();
    h = setup.h;
    const hostFile = join(h.dir.path, 'host-secret.txt');
    await writeFile(hostFile, 'HOST-ONLY-CONTENT\n');
    await h.agent(`
fs.symlinkSync(${JSON.stringify(hostFile)}, path.join(workdir, '.codefleet', 'answer.md'));
console.log('linked');
`);
    const job = h.job({ mode: 'answer', route });
    await h.drain(job);
    const run = await h.store.get(job.id);
    expect(run?.answer).toBe('linked');
    expect(JSON.stringify(run)).not.toContain('HOST-ONLY-CONTENT');
  });

  it('an agent that gives no answer fails the job, reported as a failure', async () => {
    const setup = await answerHarness();
    h = setup.h;
    await h.agent('// says nothing');
    const job = h.job({ mode: 'answer', route });
    await h.drain(job);
    expect(await h.store.get(job.id)).toMatchObject({ outcome: 'failed', error: { code: 'agent_failed' } });
    expect(setup.reports.filter((r) => r.kind !== 'progress').map((r) => r.kind)).toEqual(['started', 'failed']);
  });

  it("Node's own runtime warnings are no answer (Node 22 prints one in every sandboxed run)", async () => {
    const setup = await answerHarness();
    h = setup.h;
    await h.agent("process.emitWarning('EnvHttpProxyAgent is experimental', { code: 'UNDICI-EHPA' });");
    const job = h.job({ mode: 'answer', route });
    await h.drain(job);
    expect(await h.store.get(job.id)).toMatchObject({ outcome: 'failed', error: { code: 'agent_failed' } });
    await h.agent("process.emitWarning('old', 'DeprecationWarning'); console.log('The answer.');");
    const second = h.job({ mode: 'answer', route });
    await h.drain(second);
    expect((await h.store.get(second.id))?.answer).toBe('The answer.');
  });
});
