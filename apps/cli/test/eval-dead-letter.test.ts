import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { createTempDir, createTempRepo, waitFor, type TempDir, type TempRepo } from '@codefleet/testkit';
import { cli, openCliQueue } from './cli-helpers.js';

let dir: TempDir | undefined;
let repo: TempRepo | undefined;
afterEach(async () => {
  await repo?.dispose();
  await dir?.dispose();
});

describe('codefleet eval run and the dead-letter queue', () => {
  it('ends a job the queue dead-lettered before any run ended, saying why, instead of waiting for it', async () => {
    dir = await createTempDir('eval-dead');
    repo = await createTempRepo({ files: { 'src/lib.js': 'export const v = 0;\n', 'test/lib.test.js': '// 0\n' } });
    await repo.commit({ 'src/lib.js': 'export const v = 1;\n', 'test/lib.test.js': '// 1\n' }, 'Set v to 1');
    await writeFile(join(dir.path, 'config.yaml'), 'data_dir: ./data\nlogging:\n  level: silent\n');
    const mined = await cli(dir.path, 'eval', 'mine', '--repo', repo.path, '--name', 'acme/lib', '--out', 's.jsonl');
    expect(mined.out).toContain('1 tasks');

    const running = cli(dir.path, 'eval', 'run', '--suite', 's.jsonl', '--split', 'all', '--configuration', 'oracle');
    // No worker: the job is dead-lettered from the queue as a worker would on a job it cannot
    // run at all (its signature did not verify), before any run record exists.
    await waitFor(
      async () => {
        const queue = openCliQueue(dir?.path ?? '');
        try {
          const lease = await queue.claim({ workerId: 'test' });
          if (lease === undefined) return false;
          await lease.deadLetter('signature_invalid: the job does not verify');
          return true;
        } finally {
          await queue.close();
        }
      },
      { what: 'the eval job, dead-lettered' },
    );
    const ran = await running;
    expect(ran.code).toBe(1);
    expect(ran.err).toMatch(/eval run: eval-\S+ was dead-lettered: signature_invalid: the job does not verify/);
    expect(ran.out).toMatch(/^eval run: 0 of 1 finished/);
  });

  it('says what the suite has when --split matches nothing', async () => {
    dir = await createTempDir('eval-split');
    repo = await createTempRepo({ files: { 'src/lib.js': 'export const v = 0;\n', 'test/lib.test.js': '// 0\n' } });
    await repo.commit({ 'src/lib.js': 'export const v = 1;\n', 'test/lib.test.js': '// 1\n' }, 'Set v to 1');
    await writeFile(join(dir.path, 'config.yaml'), 'data_dir: ./data\nlogging:\n  level: silent\n');
    // One candidate: half of it, rounded, is the newest share: holdout.
    const mined = await cli(
      dir.path,
      'eval',
      'mine',
      '--repo',
      repo.path,
      '--name',
      'acme/lib',
      '--out',
      's.jsonl',
      '--holdout',
      '0.5',
    );
    expect(mined).toMatchObject({ code: 0, out: expect.stringContaining('1 tasks') });
    const ran = await cli(dir.path, 'eval', 'run', '--suite', 's.jsonl', '--configuration', 'oracle');
    expect(ran.code).toBe(1);
    expect(ran.err).toContain(
      'no instance of s.jsonl matches --split dev (it has 0 dev, 1 holdout; --split all takes every one)',
    );
    const missing = await cli(dir.path, 'eval', 'report', '--suite', 'nope.jsonl', '--configuration', 'oracle');
    expect(missing).toMatchObject({
      code: 1,
      err: expect.stringContaining('cannot read the suite nope.jsonl: ENOENT'),
    });
  });
});
