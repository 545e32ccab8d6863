import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { execa } from 'execa';
import { createTempDir, createTempRepo, freePort, gitTestEnv, startRedis, type TempDir, type TempRepo } from '@codefleet/testkit';
import { bin, cli } from './cli-helpers.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const cliDir = fileURLToPath(new URL('../', import.meta.url));
const manifest = JSON.parse(await readFile(join(cliDir, 'package.json'), 'utf8')) as { version: string; bin: Record<string, string> };

describe('a newcomer\'s path', () => {
  let dir: TempDir;
  let repo: TempRepo;
  beforeEach(async () => {
    dir = await createTempDir('cli-newcomer');
    repo = await createTempRepo({ files: { 'notes.txt': 'hello\n' } });
  });
  afterEach(async () => {
    await repo.dispose();
    await dir.dispose();
  });

  it('--version and -V print the package.json version', async () => {
    await writeFile(join(dir.path, 'config.yaml'), 'data_dir: ./data\n');
    for (const flag of ['--version', '-V']) expect(await cli(dir.path, flag)).toEqual({ code: 0, out: manifest.version, err: '' });
  });

  it('`npx --no-install codefleet` resolves from the repository root', async () => {
    const result = await execa('npx', ['--no-install', 'codefleet', '--version'], { cwd: root, reject: false, env: { PATH: process.env.PATH } });
    expect({ code: result.exitCode, out: result.stdout.trim() }).toEqual({ code: 0, out: manifest.version });
    // npm links (and marks executable) only a file that exists when `npm ci` runs, before any
    // build: the bin is committed, executable, and outside dist/.
    const target = manifest.bin.codefleet!;
    expect(target).not.toMatch(/dist\//);
    const staged = await execa('git', ['ls-files', '--stage', '--', target], { cwd: cliDir });
    expect(staged.stdout).toMatch(/^100755 /);
  });

  it('the bin says how to build when the CLI is not built yet', async () => {
    const bare = await mkdtemp(join(tmpdir(), 'cli-unbuilt-'));
    try {
      await writeFile(join(bare, 'package.json'), '{"type":"module"}');
      await execa('mkdir', ['-p', join(bare, 'bin')]);
      await copyFile(join(cliDir, manifest.bin.codefleet!), join(bare, 'bin', 'codefleet.js'));
      const result = await execa(process.execPath, [join(bare, 'bin', 'codefleet.js'), '--version'], { reject: false });
      expect(result.exitCode).toBe(1);
      expect(result.stderr).toContain('run `npm run build`');
    } finally {
      await rm(bare, { recursive: true, force: true });
    }
  });

  it('enqueue on the local queue refuses a job whose agent cannot run, naming the setting to change', async () => {
    // The shipped config.yaml: its default agent (script, no module) must not accept a job a worker would dead-letter.
    await copyFile(join(root, 'config.yaml'), join(dir.path, 'config.yaml'));
    const shipped = await cli(dir.path, 'enqueue', '--repo', repo.path, '--title', 'Add a thing');
    expect(shipped.code).toBe(2);
    expect(shipped.err).toContain('agents.script.module');
    expect(shipped.err).toContain('agents.default');
    expect(shipped.out).toBe('');
    // A CLI agent whose program is not on PATH; --agent names the agent of this job.
    await writeFile(join(dir.path, 'config.yaml'), 'data_dir: ./data\nlogging:\n  level: silent\nagents:\n  claude:\n    binary: no-such-claude-binary\n');
    const missing = await cli(dir.path, 'enqueue', '--repo', repo.path, '--title', 'Add a thing', '--agent', 'claude');
    expect(missing.code).toBe(2);
    expect(missing.err).toMatch(/no-such-claude-binary not found on PATH.*agents\.claude\.binary/);
    // Nothing reached the queue.
    expect((await cli(dir.path, 'worker', '--once')).out).toMatch(/^processed 0:/);
  });

  it('enqueue on a remote queue warns (another host may run the agent) and enqueues', async () => {
    const redis = await startRedis();
    try {
      await writeFile(join(dir.path, 'config.yaml'), `data_dir: ./data\nlogging:\n  level: silent\nqueue:\n  backend: bullmq\n  bullmq:\n    url: ${redis.url}\n`);
      const queued = await cli(dir.path, 'enqueue', '--repo', repo.path, '--title', 'Add a thing');
      expect(queued.code).toBe(0);
      expect(queued.out).toMatch(/^enqueued [0-9a-f-]{36}$/);
      expect(queued.err).toMatch(/^warning: agent "script" has no module on this host; .*agents\.script\.module/);
    } finally {
      await redis.stop();
    }
  });

  it('worker --once exits 1 when its job failed, 0 when it succeeded', async () => {
    const agent = join(dir.path, 'agent.mjs');
    // Fails on the first task, edits a file on the second.
    await writeFile(agent, [
      "import fs from 'node:fs';",
      "const arg = (name) => process.argv[process.argv.indexOf(name) + 1];",
      "if (fs.readFileSync(arg('--prompt-file'), 'utf8').includes('Break')) { console.log('cannot do that'); process.exit(1); }",
      "fs.appendFileSync(arg('--workdir') + '/notes.txt', 'more\\n');",
    ].join('\n'));
    await writeFile(join(dir.path, 'config.yaml'), `data_dir: ./data\nlogging:\n  level: silent\nagents:\n  script:\n    module: ${agent}\nworker:\n  max_retries: 0\n  max_fix_attempts: 1\n`);
    const env = { PATH: process.env.PATH ?? '', HOME: dir.path, ...gitTestEnv() };
    const run = async (...argv: string[]) => execa(process.execPath, [bin, '--config', join(dir.path, 'config.yaml'), ...argv], { cwd: dir.path, env, extendEnv: false, reject: false });
    expect((await run('enqueue', '--repo', repo.path, '--title', 'Break it')).exitCode).toBe(0);
    const failed = await run('worker', '--once');
    expect({ code: failed.exitCode, out: failed.stdout }).toEqual({ code: 1, out: expect.stringMatching(/^processed 1: /) });
    expect((await run('enqueue', '--repo', repo.path, '--title', 'Append more notes')).exitCode).toBe(0);
    const done = await run('worker', '--once');
    expect({ code: done.exitCode, out: done.stdout }).toEqual({ code: 0, out: 'processed 1: 1 done, 0 retrying, 0 dead-lettered, 0 released' });
  }, 120_000);

  it('worker --once gives up on a queue that does not answer, after --give-up-after seconds', async () => {
    // A port nobody listens on: the BullMQ queue opens, and its claims wait for a connection.
    const port = await freePort();
    await writeFile(join(dir.path, 'agent.mjs'), '');
    await writeFile(join(dir.path, 'config.yaml'), `data_dir: ./data\nlogging:\n  level: silent\nagents:\n  script:\n    module: ./agent.mjs\nqueue:\n  backend: bullmq\n  bullmq:\n    url: redis://127.0.0.1:${port}\n`);
    const result = await execa(process.execPath, [bin, '--config', join(dir.path, 'config.yaml'), 'worker', '--once', '--give-up-after', '2'], {
      cwd: dir.path, env: { PATH: process.env.PATH ?? '', HOME: dir.path }, extendEnv: false, reject: false, timeout: 100_000,
    });
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toMatch(/^error \(queue_unavailable\): the queue did not answer for \d+ s: gave up/m);
  }, 120_000);
});
