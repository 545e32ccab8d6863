import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import {
  createTempDir,
  createTempRepo,
  git,
  gitTestEnv,
  startFixture,
  type TempDir,
  type TempRepo,
} from '@codefleet/testkit';
import { runCli } from '../src/index.js';
import { bin, cli } from './cli-helpers.js';

const quiet = 'logging:\n  level: silent\n';
const re = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe('usage errors are printed', () => {
  let dir: TempDir;
  let repo: TempRepo;
  beforeEach(async () => {
    dir = await createTempDir('cli-usage');
    repo = await createTempRepo();
    // enqueue refuses a job whose agent could not run here: these jobs name one that can.
    await writeFile(join(dir.path, 'agent.mjs'), '');
    await writeFile(
      join(dir.path, 'config.yaml'),
      `data_dir: ./data\n${quiet}agents:\n  script:\n    module: ./agent.mjs\n`,
    );
  });
  afterEach(async () => {
    await repo.dispose();
    await dir.dispose();
  });

  it('an error an action throws reaches stderr of the real binary, with exit 1', async () => {
    const proc = startFixture(
      bin,
      [
        '--config',
        join(dir.path, 'config.yaml'),
        'enqueue',
        '--repo',
        repo.path,
        '--title',
        't',
        '--body',
        'a',
        '--body-file',
        join(dir.path, 'config.yaml'),
      ],
      {
        cwd: dir.path,
        env: { PATH: process.env.PATH ?? '', HOME: dir.path, ...gitTestEnv() },
      },
    );
    expect(await proc.exited).toEqual({ exitCode: 1, signal: undefined });
    expect(proc.stderr.trim()).toBe('error: give --body or --body-file, not both');
    expect(proc.lines).toEqual([]);
  });

  it('enqueue refuses a local repository that is missing, empty, not a directory or not a git repository, naming it', async () => {
    const plain = join(dir.path, 'plain');
    await mkdir(plain);
    await mkdir(join(repo.path, 'sub'));
    const bare = join(dir.path, 'bare.git');
    await git(dir.path, ['init', '--quiet', '--bare', bare]);
    const cases: [string, RegExp][] = [
      [
        join(dir.path, 'missing'),
        new RegExp(`^error: --repo ${re(join(dir.path, 'missing'))}: no such file or directory$`),
      ],
      ['./missing', new RegExp(`^error: --repo ${re(join(dir.path, 'missing'))}: no such file or directory$`)],
      [plain, new RegExp(`^error: --repo ${re(plain)}: not a git repository$`)],
      [
        join(dir.path, 'config.yaml'),
        new RegExp(`^error: --repo ${re(join(dir.path, 'config.yaml'))}: not a directory$`),
      ],
      [
        join(repo.path, 'sub'),
        new RegExp(
          `^error: --repo ${re(join(repo.path, 'sub'))}: is a subdirectory of the git repository ${re(repo.path)}`,
        ),
      ],
      [
        join(bare, 'refs'),
        new RegExp(`^error: --repo ${re(join(bare, 'refs'))}: is inside the git directory ${re(bare)}`),
      ],
      // No commit, no branch: a worker would refuse it permanently, so enqueue does now.
      [bare, new RegExp(`^error: --repo ${re(bare)}: the repository is empty: it has no commits`)],
      ['', /^error: --repo is empty/],
      [' ', /^error: --repo is empty/],
    ];
    for (const [given, expected] of cases) {
      const result = await cli(dir.path, 'enqueue', '--repo', given, '--title', 'Add a thing');
      expect({ given, ...result }).toEqual({ given, code: 1, out: '', err: expect.stringMatching(expected) });
    }
    await git(repo.path, ['push', '--quiet', bare, 'HEAD:refs/heads/main']);
    // A repository's top, a bare repository, owner/name and a URL are taken (the last two
    // are the forge's and the worker's to reach); nothing refused above was queued.
    for (const given of [
      repo.path,
      join(repo.path, '.git'),
      bare,
      'octo/hello',
      'https://example.com/octo/hello.git',
    ]) {
      expect({
        given,
        ...(await cli(dir.path, 'enqueue', '--repo', given, '--title', `Task for ${given}`)),
      }).toMatchObject({ given, code: 0, err: '' });
    }
    expect((await cli(dir.path, 'doctor')).out).toMatch(/^ok {4}queue \(local\): depth 5,/m);
  });

  it('enqueue names a --body-file that is missing or a directory', async () => {
    for (const [given, expected] of [
      ['nope.md', 'no such file or directory'],
      [dir.path, 'is a directory, not a file'],
    ] as const) {
      const result = await cli(dir.path, 'enqueue', '--repo', repo.path, '--title', 't', '--body-file', given);
      expect(result).toEqual({ code: 1, out: '', err: `error: --body-file ${given}: ${expected}` });
    }
    await writeFile(join(dir.path, 'task.md'), 'the details\n');
    expect(await cli(dir.path, 'enqueue', '--repo', repo.path, '--title', 't', '--body-file', 'task.md')).toMatchObject(
      { code: 0, err: '' },
    );
  });

  it('parse errors commander prints itself are not printed twice', async () => {
    const result = await cli(dir.path, 'worker', '--concurrency', 'x');
    expect(result.code).toBe(1);
    expect(result.err.match(/expected a positive integer/g)).toHaveLength(1);
  });
});

describe('doctor on a broken setup: FAIL lines, exit 1', () => {
  let dir: TempDir;
  beforeEach(async () => {
    dir = await createTempDir('cli-doctor');
  });
  afterEach(async () => {
    await dir.dispose();
  });
  const config = (yaml: string) =>
    writeFile(
      join(dir.path, 'config.yaml'),
      `${yaml}${quiet}agents:\n  default: command\n  command:\n    argv: [git]\n`,
    );

  it('a data_dir below a file: data dir, queue and run store each FAIL with the path; runs reports it', async () => {
    await writeFile(join(dir.path, 'a-file'), 'x');
    const dataDir = join(dir.path, 'a-file', 'sub');
    await config(`data_dir: ${dataDir}\n`);
    const result = await cli(dir.path, 'doctor');
    expect(result).toMatchObject({ code: 1, err: '' });
    expect(result.out).toContain(
      `FAIL  data dir ${dataDir} cannot be created: a part of the path is a file, not a directory\n      fix: set data_dir`,
    );
    expect(result.out).toContain(
      `FAIL  queue (local): ${dataDir}/queue.sqlite cannot be created: a part of the path is a file`,
    );
    expect(result.out).toContain(
      `FAIL  run store (sqlite): ${dataDir}/runs.sqlite cannot be created: a part of the path is a file`,
    );
    expect(result.out).toMatch(/^ok {4}agent: command → /m);

    for (const argv of [['runs'], ['show', 'some-run'], ['dlq', 'list']]) {
      const listed = await cli(dir.path, ...argv);
      expect(listed).toEqual({
        code: 2,
        out: '',
        err: expect.stringContaining(
          `data_dir: ${dataDir} is not a usable directory (a part of the path is a file, not a directory)`,
        ),
      });
    }
  });

  it('a GitHub App whose key cannot sign: a FAIL line with the fix, the other checks still run', async () => {
    await config(
      'data_dir: ./data\nforge:\n  type: github\n  github:\n    api_url: http://127.0.0.1:1\n    app_id: 12\n    installation_id: 34\n    private_key_env: CF_TEST_APP_KEY\n',
    );
    const out: string[] = [];
    const err: string[] = [];
    const code = await runCli(['--config', join(dir.path, 'config.yaml'), 'doctor'], {
      out: (l) => out.push(l),
      err: (l) => err.push(l),
      cwd: dir.path,
      env: { PATH: process.env.PATH, HOME: dir.path, CF_TEST_APP_KEY: 'not a PEM key', ...gitTestEnv() },
    });
    expect({ code, err }).toEqual({ code: 1, err: [] });
    expect(out.join('\n')).toMatch(
      /^FAIL {2}forge \(github\): .+\n {6}fix: check forge\.github\.app_id, installation_id and the key/m,
    );
    expect(out.join('\n')).toMatch(/^ok {4}queue \(local\): depth 0/m);
    expect(out.join('\n')).not.toContain('not a PEM key');
  });

  it('a queue.local.path that is a directory: FAIL naming it, the fix says to name a file', async () => {
    await mkdir(join(dir.path, 'queue-dir'));
    await config('data_dir: ./data\nqueue:\n  local:\n    path: ./queue-dir\n');
    const result = await cli(dir.path, 'doctor');
    expect(result).toMatchObject({ code: 1, err: '' });
    expect(result.out).toMatch(
      new RegExp(
        `^FAIL  queue \\(local\\): ${re(join(dir.path, 'queue-dir'))} cannot be opened: .*\\n {6}fix: ${re(join(dir.path, 'queue-dir'))} is a directory: set queue.local.path to a file path`,
        'm',
      ),
    );
    expect(result.out).toMatch(/^ok {4}run store \(sqlite\): no runs yet$/m);
  });

  it('a queue file or run store that is not a database: FAIL naming it; runs names it too', async () => {
    await mkdir(join(dir.path, 'data'));
    await writeFile(
      join(dir.path, 'data', 'queue.sqlite'),
      'not a database, just some text that is long enough to have a header\n'.repeat(20),
    );
    await writeFile(join(dir.path, 'data', 'runs.sqlite'), 'also not a database\n'.repeat(50));
    await config('data_dir: ./data\n');
    const result = await cli(dir.path, 'doctor');
    expect(result).toMatchObject({ code: 1, err: '' });
    const queueFile = join(dir.path, 'data', 'queue.sqlite');
    const runsFile = join(dir.path, 'data', 'runs.sqlite');
    const notADatabase = (file: string) =>
      `${file} is not a SQLite database (file is not a database): it was overwritten, or is another kind of file`;
    expect(result.out).toContain(
      `FAIL  queue (local): ${notADatabase(queueFile)}\n      fix: stop the workers; restore ${queueFile} from a backup, or move ${queueFile} and its -wal and -shm files aside`,
    );
    expect(result.out).toContain(
      `FAIL  run store (sqlite): ${notADatabase(runsFile)}\n      fix: stop the workers; restore ${runsFile} from a backup, or move it and its -wal and -shm files aside`,
    );
    expect(result.out).toMatch(/^ok {4}data dir /m);

    const runs = await cli(dir.path, 'runs');
    expect(runs).toEqual({
      code: 1,
      out: '',
      err: expect.stringMatching(
        `^error \\(queue_unavailable\\): the local queue ${re(notADatabase(queueFile))}; fix: stop the workers; restore `,
      ),
    });
  });
});

describe('a worker whose default agent cannot run says so at start', () => {
  it('logs agent.unusable with the fix, and still serves (jobs may name another agent)', async () => {
    const dir = await createTempDir('cli-agent-start');
    try {
      await writeFile(
        join(dir.path, 'config.yaml'),
        'data_dir: ./data\nagents:\n  default: claude\n  claude:\n    binary: codefleet-no-such-claude\n',
      );
      const worker = startFixture(bin, ['--config', join(dir.path, 'config.yaml'), 'worker', '--once'], {
        cwd: dir.path,
        env: { PATH: process.env.PATH ?? '', HOME: dir.path, ...gitTestEnv() },
      });
      const line = await worker.waitForLine(/agent\.unusable/);
      expect(line).toContain(
        'agent claude: codefleet-no-such-claude not found on PATH: jobs for it will fail; install codefleet-no-such-claude, or set agents.claude.binary',
      );
      expect(await worker.exited).toMatchObject({ exitCode: 0 });
    } finally {
      await dir.dispose();
    }
  });
});
