import { copyFile, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { execa } from 'execa';
import {
  createTempDir,
  closedPort,
  createTempRepo,
  gitTestEnv,
  startFixture,
  startRedis,
  testFleetKeyEnv,
  waitFor,
  type TempDir,
  type TempRepo,
} from '@codefleet/testkit';
import { bin, cli, fleetCli } from './cli-helpers.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const cliDir = fileURLToPath(new URL('../', import.meta.url));
const manifest = JSON.parse(await readFile(join(cliDir, 'package.json'), 'utf8')) as {
  version: string;
  bin: Record<string, string>;
};

describe("a newcomer's path", () => {
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
    for (const flag of ['--version', '-V'])
      expect(await cli(dir.path, flag)).toEqual({ code: 0, out: manifest.version, err: '' });
  });

  it('`npx --no-install codefleet` resolves from the repository root', async () => {
    const result = await execa('npx', ['--no-install', 'codefleet', '--version'], {
      cwd: root,
      reject: false,
      env: { PATH: process.env.PATH },
    });
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
    await writeFile(
      join(dir.path, 'config.yaml'),
      'data_dir: ./data\nlogging:\n  level: silent\nagents:\n  claude:\n    binary: no-such-claude-binary\n',
    );
    const missing = await cli(dir.path, 'enqueue', '--repo', repo.path, '--title', 'Add a thing', '--agent', 'claude');
    expect(missing.code).toBe(2);
    expect(missing.err).toMatch(/no-such-claude-binary not found on PATH.*agents\.claude\.binary/);
    // Nothing reached the queue.
    expect((await cli(dir.path, 'worker', '--once')).out).toMatch(/^processed 0:/);
  });

  it('enqueue on a remote queue warns (another host may run the agent) and enqueues', async () => {
    const redis = await startRedis();
    try {
      await writeFile(
        join(dir.path, 'config.yaml'),
        `data_dir: ./data\nlogging:\n  level: silent\nqueue:\n  backend: bullmq\n  bullmq:\n    url: ${redis.url}\n`,
      );
      const queued = await fleetCli(dir.path, 'enqueue', '--repo', repo.path, '--title', 'Add a thing');
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
    await writeFile(
      agent,
      [
        "import fs from 'node:fs';",
        'const arg = (name) => process.argv[process.argv.indexOf(name) + 1];',
        "if (fs.readFileSync(arg('--prompt-file'), 'utf8').includes('Break')) { console.log('cannot do that'); process.exit(1); }",
        "fs.appendFileSync(arg('--workdir') + '/notes.txt', 'more\\n');",
      ].join('\n'),
    );
    await writeFile(
      join(dir.path, 'config.yaml'),
      `data_dir: ./data\nlogging:\n  level: silent\nagents:\n  script:\n    module: ${agent}\nworker:\n  max_retries: 0\n  max_fix_attempts: 1\n`,
    );
    const env = { PATH: process.env.PATH ?? '', HOME: dir.path, ...gitTestEnv() };
    const run = async (...argv: string[]) =>
      execa(process.execPath, [bin, '--config', join(dir.path, 'config.yaml'), ...argv], {
        cwd: dir.path,
        env,
        extendEnv: false,
        reject: false,
      });
    expect((await run('enqueue', '--repo', repo.path, '--title', 'Break it')).exitCode).toBe(0);
    const failed = await run('worker', '--once');
    expect({ code: failed.exitCode, out: failed.stdout }).toEqual({
      code: 1,
      out: expect.stringMatching(/^processed 1: /),
    });
    expect((await run('enqueue', '--repo', repo.path, '--title', 'Append more notes')).exitCode).toBe(0);
    const done = await run('worker', '--once');
    expect({ code: done.exitCode, out: done.stdout }).toEqual({
      code: 0,
      out: 'processed 1: 1 done, 0 retrying, 0 dead-lettered, 0 released',
    });
  });

  it('worker --once gives up on a queue that does not answer, after --give-up-after seconds', async () => {
    // A port nobody listens on: the BullMQ queue opens, and its claims wait for a connection.
    // Not a freePort(): another suite's redis-server could take that one and answer.
    const port = await closedPort();
    await writeFile(join(dir.path, 'agent.mjs'), '');
    await writeFile(
      join(dir.path, 'config.yaml'),
      `data_dir: ./data\nlogging:\n  level: silent\nagents:\n  script:\n    module: ./agent.mjs\nqueue:\n  backend: bullmq\n  bullmq:\n    url: redis://127.0.0.1:${port}\n`,
    );
    const result = await execa(
      process.execPath,
      [bin, '--config', join(dir.path, 'config.yaml'), 'worker', '--once', '--give-up-after', '2'],
      {
        cwd: dir.path,
        env: { PATH: process.env.PATH ?? '', HOME: dir.path, ...testFleetKeyEnv() },
        extendEnv: false,
        reject: false,
        timeout: 100_000,
      },
    );
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toMatch(/^error \(queue_unavailable\): the queue did not answer for \d+ s: gave up/m);
  });

  it('a second SIGINT stops the worker at once (exit 130); the job is redelivered to another worker', async () => {
    const agent = join(dir.path, 'agent.mjs');
    // First delivery: says it started, then works "forever". Second: does the task.
    await writeFile(
      agent,
      [
        "import fs from 'node:fs';",
        'const arg = (name) => process.argv[process.argv.indexOf(name) + 1];',
        `const marker = ${JSON.stringify(join(dir.path, 'agent-home'))};`,
        "if (!fs.existsSync(marker)) { fs.mkdirSync(marker); console.log('working'); setInterval(() => undefined, 1000); }",
        "else fs.appendFileSync(arg('--workdir') + '/notes.txt', 'more\\n');",
      ].join('\n'),
    );
    // Long grace and a long-running agent: only a forced stop ends the first worker soon. A
    // short lease for the first worker's claim, so the second does not wait two minutes for
    // the job; a long one for the second's, which a loaded machine must not see expire.
    const config = (leaseSeconds: number) =>
      [
        'data_dir: ./data',
        'logging:\n  level: info',
        `agents:\n  script:\n    module: ${agent}`,
        `queue:\n  lease_seconds: ${leaseSeconds}`,
        'worker:\n  shutdown_grace_seconds: 3600\n  max_retries: 3',
        // No sandbox, so the agent can leave a mark outside its working copy for the test.
        'sandbox:\n  mode: none',
        '',
      ].join('\n');
    await writeFile(join(dir.path, 'config.yaml'), config(3));
    await writeFile(join(dir.path, 'config-long-lease.yaml'), config(600));
    const env = { PATH: process.env.PATH ?? '', HOME: join(dir.path, 'home'), ...gitTestEnv() };
    const args = ['--config', join(dir.path, 'config.yaml')];
    expect(
      (
        await execa(process.execPath, [bin, ...args, 'enqueue', '--repo', repo.path, '--title', 'Append more notes'], {
          cwd: dir.path,
          env,
          extendEnv: false,
        })
      ).exitCode,
    ).toBe(0);
    const first = startFixture(bin, [...args, 'worker'], { cwd: dir.path, env });
    await first.waitForLine(/"event":"job.claimed"/);
    await waitFor(
      async () =>
        (await stat(join(dir.path, 'agent-home')).then(
          () => true,
          () => false,
        )) || undefined,
      { what: 'the agent to start' },
    );
    first.kill('SIGINT');
    await first.waitForLine(/"event":"worker.interrupted"/);
    first.kill('SIGINT');
    expect(await first.exited).toEqual({ exitCode: 130, signal: undefined });
    expect(first.lines.some((line) => line.includes('"event":"worker.stopped_now"'))).toBe(true);
    // The lease expires, and another worker runs the job to its end.
    const second = startFixture(bin, ['--config', join(dir.path, 'config-long-lease.yaml'), 'worker'], {
      cwd: dir.path,
      env,
    });
    try {
      await second.waitForLine(/"event":"job.settled"/);
    } finally {
      second.kill('SIGTERM');
      await second.exited;
    }
    const shown = await execa(process.execPath, [bin, ...args, 'runs', '--json'], {
      cwd: dir.path,
      env,
      extendEnv: false,
    });
    // Every claim is an attempt: the first worker's, then the second's. A first worker kept
    // from heartbeating for its 3 s lease by a loaded machine loses the job and claims it once
    // more before its stop (CI on Node 22 and 24 once saw attempts: 3); its log shows that claim.
    const claims = (lines: readonly string[]) => lines.filter((line) => line.includes('"event":"job.claimed"')).length;
    expect(claims(second.lines)).toBe(1);
    expect(JSON.parse(shown.stdout)).toMatchObject([
      { outcome: 'succeeded', attempts: claims(first.lines) + claims(second.lines) },
    ]);
  });

  it('logs are pretty on a terminal (a pseudo-TTY from util-linux script), JSON in a pipe; --log-format overrides', async () => {
    await writeFile(join(dir.path, 'agent.mjs'), '');
    await writeFile(join(dir.path, 'config.yaml'), 'data_dir: ./data\nagents:\n  script:\n    module: ./agent.mjs\n');
    const env = { PATH: process.env.PATH ?? '', HOME: dir.path };
    const command = (...extra: string[]) =>
      [process.execPath, bin, '--config', join(dir.path, 'config.yaml'), ...extra, 'worker', '--once']
        .map((word) => `'${word}'`)
        .join(' ');
    const onTty = async (...extra: string[]) =>
      (await execa('script', ['-qec', command(...extra), '/dev/null'], { cwd: dir.path, env, extendEnv: false }))
        .stdout;
    const tty = await onTty();
    // (Each log line on a terminal begins by clearing its row: see the status line test.)
    // eslint-disable-next-line no-control-regex
    expect(tty).toMatch(/^(?:\r\x1b\[2K)?\d{4}-\d\d-\d\dT[\d:.]+Z INFO {2}sandbox: .* event=sandbox\.ready/m);
    expect(tty).not.toContain('{"level"');
    expect(await onTty('--log-format', 'json')).toMatch(/^\{"level":"info".*"event":"sandbox\.ready"/m);
    const piped = await execa(process.execPath, [bin, '--config', join(dir.path, 'config.yaml'), 'worker', '--once'], {
      cwd: dir.path,
      env,
      extendEnv: false,
    });
    expect(piped.stdout).toMatch(/^\{"level":"info".*"event":"sandbox\.ready"/m);
    expect(
      (
        await execa(
          process.execPath,
          [bin, '--config', join(dir.path, 'config.yaml'), '--log-format', 'pretty', 'worker', '--once'],
          { cwd: dir.path, env, extendEnv: false },
        )
      ).stdout,
    ).toMatch(/Z INFO {2}sandbox: /);
  });

  it("a running job shows its stage and the agent's last output line: a status line on a terminal, job.progress lines in a pipe", async () => {
    const release = join(dir.path, 'release');
    // Says something with an escape sequence in it, then waits for the test to have seen it.
    await writeFile(
      join(dir.path, 'agent.mjs'),
      [
        "import fs from 'node:fs';",
        'const arg = (name) => process.argv[process.argv.indexOf(name) + 1];',
        "console.log('thinking \\x1b[31mhard\\x1b[0m about it');",
        `while (!fs.existsSync(${JSON.stringify(release)})) await new Promise((r) => setTimeout(r, 100));`,
        "fs.appendFileSync(arg('--workdir') + '/notes.txt', arg('--pass') + '\\n');",
      ].join('\n'),
    );
    // No sandbox: the agent waits for a file outside its working copy.
    await writeFile(
      join(dir.path, 'config.yaml'),
      'data_dir: ./data\nlogging:\n  level: info\nagents:\n  script:\n    module: ./agent.mjs\nsandbox:\n  mode: none\n',
    );
    const env = { PATH: process.env.PATH ?? '', HOME: dir.path, ...gitTestEnv() };
    const args = [bin, '--config', join(dir.path, 'config.yaml')];
    const enqueue = () =>
      execa(process.execPath, [...args, 'enqueue', '--repo', repo.path, '--title', `Append ${Math.random()}`], {
        cwd: dir.path,
        env,
        extendEnv: false,
      });

    await enqueue();
    const command = [process.execPath, ...args, 'worker', '--once'].map((word) => `'${word}'`).join(' ');
    // A pseudo-terminal made by script has no size until one is set.
    const tty = execa('script', ['-qec', `stty cols 200; ${command}`, '/dev/null'], {
      cwd: dir.path,
      env,
      extendEnv: false,
      reject: false,
    });
    let screen = '';
    tty.stdout!.on('data', (chunk: Buffer) => {
      screen += chunk.toString('utf8');
    });
    try {
      await waitFor(
        () =>
          /\[implementing\] · pass implement · attempt 1 · agent \d+s · job \d+s · thinking hard about it/.test(
            screen,
          ) || undefined,
        { what: 'the status line' },
      );
    } finally {
      await writeFile(release, '');
    }
    expect({ code: (await tty).exitCode, screen: screen.includes('processed 1: 1 done') }).toEqual({
      code: 0,
      screen: true,
    });
    // The agent's escape sequence never reached the terminal.
    expect(screen).not.toContain('\x1b[31m');
    // A log line clears the status line's row first, so no line starts with status text.
    const rows = screen.split('\n').map(
      (row) =>
        row
          .split('\r')
          .filter((part) => part !== '')
          .at(-1) ?? '',
    );
    const logRows = rows.filter((row) => / INFO {2}/.test(row));
    expect(logRows.length).toBeGreaterThan(0);
    // eslint-disable-next-line no-control-regex
    for (const row of logRows) expect(row).toMatch(/^(\x1b\[2K)?\d{4}-\d\d-\d\dT/);

    await enqueue();
    const piped = await execa(process.execPath, [...args, 'worker', '--once'], {
      cwd: dir.path,
      env,
      extendEnv: false,
    });
    const progress = piped.stdout
      .split('\n')
      .filter((line) => line.includes('"event":"job.progress"'))
      .map((line) => JSON.parse(line) as { stage: string });
    expect(progress.map((p) => p.stage)).toEqual(
      expect.arrayContaining(['preparing', 'implementing', 'testing', 'done']),
    );
  });
});
