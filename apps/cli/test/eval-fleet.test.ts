import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execa, type ResultPromise } from 'execa';
import type { EvalReport } from '@codefleet/eval';
import {
  createTempDir,
  createTempRepo,
  gitTestEnv,
  startRedis,
  testFleetKeyEnv,
  waitFor,
  type RedisServer,
  type TempDir,
  type TempRepo,
} from '@codefleet/testkit';
import { bin, fleetCli } from './cli-helpers.js';

// An evaluation across a fleet: the suite's jobs go to BullMQ on a real redis-server and two
// `codefleet worker` processes share them, as hosts of a fleet would.

let redis: RedisServer;
let dir: TempDir;
let repo: TempRepo;
beforeAll(async () => {
  redis = await startRedis();
  dir = await createTempDir('eval-fleet');
  repo = await createTempRepo({
    files: {
      'package.json': JSON.stringify({ name: 'lib', private: true, type: 'module', scripts: { test: 'node --test' } }),
      'src/lib.js': 'export const one = () => 1;\n',
      'test/one.test.js': testFile('one', 1),
    },
  });
  for (const [name, n] of [
    ['two', 2],
    ['three', 3],
  ] as const) {
    const lib = await readFile(join(repo.path, 'src', 'lib.js'), 'utf8');
    await repo.commit(
      { 'src/lib.js': `${lib}export const ${name} = () => ${n};\n`, [`test/${name}.test.js`]: testFile(name, n) },
      `Add ${name}()`,
    );
  }
  await writeFile(
    join(dir.path, 'config.yaml'),
    [
      'data_dir: ./data',
      'logging:',
      '  level: info',
      '  format: json',
      'queue:',
      '  backend: bullmq',
      '  bullmq:',
      `    url: ${redis.url}`,
      'worker:',
      '  concurrency: 1',
      '',
    ].join('\n'),
  );
});
afterAll(async () => {
  await repo.dispose();
  await dir.dispose();
  await redis.stop();
});

function testFile(name: string, value: number): string {
  return [
    "import { test } from 'node:test';",
    "import assert from 'node:assert/strict';",
    `import { ${name} } from '../src/lib.js';`,
    `test('${name}', () => assert.equal(${name}(), ${value}));`,
    '',
  ].join('\n');
}

/** A long-running `codefleet worker` process of the fleet (stopped with SIGTERM). */
function startWorker(): ResultPromise {
  return execa(process.execPath, [bin, '--config', join(dir.path, 'config.yaml'), 'worker'], {
    cwd: dir.path,
    env: { PATH: process.env.PATH ?? '', HOME: dir.path, ...gitTestEnv(), ...testFleetKeyEnv() },
    extendEnv: false,
    reject: false,
  });
}

describe('codefleet eval on BullMQ with two workers', () => {
  it('the oracle resolves every task and the empty agent none, the jobs shared by both workers', async () => {
    const mined = await fleetCli(
      dir.path,
      ...['eval', 'mine', '--repo', repo.path, '--name', 'acme/lib', '--out', 'suite.jsonl', '--holdout', '0'],
    );
    expect(mined.out).toContain('2 tasks');

    const workers = [startWorker(), startWorker()];
    try {
      // Both workers are live (registered, claiming) before the first job is queued.
      await waitFor(
        async () => {
          const listed = await fleetCli(dir.path, 'workers', '--json');
          return listed.code === 0 && (JSON.parse(listed.out) as unknown[]).length === 2;
        },
        { what: 'two live workers' },
      );
      const suite = ['--suite', 'suite.jsonl', '--configuration', 'oracle', '--configuration', 'empty'];
      const ran = await fleetCli(dir.path, 'eval', 'run', ...suite, '--repo', repo.path, '--max-per-repo', '4');
      expect(ran).toMatchObject({ code: 0 });
      expect(ran.out).toMatch(/^eval run: 4 of 4 finished; suite [0-9a-f]{64}$/);

      const report = await fleetCli(dir.path, 'eval', 'report', ...suite, '--format', 'json');
      const parsed = JSON.parse(report.out) as EvalReport;
      expect(parsed.configs.map((c) => [c.config, c.resolved.count, c.resolved.of])).toEqual([
        ['oracle', 2, 2],
        ['empty', 0, 2],
      ]);
      // Each worker (concurrency 1, both waiting when the four jobs came) ran some of them.
      const runs = await fleetCli(dir.path, 'runs', '--json');
      const listed = JSON.parse(runs.out) as { worker?: string; source: string }[];
      expect(listed.map((run) => run.source)).toEqual(['eval', 'eval', 'eval', 'eval']);
      expect(new Set(listed.map((run) => run.worker)).size).toBe(2);
    } finally {
      for (const worker of workers) worker.kill('SIGTERM');
      const ended = await Promise.all(workers);
      expect(ended.map((worker) => worker.exitCode)).toEqual([0, 0]);
    }
  });
});
