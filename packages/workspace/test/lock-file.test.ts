import { spawnSync } from 'node:child_process';
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { createTempDir, type TempDir } from '@codefleet/testkit';
import { isStale, newHolder, readLock, tryLock, unlock, type LockHolder } from '../src/lock-file.js';
import { mirrorPaths } from '../src/mirror.js';
import { poolDir } from '../src/pool.js';
import { createFixture, sampleFiles, type Fixture } from './helpers.js';

/** The pid of a process that has exited (pids are not reused that quickly). */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(child.stdout);
}

function holderFor(pid: number, extra: Partial<LockHolder> = {}): LockHolder {
  return { pid, host: hostname(), token: `t${pid}`, createdAt: new Date().toISOString(), ...extra };
}

describe('lock files', () => {
  let dir: TempDir | undefined;
  let fixture: Fixture | undefined;
  afterEach(async () => {
    await dir?.dispose();
    await fixture?.dispose();
    dir = undefined;
    fixture = undefined;
  });

  it('a takeover guard left by a killed process does not keep a stale lock alive; a live one does', async () => {
    dir = await createTempDir('lock');
    const path = join(dir.path, 'slot-0.lock');
    await writeFile(path, `${JSON.stringify(holderFor(deadPid()))}\n`);
    // Killed between writing the guard and removing it.
    await writeFile(`${path}.takeover`, `${hostname()} ${deadPid()}`);
    const next = newHolder('job-next');
    expect(await tryLock(path, next)).toBe(true);
    expect(await readLock(path)).toEqual({ kind: 'held', holder: next });
    // A guard of a live process (this one) is respected.
    await writeFile(join(dir.path, 'other.lock'), `${JSON.stringify(holderFor(deadPid()))}\n`);
    await writeFile(join(dir.path, 'other.lock.takeover'), `${hostname()} ${process.pid}`);
    expect(await tryLock(join(dir.path, 'other.lock'), newHolder('job-x'))).toBe(false);
  });

  it('an empty takeover guard (its process killed between creating and writing it) blocks no takeover', async () => {
    dir = await createTempDir('lock');
    const path = join(dir.path, 'slot-1.lock');
    await writeFile(path, `${JSON.stringify(holderFor(deadPid()))}\n`);
    await writeFile(`${path}.takeover`, '');
    const next = newHolder('job-next');
    expect(await tryLock(path, next)).toBe(true);
    expect(await readLock(path)).toEqual({ kind: 'held', holder: next });
    // The guard is gone again, and so is its temporary file: nothing but the lock remains.
    expect((await readdir(dir.path)).sort()).toEqual(['slot-1.lock']);
  });

  it('are exclusive while the holder lives and freed by their holder only', async () => {
    dir = await createTempDir('lock');
    const path = join(dir.path, 'x.lock');
    const a = newHolder('job-a');
    const b = newHolder('job-b');
    expect(await tryLock(path, a)).toBe(true);
    expect(await tryLock(path, b)).toBe(false);
    await unlock(path, b);
    expect(await readLock(path)).toEqual({ kind: 'held', holder: a });
    await unlock(path, a);
    expect(await readLock(path)).toEqual({ kind: 'free' });
  });

  it('a lock of a dead pid is stale and taken over by exactly one of many contenders', async () => {
    dir = await createTempDir('lock');
    const path = join(dir.path, 'x.lock');
    await writeFile(path, JSON.stringify(holderFor(deadPid())));
    expect(isStale(await readLock(path))).toBe(true);
    const contenders = Array.from({ length: 20 }, (_, i) => newHolder(`job-${i}`));
    const won = await Promise.all(contenders.map((holder) => tryLock(path, holder)));
    expect(won.filter(Boolean)).toHaveLength(1);
    const state = await readLock(path);
    expect(state.kind === 'held' && contenders[won.indexOf(true)]?.token === state.holder.token).toBe(true);
  });

  it('never treats kept locks, live pids or other hosts as stale', async () => {
    expect(isStale({ kind: 'held', holder: holderFor(deadPid(), { kept: true }) })).toBe(false);
    expect(isStale({ kind: 'held', holder: holderFor(process.pid) })).toBe(false);
    expect(isStale({ kind: 'held', holder: holderFor(deadPid(), { host: 'elsewhere.invalid' }) })).toBe(false);
    expect(isStale({ kind: 'unreadable', ageMs: 1_000 })).toBe(false);
    expect(isStale({ kind: 'unreadable', ageMs: 120_000 })).toBe(true);
  });

  it('prepare takes over a mirror lock and a slot lock left by a dead process', async () => {
    fixture = await createFixture(sampleFiles, true);
    const { origin, cache, manager } = fixture;
    const mirror = mirrorPaths(cache.path, origin.path);
    const pool = poolDir(cache.path, mirror.hash);
    await mkdir(pool, { recursive: true });
    await mkdir(join(mirror.dir, '..'), { recursive: true });
    await writeFile(mirror.lock, JSON.stringify(holderFor(deadPid())));
    await writeFile(join(pool, 'slot-0.lock'), JSON.stringify(holderFor(deadPid(), { jobId: 'crashed' })));
    // A live holder keeps its slot.
    await writeFile(join(pool, 'slot-1.lock'), JSON.stringify(holderFor(process.pid, { jobId: 'running' })));

    const ws = await manager.prepare({ jobId: 'job-1', repoUrl: origin.path, branch: 'ai/one-00000001' });
    expect(ws.dir).toBe(join(pool, 'slot-0'));
    expect(await readLock(mirror.lock)).toEqual({ kind: 'free' });
    expect(JSON.parse(await readFile(join(pool, 'slot-0.lock'), 'utf8'))).toMatchObject({
      jobId: 'job-1',
      pid: process.pid,
    });
    const next = await manager.prepare({ jobId: 'job-2', repoUrl: origin.path, branch: 'ai/two-00000002' });
    expect(next.dir).toBe(join(pool, 'slot-2'));
    await ws.release();
    await next.release();
  });
});
