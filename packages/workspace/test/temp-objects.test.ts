// The sweep of git's temporary object files: real bare repositories, real leftovers of
// killed git processes, and planted ones with chosen ages.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, lutimes, mkdir, readdir, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { createTempDir, createTempRepo, git, waitFor, type TempDir } from '@codefleet/testkit';
import { createGit } from '../src/git.js';
import { mirrorPaths, syncMirror } from '../src/mirror.js';
import { sweepTempObjects, tempObjectAgeMs } from '../src/temp-objects.js';
import { sampleFiles, testGitEnv } from './helpers.js';

const hour = 60 * 60_000;
const disposers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const dispose of disposers.splice(0).reverse()) await dispose();
});

async function tempDir(): Promise<TempDir> {
  const dir = await createTempDir('temp-objects');
  disposers.push(() => dir.dispose());
  return dir;
}

/** A bare repository holding the sample project, packed, plus some loose objects. */
async function bareRepo(dir: string): Promise<string> {
  const source = await createTempRepo({ files: sampleFiles });
  disposers.push(() => source.dispose());
  const bare = join(dir, 'repo.git');
  await git(dir, ['clone', '--quiet', '--bare', source.path, bare]);
  return bare;
}

async function plant(path: string, bytes: number, mtime: Date): Promise<void> {
  await mkdir(join(path, '..'), { recursive: true });
  await writeFile(path, Buffer.alloc(bytes, 1));
  await utimes(path, mtime, mtime);
}

/** The loose and packed object counts of `bare` (not its garbage, which temporary files are). */
async function objectsOf(bare: string): Promise<string[]> {
  return (await git(bare, ['count-objects', '-v'])).split('\n').filter((line) => /^(?:count|in-pack):/.test(line));
}

describe('sweepTempObjects', () => {
  it('removes old temporary files and quarantines, keeps fresh ones, real objects and whatever links point at', async () => {
    const dir = await tempDir();
    const bare = await bareRepo(dir.path);
    const objects = join(bare, 'objects');
    const now = Date.now();
    const old = new Date(now - 2 * hour);
    const fresh = new Date(now - 60_000);
    const before = await objectsOf(bare);
    // Beside real loose objects: the commit is one (a local clone copies them as they are).
    const looseDir = (await git(bare, ['rev-parse', 'HEAD'])).slice(0, 2);
    expect(existsSync(join(objects, looseDir))).toBe(true);

    const oldOnes = {
      [join(objects, 'pack', 'tmp_pack_Ab12Cd')]: 1000,
      [join(objects, 'pack', 'tmp_idx_Ab12Cd')]: 100,
      [join(objects, 'pack', '.tmp-4242-pack-0123abcd.pack')]: 10,
      [join(objects, looseDir, 'tmp_obj_Xy12Zw')]: 1,
      [join(objects, 'tmp_objdir-incoming-Q1w2E3', 'pack', 'tmp_pack_Zz9')]: 500,
      [join(objects, 'tmp_objdir-incoming-Q1w2E3', 'cd', 'ef0123')]: 5,
    };
    for (const [path, bytes] of Object.entries(oldOnes)) await plant(path, bytes, old);
    // Still being written: a fresh pack, and a quarantine whose directory is old but holds a fresh file.
    await plant(join(objects, 'pack', 'tmp_pack_Live01'), 300, fresh);
    await plant(join(objects, 'tmp_objdir-incoming-Busy01', 'pack', 'tmp_pack_Busy'), 300, fresh);
    await utimes(join(objects, 'tmp_objdir-incoming-Busy01'), old, old);
    // Not temporary, however old.
    await plant(join(objects, 'pack', 'pack-0123.keep'), 0, old);
    // Links named like leftovers, pointing outside: the links go, their targets stay.
    const outside = join(dir.path, 'outside');
    await plant(join(outside, 'precious'), 7, old);
    await plant(join(outside, 'tmp_obj_precious'), 7, old);
    await mkdir(join(objects, 'ef'), { recursive: true });
    await symlink(join(outside, 'tmp_obj_precious'), join(objects, 'ef', 'tmp_obj_link'));
    await symlink(outside, join(objects, 'tmp_objdir-incoming-Link01'));
    await lutimes(join(objects, 'ef', 'tmp_obj_link'), old, old);
    await lutimes(join(objects, 'tmp_objdir-incoming-Link01'), old, old);
    await symlink(outside, join(objects, 'tmp_objdir-incoming-Q1w2E3', 'cd', 'linked'));
    await lutimes(join(objects, 'tmp_objdir-incoming-Q1w2E3', 'cd', 'linked'), old, old);
    for (const sub of ['pack', 'cd', '']) await utimes(join(objects, 'tmp_objdir-incoming-Q1w2E3', sub), old, old);

    const swept = await sweepTempObjects(bare, { olderThanMs: hour, now });
    expect(swept).toEqual({ files: Object.keys(oldOnes).length + 3, bytes: 1000 + 100 + 10 + 1 + 500 + 5 });
    for (const path of Object.keys(oldOnes)) expect(existsSync(path)).toBe(false);
    expect(existsSync(join(objects, 'tmp_objdir-incoming-Q1w2E3'))).toBe(false);
    expect(existsSync(join(objects, 'pack', 'tmp_pack_Live01'))).toBe(true);
    expect(existsSync(join(objects, 'tmp_objdir-incoming-Busy01', 'pack', 'tmp_pack_Busy'))).toBe(true);
    expect(existsSync(join(objects, 'pack', 'pack-0123.keep'))).toBe(true);
    expect(existsSync(join(objects, 'ef', 'tmp_obj_link'))).toBe(false);
    expect(existsSync(join(objects, 'tmp_objdir-incoming-Link01'))).toBe(false);
    expect((await readdir(outside)).sort()).toEqual(['precious', 'tmp_obj_precious']);
    // The repository itself is whole.
    await git(bare, ['fsck', '--no-progress', '--strict']);
    expect(await objectsOf(bare)).toEqual(before);
    expect(await sweepTempObjects(bare, { olderThanMs: hour, now })).toEqual({ files: 0, bytes: 0 });
  });

  it('never follows a link where a directory is expected', async () => {
    const dir = await tempDir();
    const bare = await bareRepo(dir.path);
    const objects = join(bare, 'objects');
    const old = new Date(Date.now() - 2 * hour);
    const outside = join(dir.path, 'outside');
    await plant(join(outside, 'tmp_pack_precious'), 7, old);
    await plant(join(outside, 'tmp_obj_precious'), 7, old);
    await rm(join(objects, 'pack'), { recursive: true });
    await symlink(outside, join(objects, 'pack'));
    const present = await readdir(objects);
    const unused = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0')).find(
      (name) => !present.includes(name),
    );
    await symlink(outside, join(objects, unused!));
    expect(await sweepTempObjects(bare, { olderThanMs: hour })).toEqual({ files: 0, bytes: 0 });
    expect((await readdir(outside)).sort()).toEqual(['tmp_obj_precious', 'tmp_pack_precious']);
  });

  it('finds what real git processes killed half-way leave: an index-pack and a received push', async () => {
    const dir = await tempDir();
    const bare = await bareRepo(dir.path);
    const env = testGitEnv();
    // An index-pack (as a fetch runs it) killed in the middle of a pack.
    const pack = await new Promise<Buffer>((resolve, reject) => {
      const chunks: Buffer[] = [];
      const packer = spawn('git', ['pack-objects', '--stdout', '--all', '--quiet'], {
        cwd: bare,
        env,
        stdio: ['pipe', 'pipe', 'ignore'],
      });
      packer.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
      packer.on('error', reject);
      packer.on('close', () => resolve(Buffer.concat(chunks)));
      packer.stdin.end();
    });
    const indexer = spawn('git', ['index-pack', '--stdin'], { cwd: bare, env, stdio: ['pipe', 'ignore', 'ignore'] });
    indexer.stdin.write(pack.subarray(0, Math.floor(pack.length / 2)));
    const packDir = join(bare, 'objects', 'pack');
    await waitFor(async () => (await readdir(packDir)).some((name) => name.startsWith('tmp_pack_')), {
      what: 'index-pack to start its temporary pack',
    });
    indexer.kill('SIGKILL');
    await new Promise((resolve) => indexer.once('exit', resolve));

    // A push received into a quarantine, killed while a hook runs.
    const started = join(dir.path, 'receiving');
    await writeFile(join(bare, 'hooks', 'pre-receive'), `#!/bin/sh\ntouch '${started}'\nexec sleep 600\n`);
    await chmod(join(bare, 'hooks', 'pre-receive'), 0o755);
    const source = await createTempRepo({ files: { 'new.txt': 'new content\n' } });
    disposers.push(() => source.dispose());
    const push = spawn('git', ['push', '--quiet', bare, 'HEAD:refs/heads/pushed'], {
      cwd: source.path,
      env,
      stdio: 'ignore',
      detached: true,
    });
    disposers.push(async () => {
      try {
        process.kill(-push.pid!, 'SIGKILL');
      } catch {
        /* gone */
      }
    });
    await waitFor(() => existsSync(started), { what: 'the push to reach the hook' });
    process.kill(-push.pid!, 'SIGKILL');
    const objects = join(bare, 'objects');
    const leftovers = async () => [
      ...(await readdir(objects)).filter((name) => name.startsWith('tmp_objdir-')),
      ...(await readdir(packDir)).filter((name) => name.startsWith('tmp_pack_')),
    ];
    expect(await leftovers()).toEqual([
      expect.stringMatching(/^tmp_objdir-incoming-/),
      expect.stringMatching(/^tmp_pack_/),
    ]);

    expect(await sweepTempObjects(bare)).toEqual({ files: 0, bytes: 0 });
    const swept = await sweepTempObjects(bare, { now: Date.now() + tempObjectAgeMs + 60_000 });
    expect(swept.files).toBeGreaterThanOrEqual(2);
    expect(swept.bytes).toBeGreaterThan(0);
    expect(await leftovers()).toEqual([]);
    await git(bare, ['fsck', '--no-progress']);
  });

  it('runs when the mirror is synced', async () => {
    const dir = await tempDir();
    const origin = await createTempRepo({ files: sampleFiles });
    disposers.push(() => origin.dispose());
    const gitRunner = createGit(testGitEnv());
    const paths = mirrorPaths(dir.path, origin.path);
    const sync = () =>
      syncMirror({ local: gitRunner, remote: gitRunner }, paths, {
        url: origin.path,
        branch: 'ai/x-00000001',
        lockTimeoutMs: 30_000,
      });
    await sync();
    const old = new Date(Date.now() - 2 * tempObjectAgeMs);
    const stale = join(paths.dir, 'objects', 'pack', 'tmp_pack_Dead01');
    const live = join(paths.dir, 'objects', 'pack', 'tmp_pack_Live01');
    await plant(stale, 1_000, old);
    await plant(live, 1_000, new Date());
    await sync();
    expect([existsSync(stale), existsSync(live)]).toEqual([false, true]);
  });
});
