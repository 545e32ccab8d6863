import { closeSync, openSync, truncateSync, writeSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { LocalQueue } from '@codefleet/queue';
import { openSqlite } from '@codefleet/sqlite';
import { createTempDir, gitTestEnv, sampleJob, startFixture, type TempDir } from '@codefleet/testkit';
import { bin, cli } from './cli-helpers.js';

// A damaged local queue file is reported with its path and the fix by every command that
// opens it, and a worker stops on it with a non-zero exit instead of retrying forever.

const re = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe('a damaged local queue file', () => {
  let dir: TempDir;
  let queueFile: string;
  beforeEach(async () => {
    dir = await createTempDir('cli-queue-damage');
    queueFile = join(dir.path, 'data', 'queue.sqlite');
    await writeFile(
      join(dir.path, 'config.yaml'),
      'data_dir: ./data\nlogging:\n  level: silent\nsandbox:\n  mode: none\n',
    );
  });
  afterEach(async () => {
    await dir.dispose();
  });

  /** Three jobs queued in the configured queue file, then closed. */
  const queueThree = async () => {
    expect((await cli(dir.path, 'dlq', 'list')).code).toBe(0); // creates data/ and the queue file
    const queue = new LocalQueue({
      backend: 'local',
      path: queueFile,
      name: 'default',
      leaseMs: 60_000,
      maxAttempts: 4,
    });
    for (let i = 0; i < 3; i += 1) await queue.enqueue(sampleJob());
    await queue.close();
  };

  /** Overwrites the root page of a table or index of the closed queue file, found with SQLite itself. */
  const overwriteRootPage = (name: string) => {
    const db = openSqlite(queueFile, { readonly: true });
    const { rootpage } = db.prepare('SELECT rootpage FROM sqlite_master WHERE name = ?').get(name) as {
      rootpage: number;
    };
    const pageSize = Number(Object.values(db.prepare('PRAGMA page_size').get() as object)[0]);
    db.close();
    const fd = openSync(queueFile, 'r+');
    writeSync(fd, Buffer.alloc(pageSize, 0xab), 0, pageSize, (Number(rootpage) - 1) * pageSize);
    closeSync(fd);
  };

  it('truncated to 0 bytes: worker, dlq list, enqueue and doctor fail naming it and the fix', async () => {
    await queueThree();
    truncateSync(queueFile, 0);
    const damaged = expect.stringMatching(
      new RegExp(
        `^error \\(queue_unavailable\\): the local queue ${re(queueFile)} is empty \\(0 bytes\\): it was truncated.*; fix: stop the workers; restore ${re(queueFile)} from a backup`,
      ),
    );
    expect(await cli(dir.path, 'worker', '--once')).toEqual({ code: 1, out: '', err: damaged });
    expect(await cli(dir.path, 'dlq', 'list')).toEqual({ code: 1, out: '', err: damaged });
    expect(await cli(dir.path, 'enqueue', '--repo', 'acme/widgets', '--title', 'x')).toMatchObject({
      code: 1,
      err: damaged,
    });
    const doctor = await cli(dir.path, 'doctor');
    expect(doctor.code).toBe(1);
    expect(doctor.out).toMatch(
      new RegExp(
        `^FAIL  queue \\(local\\): ${re(queueFile)} is empty \\(0 bytes\\).*\\n {6}fix: stop the workers; restore ${re(queueFile)} from a backup`,
        'm',
      ),
    );
  });

  it('a page of its jobs overwritten: dlq list and worker fail instead of "empty" or a claim loop', async () => {
    await queueThree();
    overwriteRootPage('jobs');

    const damaged = expect.stringMatching(
      new RegExp(
        `^error \\(queue_unavailable\\): the local queue ${re(queueFile)} is damaged: .*; fix: stop the workers, then recover what it holds: \`sqlite3 ${re(queueFile)} \\.recover`,
      ),
    );
    expect(await cli(dir.path, 'dlq', 'list')).toEqual({ code: 1, out: '', err: damaged });
    expect(await cli(dir.path, 'worker', '--once')).toEqual({ code: 1, out: '', err: damaged });
    const doctor = await cli(dir.path, 'doctor');
    expect(doctor.out).toMatch(
      new RegExp(
        `^FAIL  queue \\(local\\): ${re(queueFile)} is damaged: .*\\n {6}fix: stop the workers, then recover`,
        'm',
      ),
    );
  });

  it('the index of states overwritten, nothing queued: worker --once fails rather than report an empty queue', async () => {
    expect((await cli(dir.path, 'dlq', 'list')).code).toBe(0);
    overwriteRootPage('jobs_state');
    const result = await cli(dir.path, 'worker', '--once');
    expect(result).toEqual({
      code: 1,
      out: '',
      err: expect.stringContaining(`error (queue_unavailable): the local queue ${queueFile} is damaged: quick_check: `),
    });
  });

  it('damaged under a running worker: the worker stops with the error and exit 1, not a retry loop', async () => {
    await writeFile(
      join(dir.path, 'config.yaml'),
      'data_dir: ./data\nlogging:\n  level: info\nsandbox:\n  mode: none\n',
    );
    // No job: the worker only claims, and the damage is met by a claim.
    expect((await cli(dir.path, 'dlq', 'list')).code).toBe(0);
    const worker = startFixture(bin, ['--config', join(dir.path, 'config.yaml'), 'worker'], {
      cwd: dir.path,
      env: { PATH: process.env.PATH ?? '', HOME: dir.path, ...gitTestEnv() },
    });
    try {
      // Started and claiming (the sandbox line comes just before the loop).
      await worker.waitForLine(/sandbox\.none/);
      truncateSync(queueFile, 0);
      const exit = await worker.exited;
      expect({ exitCode: exit.exitCode, stderr: worker.stderr }).toEqual({
        exitCode: 1,
        stderr: expect.stringMatching(
          new RegExp(`error \\(queue_unavailable\\): the local queue ${re(queueFile)} is empty \\(0 bytes\\)`),
        ),
      });
      expect(worker.lines.filter((line) => line.includes('worker.stopping'))).toHaveLength(1);
    } finally {
      worker.kill('SIGKILL');
    }
  });
});
