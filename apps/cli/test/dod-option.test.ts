import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { createTempDir, createTempRepo, type TempDir, type TempRepo } from '@codefleet/testkit';
import { cli } from './cli-helpers.js';

// `--dod` takes argv lists; the form the job error suggests ([sh, -c, "…"]) once reached the
// worker split on spaces (`[sh,` `-c,` …) and failed there with no reason recorded.
describe('codefleet enqueue --dod', () => {
  let dir: TempDir;
  let repo: TempRepo;
  beforeEach(async () => {
    dir = await createTempDir('cli-dod');
    repo = await createTempRepo({ files: { 'notes.txt': 'hello\n' } });
    const agent = join(dir.path, 'agent.mjs');
    await writeFile(
      agent,
      "import fs from 'node:fs';\nconst w = process.argv[process.argv.indexOf('--workdir') + 1];\nfs.appendFileSync(w + '/notes.txt', 'more\\n');\n",
    );
    await writeFile(
      join(dir.path, 'config.yaml'),
      `data_dir: ./data\nlogging:\n  level: silent\nagents:\n  default: script\n  script:\n    module: ${agent}\n`,
    );
  });
  afterEach(async () => {
    await repo.dispose();
    await dir.dispose();
  });

  it('runs a YAML argv with a shell line, a JSON argv and a list of argvs, each as written', async () => {
    const queued = await cli(
      dir.path,
      'enqueue',
      '--repo',
      repo.path,
      '--title',
      'Append more notes',
      '--dod',
      '[sh, -c, "grep -q more notes.txt && echo dod-shell-ran"]',
      '["git","--version"]',
      '[[test, -f, notes.txt], [true, 0]]',
    );
    expect(queued).toMatchObject({ code: 0, err: '' });
    const id = queued.out.replace('enqueued ', '');
    expect((await cli(dir.path, 'worker', '--once')).out).toContain('processed 1: 1 done');
    const run = JSON.parse((await cli(dir.path, 'show', id, '--json')).out) as {
      dod_result: string;
      job: { dod: string[][] };
    };
    expect(run.dod_result).toBe('passed');
    // `0` stays an argument: a number in the YAML would have been refused as a bad job.
    expect(run.job.dod).toEqual([
      ['sh', '-c', 'grep -q more notes.txt && echo dod-shell-ran'],
      ['git', '--version'],
      ['test', '-f', 'notes.txt'],
      ['true', '0'],
    ]);
  });

  it('refuses a command string, a bad list and a non-list with the argv to write instead; nothing is queued', async () => {
    const plain = await cli(dir.path, 'enqueue', '--repo', repo.path, '--title', 't', '--dod', 'npm run lint');
    expect(plain.code).not.toBe(0);
    expect(plain.err).toContain(`--dod '["npm","run","lint"]'`);
    expect(plain.err).toContain(`'[sh, -c, "npm test && npm run lint"]'`);
    const shell = await cli(
      dir.path,
      'enqueue',
      '--repo',
      repo.path,
      '--title',
      't',
      '--dod',
      'npm test && npm run lint',
    );
    expect(shell.err).toContain('is not a command list');
    const unclosed = await cli(
      dir.path,
      'enqueue',
      '--repo',
      repo.path,
      '--title',
      't',
      '--dod',
      '[sh, -c, "npm test"',
    );
    expect(unclosed.err).toContain('is not a valid YAML/JSON list');
    const mapping = await cli(dir.path, 'enqueue', '--repo', repo.path, '--title', 't', '--dod', '[{a: b}]');
    expect(mapping.err).toContain('must be a non-empty list of strings');
    for (const refused of [shell, unclosed, mapping]) expect(refused.code).not.toBe(0);
    expect((await cli(dir.path, 'worker', '--once')).out).toContain('processed 0');
  });
});
