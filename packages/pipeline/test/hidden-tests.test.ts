/**
 * Hidden tests grade a change in secret: the verifier applies them after the agent's last
 * attempt, in a copy of its own, and the run's grade says whether the named tests passed.
 * The agent never sees them (not in its copy, its prompt or its sandbox), and nothing
 * published carries them. An evaluation's job (`source.kind: eval`) is graded and publishes
 * nothing at all.
 */
import { readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import type { Job } from '@codefleet/core';
import { git } from '@codefleet/testkit';
import { createHarness, implementsFeature, outcomeOf, pushed, type Harness } from './harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.dispose();
  h = undefined;
});

/** A new test file asking two() for 2, as a unified diff: what a task's fix must pass. */
const hiddenPatch = [
  'diff --git a/test/hidden.test.js b/test/hidden.test.js',
  'new file mode 100644',
  '--- /dev/null',
  '+++ b/test/hidden.test.js',
  '@@ -0,0 +1,4 @@',
  "+import { test } from 'node:test';",
  "+import assert from 'node:assert/strict';",
  "+import { two } from '../src/lib.js';",
  "+test('hidden two', () => assert.equal(two(), 2));",
  '',
].join('\n');

/** Writes what the agent could see (its prompt and every file it can find) beside its module. */
const probe = `
const seen = { prompt: fs.readFileSync(args.get('--prompt-file') ?? '/dev/null', 'utf8'), files: [] };
const walk = (dir) => { for (const e of fs.readdirSync(dir, { withFileTypes: true })) { const p = path.join(dir, e.name); if (e.isDirectory()) { if (e.name !== 'node_modules') walk(p); } else seen.files.push(p); } };
walk(workdir);
try { walk(workdir + '.grade'); } catch {}
fs.appendFileSync(path.join(path.dirname(new URL(import.meta.url).pathname), 'seen.jsonl'), JSON.stringify(seen) + '\\n');
`;

/** An eval source for a job of `suite`'s instance `instance`. */
const evalSource = (trial = 1): Job['source'] => ({
  kind: 'eval',
  suite: 'a'.repeat(64),
  instance: 'sample__two-1',
  config: 'script',
  trial,
});

describe('hidden tests', () => {
  it('grade a right change resolved, never reaching the agent, its copy or the pull request', async () => {
    h = await createHarness();
    await h.agent(`${probe}${implementsFeature}`);
    const job = h.job({ title: 'Add two()', hidden_tests: { patch: hiddenPatch, tests: ['hidden two'] } });
    await h.drain(job);
    const run = await h.store.get(job.id);
    expect(outcomeOf(run)).toBe('succeeded');
    expect(run?.grade).toMatchObject({
      resolved: true,
      reason: 'all 1 named tests passed',
      tests: { failed: [], missing: [] },
    });
    expect(run?.grade?.tests?.passed).toEqual(expect.arrayContaining(['hidden two', 'one', 'two']));
    // Built and tested, nothing else (no install, format or lint in the grading copy).
    expect(run?.grade?.checks.map((c) => [c.step, c.passed])).toEqual([
      ['build', true],
      ['test', true],
    ]);

    const seen = (await readFile(join(h.agentModule(), '..', 'seen.jsonl'), 'utf8')).trim().split('\n');
    expect(seen.length).toBeGreaterThan(0);
    for (const line of seen) {
      expect(line).not.toContain('hidden');
    }
    const branch = await pushed(h, run?.branch ?? '');
    expect(branch.files).not.toContain('test/hidden.test.js');
    expect(branch.text).not.toContain('hidden two');
    // The grading copy is gone once graded.
    const cache = readdirSync(join(h.dir.path, 'cache'), { recursive: true }).map(String);
    expect(cache.length).toBeGreaterThan(0);
    expect(cache.filter((path) => path.endsWith('.grade'))).toEqual([]);
  });

  it('grade a wrong change unresolved, naming the test, while verification passed it', async () => {
    h = await createHarness();
    await h.agent(
      `if (pass === 'implement') fs.appendFileSync(path.join(workdir, 'src', 'lib.js'), 'export const two = () => 3;\\n');`,
    );
    const job = h.job({ title: 'Add two()', hidden_tests: { patch: hiddenPatch, tests: ['hidden two'] } });
    await h.drain(job);
    const run = await h.store.get(job.id);
    expect(outcomeOf(run)).toBe('succeeded');
    expect(run?.grade).toMatchObject({
      resolved: false,
      reason: '1 of 1 named tests did not pass: hidden two (not passed)',
      tests: { failed: ['hidden two'], missing: [] },
    });
  });

  it('an evaluation job is graded and publishes nothing; an empty agent is not graded', async () => {
    h = await createHarness();
    await h.agent(implementsFeature);
    const graded = h.job({ title: 'Add two()', source: evalSource(1), hidden_tests: { patch: hiddenPatch } });
    await h.drain(graded);
    const run = await h.store.get(graded.id);
    expect(outcomeOf(run)).toBe('succeeded');
    expect(run?.grade).toMatchObject({ resolved: true, reason: 'every check passed' });
    expect(run?.pull_request).toBeUndefined();
    expect(run?.stages.at(-2)).toMatchObject({
      stage: 'publishing',
      note: 'an evaluation: graded, nothing is published',
    });
    expect(await git(h.origin, ['branch', '--list', 'ai/*'])).toBe('');

    await h.agent('// does nothing');
    const empty = h.job({ title: 'Add two()', source: evalSource(2), hidden_tests: { patch: hiddenPatch } });
    await h.drain(empty);
    const none = await h.store.get(empty.id);
    // An agent that changes nothing gets its fix attempts, as in any job, then the run fails ungraded.
    expect(none).toMatchObject({ outcome: 'failed', error: { code: 'fix_attempts_exhausted' } });
    expect(none?.grade).toBeUndefined();
  });

  it('tests that do not apply grade unresolved, saying so', async () => {
    h = await createHarness();
    await h.agent(implementsFeature);
    const broken = hiddenPatch.replace('@@ -0,0 +1,4 @@', '@@ -1,2 +1,4 @@\n old line\n old line');
    const job = h.job({ title: 'Add two()', source: evalSource(), hidden_tests: { patch: broken } });
    await h.drain(job);
    const run = await h.store.get(job.id);
    expect(run?.grade?.resolved).toBe(false);
    expect(run?.grade?.reason).toMatch(/^the hidden tests did not apply: /);
    expect(run?.grade?.checks).toEqual([]);
  });
});
