import { existsSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from '@jest/globals';
import { createTempDir, createTempRepo, gitTestEnv, type TempDir, type TempRepo } from '@codefleet/testkit';
import { runCli } from '../src/index.js';

// The worker and its sandbox: it does not start without the one configured, says plainly
// when there is none, and even then (an agent can write the worker's HOME) a `git` planted
// on PATH never receives codefleet's own git calls: git is resolved once, at start.
let dir: TempDir;
let repo: TempRepo;
beforeEach(async () => {
  dir = await createTempDir('worker-sandbox');
  repo = await createTempRepo({ files: { 'notes.txt': 'hello\n' } });
});
afterEach(async () => {
  await repo.dispose();
  await dir.dispose();
});

it("a git planted on PATH by an unsandboxed agent never runs codefleet's commit or push", async () => {
  const planted = join(dir.path, '.local', 'bin');
  const log = join(dir.path, 'planted-git-ran.log');
  await mkdir(join(dir.path, 'agent'));
  const agent = join(dir.path, 'agent', 'agent.mjs');
  await writeFile(
    agent,
    [
      "import fs from 'node:fs';",
      `fs.mkdirSync(${JSON.stringify(planted)}, { recursive: true });`,
      `fs.writeFileSync(${JSON.stringify(join(planted, 'git'))}, '#!/bin/sh\\necho "$@" >> ${log}\\nexec /usr/bin/git "$@"\\n', { mode: 0o755 });`,
      "const w = process.argv[process.argv.indexOf('--workdir') + 1];",
      "fs.appendFileSync(w + '/notes.txt', 'more\\n');",
    ].join('\n'),
  );
  await writeFile(
    join(dir.path, 'config.yaml'),
    [
      'data_dir: ./data',
      'logging:',
      '  level: silent',
      'sandbox:',
      '  mode: none',
      'agents:',
      '  default: script',
      '  script:',
      `    module: ${agent}`,
      '',
    ].join('\n'),
  );
  const env = { PATH: `${planted}:${process.env.PATH ?? ''}`, HOME: dir.path, ...gitTestEnv() };
  const run = async (...argv: string[]) => {
    const out: string[] = [];
    const code = await runCli(['--config', join(dir.path, 'config.yaml'), ...argv], {
      out: (l) => out.push(l),
      err: (l) => out.push(l),
      cwd: dir.path,
      env,
    });
    return { code, out: out.join('\n') };
  };
  for (const title of ['one', 'two'])
    expect((await run('enqueue', '--repo', repo.path, '--title', title)).code).toBe(0);
  const worked = await run('worker', '--once');
  expect(worked.out).toContain('processed 2: 2 done');
  expect(existsSync(join(planted, 'git'))).toBe(true);
  expect(existsSync(log) ? readFileSync(log, 'utf8') : '').toBe('');
});

it('without its sandbox the worker refuses to start, naming the fix; doctor says the same', async () => {
  await writeFile(
    join(dir.path, 'config.yaml'),
    'data_dir: ./data\nlogging:\n  level: silent\nsandbox:\n  mode: bwrap\n',
  );
  // A PATH without bwrap on it (git is found by its absolute path elsewhere in the tests).
  const env = { PATH: '/nonexistent', HOME: dir.path, ...gitTestEnv() };
  const run = async (...argv: string[]) => {
    const out: string[] = [];
    const code = await runCli(['--config', join(dir.path, 'config.yaml'), ...argv], {
      out: (l) => out.push(l),
      err: (l) => out.push(l),
      cwd: dir.path,
      env,
    });
    return { code, out: out.join('\n') };
  };
  const worker = await run('worker', '--once');
  expect(worker.code).not.toBe(0);
  expect(worker.out).toMatch(/sandbox bwrap is not available: bwrap is not installed.*apt-get install bubblewrap/);
  expect(worker.out).not.toMatch(/processed/);
  const doctor = await run('doctor');
  expect(doctor.out).toMatch(
    /FAIL {2}sandbox bwrap: bwrap is not installed \(not on PATH\)\n {6}fix: install it: apt-get install bubblewrap/,
  );
});

it('sandbox: none is said plainly by doctor', async () => {
  await writeFile(join(dir.path, 'config.yaml'), 'data_dir: ./data\nsandbox:\n  mode: none\n');
  const out: string[] = [];
  await runCli(['--config', join(dir.path, 'config.yaml'), 'doctor'], {
    out: (l) => out.push(l),
    err: (l) => out.push(l),
    cwd: dir.path,
    env: { PATH: process.env.PATH ?? '', HOME: dir.path, ...gitTestEnv() },
  });
  expect(out.join('\n')).toMatch(/WARNING sandbox: none — agents and repository commands run as the worker's user/);
});
