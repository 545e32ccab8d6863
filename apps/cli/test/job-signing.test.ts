import { statSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { execa } from 'execa';
import { openSqlite } from '@codefleet/sqlite';
import {
  createTempDir,
  createTempRepo,
  git,
  gitTestEnv,
  otherTestFleetKey,
  startRedis,
  testFleetKeyEnv,
  type RedisServer,
  type TempDir,
  type TempRepo,
} from '@codefleet/testkit';
import { bin } from './cli-helpers.js';

// Workers run only jobs a producer of this fleet signed. A job written into the queue by
// hand, as an attacker who reached Redis or the queue file would, is dead-lettered
// `job_unsigned` and runs nothing; a job enqueued the proper way still runs.

let dir: TempDir;
let repo: TempRepo;
let victim: TempRepo;
beforeEach(async () => {
  dir = await createTempDir('job-signing');
  repo = await createTempRepo({ files: { 'notes.txt': 'hello\n' } });
  victim = await createTempRepo({ files: { 'notes.txt': 'do not touch\n' } });
  // Appends to notes.txt and records what it could see of the fleet key.
  await writeFile(
    join(dir.path, 'agent.mjs'),
    [
      "import fs from 'node:fs';",
      "const w = process.argv[process.argv.indexOf('--workdir') + 1];",
      'const readable = (p) => { try { fs.readFileSync(p); return true; } catch { return false; } };',
      "const seen = { env: Object.keys(process.env).filter((n) => n.startsWith('CODEFLEET')), keyFiles: (process.env.CF_TEST_KEY_FILES ?? '').split(':').filter(readable) };",
      "fs.appendFileSync(w + '/notes.txt', 'more\\n');",
      "fs.writeFileSync(w + '/seen.json', JSON.stringify(seen));",
    ].join('\n'),
  );
});
afterEach(async () => {
  await victim.dispose();
  await repo.dispose();
  await dir.dispose();
});

const baseConfig = (...lines: string[]) =>
  writeFile(
    join(dir.path, 'config.yaml'),
    [
      'data_dir: ./data',
      'logging:',
      '  level: info',
      '  format: json',
      'agents:',
      '  default: script',
      '  script:',
      `    module: ${join(dir.path, 'agent.mjs')}`,
      'worker:',
      '  max_retries: 0',
      ...lines,
      '',
    ].join('\n'),
  );

async function run(env: Record<string, string>, ...argv: string[]) {
  const result = await execa(process.execPath, [bin, '--config', join(dir.path, 'config.yaml'), ...argv], {
    cwd: dir.path,
    env: { PATH: process.env.PATH ?? '', HOME: dir.path, ...gitTestEnv(), ...env },
    extendEnv: false,
    reject: false,
    timeout: 100_000,
  });
  return { code: result.exitCode, out: result.stdout, err: result.stderr };
}

/** The `ai/*` branches of a repository: what a run leaves behind. */
async function aiBranches(of: TempRepo): Promise<string[]> {
  const listed = await git(of.path, ['for-each-ref', '--format=%(refname:short)', 'refs/heads/ai/']);
  return listed.split('\n').filter((line) => line !== '');
}

/** The log lines of one event from a command's JSON log output. */
function events(out: string, event: string): Record<string, unknown>[] {
  return out
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((line) => line.event === event);
}

async function deadLetters(env: Record<string, string>): Promise<{ id: string; reason: string; job?: unknown }[]> {
  const listed = await run(env, 'dlq', 'list', '--json');
  expect(listed.code).toBe(0);
  return JSON.parse(listed.out) as { id: string; reason: string; job?: unknown }[];
}

describe('BullMQ on a real redis-server', () => {
  let redis: RedisServer;
  beforeEach(async () => {
    redis = await startRedis();
  });
  afterEach(async () => {
    await redis.stop();
  });

  const redisCli = async (...args: string[]) =>
    (await execa('redis-cli', ['-h', redis.host, '-p', String(redis.port), '--raw', ...args])).stdout;

  it('a job hash copied by hand with data.repo changed, and a hand-made job, are dead-lettered unsigned; the enqueued job runs', async () => {
    await baseConfig('queue:', '  backend: bullmq', '  bullmq:', `    url: ${redis.url}`, 'sandbox:', '  mode: none');
    const env = testFleetKeyEnv();
    const queued = await run(env, 'enqueue', '--repo', repo.path, '--title', 'Append a line');
    expect(queued.code).toBe(0);
    const jobId = /^enqueued (\S+)$/.exec(queued.out)![1]!;

    // The attack: the real job's hash copied under a new id with the repository changed,
    // and a job made from scratch without any signature, both pushed on the wait list.
    const fields = (await redisCli('HGETALL', `codefleet:codefleet:cf~${jobId}`)).split('\n');
    const hash = Object.fromEntries(fields.flatMap((value, i) => (i % 2 === 0 ? [[value, fields[i + 1] ?? '']] : [])));
    const data = JSON.parse(hash.data!) as Record<string, unknown>;
    const copy = { ...data, id: 'forged-copy', repo: victim.path };
    await redisCli(
      'HSET',
      'codefleet:codefleet:forged-copy',
      'name',
      'job',
      'data',
      JSON.stringify(copy),
      'opts',
      hash.opts ?? '{}',
      'timestamp',
      String(Date.now()),
      'delay',
      '0',
      'priority',
      '0',
    );
    const plain: Record<string, unknown> = { ...copy, id: 'forged-plain', idempotency_key: 'forged-plain' };
    delete plain.signature;
    await redisCli(
      'HSET',
      'codefleet:codefleet:forged-plain',
      'name',
      'job',
      'data',
      JSON.stringify(plain),
      'opts',
      '{}',
      'timestamp',
      String(Date.now()),
      'delay',
      '0',
      'priority',
      '0',
    );
    await redisCli('LPUSH', 'codefleet:codefleet:wait', 'forged-copy', 'forged-plain');

    const worked = await run(env, 'worker', '--once');
    // The refused jobs make --once fail: someone wrote into the queue.
    expect({ code: worked.code, summary: worked.out.split('\n').at(-1) }).toEqual({
      code: 1,
      summary: 'processed 1: 1 done, 0 retrying, 0 dead-lettered, 0 released',
    });
    expect(events(worked.out, 'job.unsigned').map((line) => [line.job_id, line.why])).toEqual(
      expect.arrayContaining([
        ['forged-copy', 'bad_signature'],
        ['forged-plain', 'missing'],
      ]),
    );
    expect(await aiBranches(victim)).toEqual([]);
    expect(await aiBranches(repo)).toHaveLength(1);
    const dead = await deadLetters(env);
    expect(dead.map((d) => [d.id, d.reason.split(' ')[0], d.job]).sort()).toEqual([
      ['forged-copy', 'job_unsigned', undefined],
      ['forged-plain', 'job_unsigned', undefined],
    ]);
    // No run was made for them, and no redrive launders them.
    const runs = await run(env, 'runs', '--json');
    expect(runs.out).not.toContain('forged');
    const redriven = await run(env, 'dlq', 'redrive', 'forged-copy');
    expect({ code: redriven.code, err: redriven.err }).toEqual({
      code: 1,
      err: expect.stringMatching(/^not redriven: job_unsigned \(bad_signature\)/),
    });
  });

  it('without the fleet key a worker refuses to start, naming the fix; init makes one, doctor says where it is', async () => {
    await baseConfig('queue:', '  backend: bullmq', '  bullmq:', `    url: ${redis.url}`, 'sandbox:', '  mode: none');
    const worker = await run({}, 'worker', '--once');
    expect(worker.code).toBe(2);
    expect(worker.err).toMatch(
      /no fleet key: set \$CODEFLEET_FLEET_KEY, or run `codefleet init` on one host and copy .*fleet\.key/,
    );
    expect((await run({}, 'enqueue', '--repo', repo.path, '--title', 'x')).err).toMatch(/no fleet key/);
    expect((await run({}, 'doctor')).out).toMatch(/FAIL +fleet key: none/);
    const made = await run({}, 'init');
    expect(made.out).toMatch(
      /^made the fleet key [0-9a-f]{8} in .*data\/fleet\.key \(mode 0600\)\nevery host of the fleet needs the same key: copy /,
    );
    expect(statSync(join(dir.path, 'data', 'fleet.key')).mode & 0o777).toBe(0o600);
    expect((await run({}, 'init')).out).toMatch(/already in .*fleet\.key: nothing to do\n/);
    const key = (await readFile(join(dir.path, 'data', 'fleet.key'), 'utf8')).trim();
    const doctor = await run({}, 'doctor');
    expect(doctor.out).toMatch(/ok +fleet key: [0-9a-f]{8} from .*data\/fleet\.key/);
    expect(doctor.out + doctor.err).not.toContain(key);
    expect((await run({}, 'enqueue', '--repo', repo.path, '--title', 'Append a line')).code).toBe(0);
  });
});

describe('the local SQLite queue', () => {
  it('makes its key on first start; a row written into the queue file by hand is dead-lettered unsigned', async () => {
    await baseConfig('sandbox:', '  mode: none');
    const queued = await run({}, 'enqueue', '--repo', repo.path, '--title', 'Append a line');
    expect(queued.code).toBe(0);
    expect(statSync(join(dir.path, 'data', 'fleet.key')).mode & 0o777).toBe(0o600);
    const db = openSqlite(join(dir.path, 'data', 'queue.sqlite'));
    const row = db.prepare("SELECT * FROM jobs WHERE state = 'ready'").get() as Record<string, unknown>;
    const copy = {
      ...(JSON.parse(row.payload as string) as object),
      id: 'forged-copy',
      idempotency_key: 'forged-copy',
      repo: victim.path,
    };
    db.prepare(
      `INSERT INTO jobs (queue, id, idempotency_key, payload, state, priority, max_attempts, available_at, enqueued_at)
      VALUES (?, 'forged-copy', 'forged-copy', ?, 'ready', ?, 1, 0, 0)`,
    ).run(row.queue, JSON.stringify(copy), row.priority);
    db.close();
    const worked = await run({}, 'worker', '--once');
    expect(worked.out.split('\n').at(-1)).toBe('processed 1: 1 done, 0 retrying, 0 dead-lettered, 0 released');
    expect(events(worked.out, 'job.unsigned')).toEqual([
      expect.objectContaining({ job_id: 'forged-copy', why: 'bad_signature' }),
    ]);
    expect(await aiBranches(victim)).toEqual([]);
    expect((await deadLetters({})).map((d) => [d.id, d.reason.split(' ')[0]])).toEqual([
      ['forged-copy', 'job_unsigned'],
    ]);
  });

  it('a sandboxed run sees neither the key variables nor a key file kept outside the data directory', async () => {
    const keys = await createTempDir('fleet-keys');
    try {
      const previousFile = join(keys.path, 'previous.key');
      await writeFile(previousFile, `${otherTestFleetKey}\n`, { mode: 0o600 });
      // The key's directory is one the sandbox shows (read_paths): only hiding the key file itself keeps it out.
      await baseConfig('signing:', `  previous_key_file: ${previousFile}`, 'sandbox:', `  read_paths: [${keys.path}]`);
      // The worker holds the key in its environment and the previous one in a file; the agent
      // is told where the file is (a variable it may see) and tries to read it.
      await writeFile(
        join(dir.path, 'config.yaml'),
        (await readFile(join(dir.path, 'config.yaml'), 'utf8')).replace(
          '  default: script\n',
          '  default: script\n  env:\n    pass: [CF_TEST_KEY_FILES]\n',
        ),
      );
      const env = {
        ...testFleetKeyEnv(),
        CODEFLEET_FLEET_KEY_PREVIOUS: otherTestFleetKey,
        CF_TEST_KEY_FILES: previousFile,
      };
      expect((await run(env, 'enqueue', '--repo', repo.path, '--title', 'Append a line')).code).toBe(0);
      const worked = await run(env, 'worker', '--once');
      expect(worked.out.split('\n').at(-1)).toBe('processed 1: 1 done, 0 retrying, 0 dead-lettered, 0 released');
      const [branch] = await aiBranches(repo);
      expect(JSON.parse(await git(repo.path, ['show', `${branch!}:seen.json`]))).toEqual({ env: [], keyFiles: [] });
    } finally {
      await keys.dispose();
    }
  });
});
