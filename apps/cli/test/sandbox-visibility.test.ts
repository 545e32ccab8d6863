import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { createTempDir, createTempRepo, gitTestEnv, type TempDir, type TempRepo } from '@codefleet/testkit';
import { execa } from 'execa';
import { runCli } from '../src/index.js';
import { bin } from './cli-helpers.js';

// What the host finds and what a run can start are two things: the sandbox (real bwrap
// here) hides the worker's HOME, where pyenv, rustup and per-user CLIs install.
describe('doctor and enqueue ask the sandbox runs get', () => {
  let dir: TempDir;
  let home: TempDir;
  let repo: TempRepo;
  beforeEach(async () => {
    dir = await createTempDir('cli-visibility');
    home = await createTempDir('cli-visibility-home');
    repo = await createTempRepo();
  });
  afterEach(async () => {
    await repo.dispose();
    await home.dispose();
    await dir.dispose();
  });
  const run = async (...argv: string[]) => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runCli(['--config', join(dir.path, 'config.yaml'), ...argv], {
      out: (l) => out.push(l),
      err: (l) => err.push(l),
      cwd: dir.path,
      env: { PATH: process.env.PATH ?? '', HOME: home.path, ...gitTestEnv() },
    });
    return { code, out: out.join('\n'), err: err.join('\n') };
  };

  it('doctor runs each toolchain program in the sandbox: a shim shown to runs whose home is hidden is not ok', async () => {
    // As pyenv installs: the shims directory is on the checks' PATH (and so shown to runs),
    // the shim needs ~/.pyenv behind it, which stays hidden with the rest of HOME.
    const pyenv = join(home.path, '.pyenv');
    await mkdir(join(pyenv, 'shims'), { recursive: true });
    await writeFile(join(pyenv, 'version'), '3.12.0\n');
    await writeFile(join(pyenv, 'shims', 'cf-pytest'), `#!/bin/sh\nexec cat ${join(pyenv, 'version')}\n`, {
      mode: 0o755,
    });
    const config = (extra: string) =>
      `data_dir: ./data\nlogging:\n  level: silent\n${extra}verification:\n  env:\n    path: [${join(pyenv, 'shims')}]\n  toolchains:\n    python:\n      build: []\n      format: []\n      lint: []\n      test: [cf-pytest]\n`;
    await writeFile(join(dir.path, 'config.yaml'), config(''));
    const hidden = await run('doctor');
    // The host finds it and it runs here; in the sandbox its home is missing.
    expect(hidden.out).toMatch(
      /^ok {4}WARNING toolchain python: not usable by runs.*cf-pytest \(.*\): cf-pytest --version exited 1 there: cat: .*version: No such file or directory\n {6}fix: install it system-wide .*~\/\.pyenv.* to sandbox\.read_paths/m,
    );
    // The fix it names works.
    await writeFile(join(dir.path, 'config.yaml'), config(`sandbox:\n  read_paths: [${pyenv}]\n`));
    expect((await run('doctor')).out).toMatch(/^ok {4}toolchain python: cf-pytest \(run in the sandbox\)$/m);
  });

  it('enqueue refuses an agent program only the host HOME holds, naming sandbox.read_paths; queued once it is shown', async () => {
    const userBin = join(home.path, '.local', 'bin');
    await mkdir(userBin, { recursive: true });
    await writeFile(join(userBin, 'claude'), '#!/bin/sh\necho 1.0.0\n', { mode: 0o755 });
    const config = `data_dir: ./data\nlogging:\n  level: silent\nagents:\n  default: claude\n  claude:\n    binary: ${join(userBin, 'claude')}\n`;
    await writeFile(join(dir.path, 'config.yaml'), config);
    const refused = await run('enqueue', '--repo', repo.path, '--title', 'Add a thing');
    expect(refused.code).toBe(2);
    expect(refused.err).toMatch(
      /^not enqueued: agent claude: .*\/\.local\/bin\/claude is on this host, but runs cannot start it in the sandbox \(.*which the sandbox does not show.*\).*sandbox\.read_paths/,
    );
    // Nothing reached the queue; the worker (the real binary, for its log) says so at start too.
    await writeFile(join(dir.path, 'config.yaml'), config.replace('level: silent', 'level: info'));
    const worker = await execa(
      process.execPath,
      [bin, '--config', join(dir.path, 'config.yaml'), '--log-format', 'json', 'worker', '--once'],
      {
        cwd: dir.path,
        env: { PATH: process.env.PATH ?? '', HOME: home.path, ...gitTestEnv() },
        extendEnv: false,
        reject: false,
      },
    );
    expect(worker.stdout).toMatch(/^processed 0:/m);
    expect(`${worker.stdout}\n${worker.stderr}`).toMatch(
      /"event":"agent\.unusable".*runs cannot start it in the sandbox/,
    );
    await writeFile(join(dir.path, 'config.yaml'), `${config}sandbox:\n  read_paths: [${userBin}]\n`);
    expect(await run('enqueue', '--repo', repo.path, '--title', 'Add a thing')).toMatchObject({ code: 0, err: '' });
  });

  it('a queued job whose agent program the sandbox does not show is dead-lettered at once, not retried', async () => {
    const userBin = join(home.path, 'bin');
    await mkdir(userBin, { recursive: true });
    await writeFile(join(userBin, 'my-agent'), '#!/bin/sh\necho hi > notes.txt\n', { mode: 0o755 });
    const config = `data_dir: ./data
logging:
  level: silent
agents:
  default: command
  command:
    argv: [${join(userBin, 'my-agent')}, "{prompt_file}"]\n`;
    // Queued while the config showed it (as a fleet host with another config may queue it) ...
    await writeFile(
      join(dir.path, 'config.yaml'),
      `${config}sandbox:
  read_paths: [${userBin}]\n`,
    );
    const queued = await run('enqueue', '--repo', repo.path, '--title', 'Add a thing');
    expect(queued).toMatchObject({ code: 0, err: '' });
    // ... and run where it does not: one attempt, then the dead-letter queue with the fix.
    await writeFile(join(dir.path, 'config.yaml'), config);
    expect((await run('worker', '--once')).out).toContain('processed 1: 0 done, 0 retrying, 1 dead-lettered');
    expect((await run('dlq', 'list')).out).toMatch(/attempts 1 .*\n.*permanent error \(agent_crashed\) is not retried/);
    // `show` prints the whole reason: the program, and the fix.
    const shown = (await run('show', queued.out.replace('enqueued ', ''))).out;
    expect(shown).toMatch(/my-agent, which the sandbox does not show; add its directory .* to sandbox\.read_paths/);
  });
});
