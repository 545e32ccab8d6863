import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import {
  createTempDir,
  createTempRepo,
  freePort,
  isAlive,
  startFixture,
  startRedis,
  waitFor,
  withTimeoutsUntil,
} from '../src/index.js';

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));

describe('createTempRepo', () => {
  it('commits files on the requested branch, isolated from user git config', async () => {
    const repo = await createTempRepo({ files: { 'src/a.txt': 'a\n' }, branch: 'trunk' });
    try {
      expect(await repo.git(['branch', '--show-current'])).toBe('trunk');
      expect(await readFile(join(repo.path, 'src/a.txt'), 'utf8')).toBe('a\n');
      const sha = await repo.commit({ 'b.txt': 'b' }, 'second');
      expect(await repo.git(['rev-parse', 'HEAD'])).toBe(sha);
      expect(await repo.git(['log', '--format=%an|%s', '-1'])).toBe('codefleet test|second');
    } finally {
      await repo.dispose();
    }
    expect(existsSync(repo.path)).toBe(false);
  });
});

describe('startRedis', () => {
  it('starts a real redis-server on a random loopback port, survives a SIGKILL restart with AOF', async () => {
    const redis = await startRedis({ appendOnly: true });
    try {
      expect(redis.url).toBe(`redis://127.0.0.1:${redis.port}`);
      expect(await redis.command('PING')).toBe('+PONG');
      expect(await redis.command('SET', 'k', 'v')).toBe('+OK');
      // appendfsync everysec: give the write a second to reach the file before the kill.
      await new Promise((r) => setTimeout(r, 1_200));
      const pid = redis.pid;
      await redis.kill('SIGKILL');
      expect(pid !== undefined && isAlive(pid)).toBe(false);
      await redis.restart();
      expect(await redis.command('GET', 'k')).toMatch(/^\$1/);
    } finally {
      await redis.stop();
    }
  });

  it('starts with a password and ACL users; url carries the password, command() authenticates', async () => {
    const redis = await startRedis({
      password: 'admin-pass-1',
      users: { fleet: 'on >fleet-pass-1 ~fleet:* +@all -@dangerous' },
    });
    try {
      expect(redis.url).toBe(`redis://:admin-pass-1@127.0.0.1:${redis.port}`);
      expect(redis.urlAs('fleet', 'p@ss')).toBe(`redis://fleet:p%40ss@127.0.0.1:${redis.port}`);
      expect(await redis.command('SET', 'k', 'v')).toBe('+OK');
      expect(await redis.command('ACL', 'WHOAMI')).toMatch(/^\$7/);
      expect(await redis.command('ACL', 'DRYRUN', 'fleet', 'SET', 'fleet:a', '1')).toBe('+OK');
      expect(await redis.command('ACL', 'DRYRUN', 'fleet', 'SET', 'other', '1')).toMatch(/^\$\d+/);
    } finally {
      await redis.stop();
    }
    const plain = await startRedis({ password: 'only-pass-1' });
    try {
      expect(await plain.command('PING')).toBe('+PONG');
    } finally {
      await plain.stop();
    }
  });

  it('explains how to install a missing binary', async () => {
    await expect(startRedis({ binary: 'redis-server-not-installed' })).rejects.toThrow(
      /apt-get install -y redis-server/,
    );
  });
});

describe('startFixture', () => {
  it('collects lines and reports the signal that ended the process', async () => {
    const proc = startFixture(fixture('echo-lines.mjs'), ['ready', 'second']);
    expect(await proc.waitForLine('second')).toBe('second');
    proc.kill('SIGKILL');
    expect(await proc.exited).toEqual({ exitCode: undefined, signal: 'SIGKILL' });
    expect(proc.lines).toEqual(['ready', 'second']);
  });

  it('reports the exit code of a process that ends by itself', async () => {
    const proc = startFixture(fixture('echo-lines.mjs'), ['only', '--exit']);
    expect(await proc.exited).toEqual({ exitCode: 0, signal: undefined });
  });

  it('a line the ended process printed is found; one it never printed is not waited for', async () => {
    const proc = startFixture(fixture('echo-lines.mjs'), ['only', '--exit']);
    await proc.exited;
    expect(await proc.waitForLine('only')).toBe('only');
    // Without the stop this would poll until the test's timeout.
    await expect(proc.waitForLine('never')).rejects.toThrow(/the process ended \(exit 0\) without printing it/);
  });

  it("a wait ended by the process's exit says what it printed on stderr last", async () => {
    const proc = startFixture(fixture('echo-lines.mjs'), ['--stderr', 'port taken', '--exit']);
    await expect(proc.waitForLine('never')).rejects.toThrow(/without printing it \(stderr: port taken\n\)/);
  });
});

describe('freePort', () => {
  it('is below the ephemeral range, where no port-0 server or outgoing connection is given one, and free', async () => {
    const range = await readFile('/proc/sys/net/ipv4/ip_local_port_range', 'utf8');
    const low = Number(range.split(/\s+/)[0]);
    const ports = await Promise.all(Array.from({ length: 20 }, () => freePort()));
    for (const port of ports) {
      expect(port).toBeGreaterThan(10_080);
      expect(port).toBeLessThan(low);
    }
    const server = createServer();
    await new Promise<void>((resolve) => server.listen({ port: ports[0], host: '127.0.0.1' }, resolve));
    await new Promise((resolve) => server.close(resolve));
  });
});

describe('waitFor', () => {
  it('stops polling when its signal aborts, saying why', async () => {
    const stop = new AbortController();
    const waiting = waitFor(() => false, { what: 'nothing', signal: stop.signal });
    stop.abort(new Error('moot'));
    await expect(waiting).rejects.toThrow('stopped waiting for nothing: moot');
  });

  it('names what it waited for on timeout', async () => {
    await expect(waitFor(() => false, { timeoutMs: 50, what: 'nothing' })).rejects.toThrow(/nothing/);
  });

  it('withTimeoutsUntil runs again with the next timeout only while the precondition did not hold', async () => {
    const tried: number[] = [];
    const run = async (timeoutMs: number) => (tried.push(timeoutMs), timeoutMs);
    expect(await withTimeoutsUntil([1, 2, 3, 4], run, (ms) => ms >= 2)).toEqual({ result: 2, timeoutMs: 2 });
    expect(tried).toEqual([1, 2]);
    // Never ready: the last run is returned, for the test's assertions to say what was missing.
    expect(await withTimeoutsUntil([5, 6], run, () => false)).toEqual({ result: 6, timeoutMs: 6 });
    await expect(withTimeoutsUntil([], run, () => true)).rejects.toThrow(RangeError);
  });

  it('temp dirs are removed by dispose', async () => {
    const dir = await createTempDir('x');
    expect(existsSync(dir.path)).toBe(true);
    await dir.dispose();
    expect(existsSync(dir.path)).toBe(false);
  });
});
