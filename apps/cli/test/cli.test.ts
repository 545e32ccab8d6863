import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { createTempDir, createTempRepo, closedPort, gitTestEnv, startFixture, type TempDir } from '@codefleet/testkit';
import { runCli } from '../src/index.js';
import { bin, cli, openCliQueue } from './cli-helpers.js';

describe('codefleet CLI', () => {
  let dir: TempDir;
  beforeEach(async () => {
    dir = await createTempDir('cli');
    await writeFile(join(dir.path, 'config.yaml'), 'data_dir: ./data\nlogging:\n  level: silent\n');
  });
  afterEach(async () => {
    await dir.dispose();
  });

  /** A config whose script agent (`agent.mjs`, this source) can run here, as enqueue requires; `more` YAML before it. */
  const useScriptAgent = async (source: string, more = '') => {
    await writeFile(join(dir.path, 'agent.mjs'), source);
    await writeFile(
      join(dir.path, 'config.yaml'),
      `data_dir: ./data\nlogging:\n  level: silent\n${more}agents:\n  script:\n    module: ./agent.mjs\n`,
    );
  };

  it('enqueue validates the job and names the bad field', async () => {
    const bad = await cli(dir.path, 'enqueue', '--repo', 'https://user:secret@example.com/r.git', '--title', 'x');
    expect(bad.code).toBe(1);
    expect(bad.err).toMatch(/repo/);
    expect(bad.err).not.toContain('secret');
    // A relative local path is resolved against the working directory (and must be a repository).
    const repo = await createTempRepo();
    try {
      // enqueue refuses a job whose agent could not run here: this one names one that can.
      await useScriptAgent('');
      const ok = await cli(
        dir.path,
        'enqueue',
        '--repo',
        relative(dir.path, repo.path),
        '--title',
        'Add a thing',
        '--body',
        'details',
      );
      expect(ok).toMatchObject({ code: 0, err: '' });
      expect(ok.out).toMatch(/^enqueued [0-9a-f-]{36}$/);
    } finally {
      await repo.dispose();
    }
  });

  it('enqueue --base-commit pins the job to a commit; a short or named one is refused, naming the field', async () => {
    const repo = await createTempRepo();
    try {
      await useScriptAgent('');
      const head = await repo.git(['rev-parse', 'HEAD']);
      const args = ['enqueue', '--repo', repo.path, '--title', 'Replay a fix'];
      for (const sha of [head.slice(0, 12), 'main']) {
        const refused = await cli(dir.path, ...args, '--base-commit', sha);
        expect(refused.code).toBe(1);
        expect(refused.err).toMatch(/base_commit: expected a full commit id/);
      }
      expect(await cli(dir.path, ...args, '--base-commit', head)).toMatchObject({ code: 0, err: '' });
      const queue = openCliQueue(dir.path);
      try {
        expect((await queue.claim({ workerId: 'test' }))?.job).toMatchObject({ base_commit: head });
      } finally {
        await queue.close();
      }
    } finally {
      await repo.dispose();
    }
  });

  it('enqueue --patch-file: the worker applies that patch, no agent, and publishes it verified; a huge file is refused', async () => {
    const repo = await createTempRepo({ files: { 'notes.txt': 'hello\n' } });
    try {
      // The agent would fail the job: a patch job must not run it.
      await useScriptAgent("throw new Error('the agent ran');\n", 'worker:\n  max_retries: 0\n');
      const diff = ['--- a/notes.txt', '+++ b/notes.txt', '@@ -1 +1,2 @@', ' hello', '+from the patch', ''].join('\n');
      await writeFile(join(dir.path, 'fix.diff'), diff);
      await writeFile(join(dir.path, 'huge.diff'), 'x'.repeat(1024 * 1024 + 1));
      const args = ['enqueue', '--repo', repo.path, '--title', 'Apply the given fix'];
      const huge = await cli(dir.path, ...args, '--patch-file', 'huge.diff');
      expect(huge.code).toBe(1);
      expect(huge.err).toContain('--patch-file huge.diff: 1048577 bytes, more than a job carries (1048576)');
      expect(await cli(dir.path, ...args, '--patch-file', 'fix.diff')).toMatchObject({ code: 0, err: '' });
      expect((await cli(dir.path, 'worker', '--once')).out).toContain('processed 1: 1 done');
      const [listed] = JSON.parse((await cli(dir.path, 'runs', '--json')).out) as { run_id: string }[];
      const shown = await cli(dir.path, 'show', listed?.run_id ?? '', '--json');
      const run = JSON.parse(shown.out) as { outcome: string; branch: string; agent_runs: { agent: string }[] };
      expect(run.outcome).toBe('succeeded');
      expect(run.agent_runs.map((r) => r.agent)).toEqual(['patch', 'patch']);
      expect(await repo.git(['show', `${run.branch}:notes.txt`])).toBe('hello\nfrom the patch');
    } finally {
      await repo.dispose();
    }
  });

  it('reports config problems with the key path and exit code 2', async () => {
    await writeFile(join(dir.path, 'config.yaml'), 'queue:\n  lease_seconds: abc\n');
    const result = await cli(dir.path, 'runs');
    expect(result.code).toBe(2);
    expect(result.err).toContain('queue.lease_seconds');
  });

  it('runs, show and dlq on an empty store say so plainly', async () => {
    expect((await cli(dir.path, 'runs')).out).toBe('no runs yet');
    const missing = await cli(dir.path, 'show', 'nope');
    expect(missing.code).toBe(1);
    expect(missing.err).toContain('no run nope');
    // The id `enqueue` printed is not a run until a worker claims the job: say so.
    expect(missing.err).toContain('still queued');
    // An empty answer under a filter is about the filter, not the store.
    expect((await cli(dir.path, 'runs', '--state', 'failed')).out).toBe('no runs match these filters');
    expect((await cli(dir.path, 'dlq', 'list')).out).toBe('dead-letter queue is empty');
    expect((await cli(dir.path, 'dlq', 'redrive', 'nope')).code).toBe(1);
  });

  it('worker --once runs a queued job to a PR; runs and show read the record', async () => {
    const repo = await createTempRepo({ files: { 'notes.txt': 'hello\n' } });
    try {
      const agent = join(dir.path, 'agent.mjs');
      await writeFile(
        agent,
        "import fs from 'node:fs';\nconst w = process.argv[process.argv.indexOf('--workdir') + 1];\nfs.appendFileSync(w + '/notes.txt', 'more\\n');\n",
      );
      await writeFile(
        join(dir.path, 'config.yaml'),
        `data_dir: ./data\nlogging:\n  level: silent\nagents:\n  default: script\n  script:\n    module: ${agent}\n`,
      );
      // A non-bare origin cannot receive a push to its checked-out branch, but the work branch is another one.
      const queued = await cli(
        dir.path,
        'enqueue',
        '--repo',
        repo.path,
        '--title',
        'Append more notes',
        '--dod',
        '[git, --version]',
      );
      const id = queued.out.replace('enqueued ', '');
      const worked = await cli(dir.path, 'worker', '--once');
      expect(worked.out).toContain('processed 1: 1 done');
      const runs = await cli(dir.path, 'runs', '--json');
      // The run record's keys (snake_case), as `show --json` prints them.
      const listed = JSON.parse(runs.out) as Record<string, unknown>[];
      expect(listed).toMatchObject([
        { run_id: id, stage: 'done', outcome: 'succeeded', attempts: 1, pull_request: { number: 1, draft: false } },
      ]);
      expect(Object.keys(listed[0]!).sort()).toEqual([
        'agent',
        'attempts',
        'created_at',
        'duration_ms',
        'job_id',
        'outcome',
        'pull_request',
        'repo',
        'requested_by',
        'run_id',
        'source',
        'stage',
        'status',
        'status_certain',
        'status_note',
        'task_key',
        'title',
        'updated_at',
        'worker',
      ]);
      expect(JSON.parse((await cli(dir.path, 'show', id, '--json')).out)).toMatchObject({
        run_id: id,
        created_at: listed[0]!.created_at,
        pull_request: { number: 1 },
      });
      const shown = await cli(dir.path, 'show', id);
      expect(shown.out).toMatch(/Timeline:[\s\S]*publishing[\s\S]*done/);
      expect(shown.out).toContain('dod     git --version');
    } finally {
      await repo.dispose();
    }
  });

  it('a worker waiting for jobs has not loaded the pipeline (agents, verification, forge)', async () => {
    // A module hook records every module the process loads; with --once on an empty queue
    // the worker starts, sweeps, finds nothing and exits.
    const loaded = join(dir.path, 'loaded.txt');
    await writeFile(
      join(dir.path, 'hooks.mjs'),
      [
        "import { appendFileSync } from 'node:fs';",
        'export async function load(url, context, next) {',
        `  appendFileSync(${JSON.stringify(loaded)}, url + '\\n');`,
        '  return next(url, context);',
        '}',
      ].join('\n'),
    );
    await writeFile(
      join(dir.path, 'register.mjs'),
      "import { register } from 'node:module';\nregister('./hooks.mjs', import.meta.url);\n",
    );
    const worker = startFixture(bin, ['--config', join(dir.path, 'config.yaml'), 'worker', '--once'], {
      cwd: dir.path,
      env: { PATH: process.env.PATH ?? '', HOME: dir.path },
      nodeArgs: ['--import', join(dir.path, 'register.mjs')],
    });
    expect(await worker.exited).toMatchObject({ exitCode: 0 });
    const urls = (await readFile(loaded, 'utf8')).split('\n');
    expect(urls.some((url) => /\/packages\/workspace\//.test(url))).toBe(true);
    expect(
      urls.filter((url) => /\/packages\/(pipeline|agents|verify|forge|patch)\/|@octokit|ollama/.test(url)),
    ).toEqual([]);
  });

  it('doctor checks each part and gives the fix for what fails', async () => {
    await writeFile(
      join(dir.path, 'config.yaml'),
      'data_dir: ./data\nagents:\n  default: command\n  command:\n    argv: [no-such-agent-binary, "{prompt_file}"]\n',
    );
    const result = await cli(dir.path, 'doctor');
    expect(result.code).toBe(1);
    expect(result.out).toMatch(/^ok {4}git version/m);
    expect(result.out).toMatch(/^ok {4}queue \(local\): depth 0/m);
    expect(result.out).toMatch(/FAIL {2}agent command: no-such-agent-binary not found on PATH\n {6}fix: /);
    expect(result.out).toMatch(/^ok {4}run store \(sqlite\): no runs yet/m);
    expect(result.out).toMatch(/^ok {4}spend today \(\d{4}-\d\d-\d\d UTC\): \$0\.0000, no daily budget/m);
    // Each toolchain's programs: node's are here; a missing one is a warning naming the fix.
    expect(result.out).toMatch(/^ok {4}toolchain node: npm\b/m);
  });

  it("doctor warns about a toolchain whose programs are not on the checks' PATH, and finds them through verification.env.path", async () => {
    const bin = join(dir.path, 'tools');
    await mkdir(bin, { recursive: true });
    await writeFile(join(bin, 'cf-test-cargo'), '#!/bin/sh\nexit 0\n', { mode: 0o755 });
    const config =
      'data_dir: ./data\nsandbox:\n  mode: none\nverification:\n  toolchains:\n    rust:\n      build: [cf-test-cargo, build]\n      format: []\n      lint: []\n      test: [cf-test-cargo, test]\n';
    await writeFile(join(dir.path, 'config.yaml'), config);
    const without = await cli(dir.path, 'doctor');
    expect(without.out).toMatch(
      /^ok {4}WARNING toolchain rust: cf-test-cargo not found on the checks' PATH.*\n {6}fix: install cf-test-cargo, or add its directory to verification.env.path/m,
    );
    await writeFile(join(dir.path, 'config.yaml'), `${config}  env:\n    path: [${bin}]\n`);
    expect((await cli(dir.path, 'doctor')).out).toMatch(/^ok {4}toolchain rust: cf-test-cargo$/m);
    // Found, but where the sandbox hides it (the worker's HOME, as rustup and pyenv install).
    const home = await createTempDir('cli-doctor-home');
    try {
      await mkdir(join(home.path, '.cargo', 'bin'), { recursive: true });
      await writeFile(join(home.path, '.cargo', 'bin', 'cf-test-cargo'), '#!/bin/sh\nexit 0\n', { mode: 0o755 });
      await writeFile(join(dir.path, 'config.yaml'), config.replace('sandbox:\n  mode: none\n', ''));
      const out: string[] = [];
      const path = `${join(home.path, '.cargo', 'bin')}:${process.env.PATH ?? ''}`;
      await runCli(['--config', join(dir.path, 'config.yaml'), 'doctor'], {
        out: (l) => out.push(l),
        err: (l) => out.push(l),
        cwd: dir.path,
        env: { PATH: path, HOME: home.path, ...gitTestEnv() },
      });
      // Run in the sandbox a run gets, which says it does not show it.
      expect(out.join('\n')).toMatch(
        /^ok {4}WARNING toolchain rust: not usable by runs.*cf-test-cargo \(.*\): cf-test-cargo is at .*, which the sandbox does not show.*\n {6}fix: install it system-wide .* to sandbox\.read_paths/m,
      );
    } finally {
      await home.dispose();
    }
  });

  it('runs, show and doctor report a fleet run store whose Redis is down instead of waiting for it', async () => {
    const url = `redis://:hunter2@127.0.0.1:${await closedPort()}`;
    await writeFile(
      join(dir.path, 'config.yaml'),
      `data_dir: ./data\nstore:\n  backend: redis\n  redis_url: ${url}\nlogging:\n  level: silent\n`,
    );
    for (const argv of [['runs'], ['show', 'some-run']]) {
      const result = await cli(dir.path, ...argv);
      expect(result.code).toBe(1);
      expect(result.err).toMatch(
        /store_unavailable.*the run store's Redis at redis:\/\/.*127\.0\.0\.1:\d+ is not reachable: connect ECONNREFUSED/,
      );
      expect(result.err).not.toContain('hunter2');
    }
    const doctor = await cli(dir.path, 'doctor');
    expect(doctor.out).toMatch(
      /FAIL {2}run store \(redis\) is not reachable: .*ECONNREFUSED.*\n {6}fix: check store.redis_url/,
    );
    expect(doctor.out).not.toContain('hunter2');
  });

  it("doctor names the default agent's missing API key variable without printing any key", async () => {
    await writeFile(
      join(dir.path, 'config.yaml'),
      'data_dir: ./data\nagents:\n  default: claude\n  claude:\n    binary: /bin/true\n',
    );
    const missing = await cli(dir.path, 'doctor');
    expect(missing.out).toMatch(
      /FAIL {2}agent claude: no API key in \$ANTHROPIC_API_KEY\n {6}fix: export ANTHROPIC_API_KEY=<key>/,
    );
    const out: string[] = [];
    await runCli(['--config', join(dir.path, 'config.yaml'), 'doctor'], {
      out: (l) => out.push(l),
      err: () => undefined,
      cwd: dir.path,
      env: { PATH: process.env.PATH, HOME: dir.path, ANTHROPIC_API_KEY: 'sk-ant-secret-value', ...gitTestEnv() },
    });
    expect(out.join('\n')).toMatch(/ok {4}agent claude: API key found in \$ANTHROPIC_API_KEY/);
    expect(out.join('\n')).not.toContain('sk-ant-secret-value');
  });
});

describe('npm run demo (the codefleet binary as a real process)', () => {
  it('opens a PR with the DoD passed and exits 0', async () => {
    const dir = await createTempDir('demo');
    try {
      await writeFile(join(dir.path, 'config.yaml'), 'data_dir: ./data\n');
      // Port 1 refuses: no Ollama, whatever runs on this machine, so the scripted agent.
      const proc = startFixture(bin, ['demo'], {
        cwd: dir.path,
        env: { PATH: process.env.PATH ?? '', HOME: dir.path, OLLAMA_HOST: '127.0.0.1:1', ...gitTestEnv() },
      });
      const exit = await proc.exited;
      const output = proc.lines.join('\n');
      expect({ exit, stderr: exit.exitCode === 0 ? '' : proc.stderr }).toEqual({
        exit: { exitCode: 0, signal: undefined },
        stderr: '',
      });
      expect(output).toContain('the agent is SCRIPTED');
      expect(output).toMatch(/FAIL test +attempt 1\.1 +test/);
      expect(output).toMatch(/Pull request #1 on the local forge/);
      expect(output).toContain('src/calc.js');
      expect(output).not.toContain('.codefleet/');
      expect(output).toContain('demo passed');

      // The real binary, reading what the demo left: listing commands exit 0.
      const runs = startFixture(bin, ['--config', join(dir.path, 'config.yaml'), 'runs'], {
        cwd: dir.path,
        env: { PATH: process.env.PATH ?? '', HOME: dir.path },
      });
      expect({ exit: await runs.exited, stderr: runs.stderr }).toEqual({
        exit: { exitCode: 0, signal: undefined },
        stderr: '',
      });

      // The commands the demo prints work as printed, from the repository root.
      const hints = proc.lines.filter((line) => line.startsWith('  npx codefleet ')).map((line) => line.trim());
      expect(hints).toHaveLength(2);
      const root = fileURLToPath(new URL('../../../', import.meta.url));
      const ran = await Promise.all(
        hints.map(async (hint) => {
          const result = await execa('sh', ['-c', hint], {
            cwd: root,
            env: { PATH: process.env.PATH ?? '', HOME: dir.path },
            extendEnv: false,
            reject: false,
          });
          return { hint, code: result.exitCode, out: result.stdout };
        }),
      );
      expect(ran[0]).toMatchObject({ code: 0, out: expect.stringMatching(/Timeline:[\s\S]*done/) });
      expect(ran[1]).toMatchObject({ code: 0, out: expect.stringContaining('Add a multiply(a, b) function') });
    } finally {
      await dir.dispose();
    }
  });
});
