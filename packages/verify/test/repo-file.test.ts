import { spawnSync } from 'node:child_process';
import { link, mkdir, symlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { execa } from 'execa';
import { createTempDir, type TempDir } from '@codefleet/testkit';
import { isRepoFile, readRepoFile } from '../src/index.js';

const dirs: TempDir[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((dir) => dir.dispose()));
});

/** A host directory with a secret beside a working copy, as a worker's data dir has its token file. */
async function host(): Promise<{ root: string; copy: string; secretFile: string; secret: string }> {
  const dir = await createTempDir('repo-file');
  dirs.push(dir);
  const copy = join(dir.path, 'workspaces', 'pool', 'copy');
  await mkdir(copy, { recursive: true });
  const secret = 'ghs_0pAqUeT0kEnThAtMuStNeVeRlEaK0123456789';
  const secretFile = join(dir.path, 'github-installation-token');
  await writeFile(secretFile, secret);
  return { root: dir.path, copy, secretFile, secret };
}

const limit = { maxBytes: 1024 };

// Creating a device node needs CAP_MKNOD (root in most containers); without it the device
// case cannot be built, and the symlink-to-/dev/zero case below still covers the path.
function canMknod(): boolean {
  const probe = join(tmpdir(), `mknod-probe-${process.pid}`);
  const made = spawnSync('mknod', [probe, 'c', '1', '5']).status === 0;
  if (made) spawnSync('rm', ['-f', probe]);
  return made;
}
const itWithDevices = canMknod() ? it : it.skip;

describe('readRepoFile', () => {
  it('reads a regular file of the copy, and reports a missing one as missing', async () => {
    const { copy } = await host();
    await writeFile(join(copy, 'package.json'), '{"name":"x"}');
    expect(await readRepoFile(copy, 'package.json', limit)).toEqual({
      status: 'read',
      content: Buffer.from('{"name":"x"}'),
    });
    expect(await readRepoFile(copy, 'absent.json', limit)).toEqual({ status: 'missing' });
    expect(await readRepoFile(copy, 'no/such/dir.json', limit)).toEqual({ status: 'missing' });
    expect(await isRepoFile(copy, 'package.json')).toBe(true);
  });

  it('refuses a symlink to a secret outside the copy, relative or absolute', async () => {
    const { copy, secretFile } = await host();
    await symlink('../../../github-installation-token', join(copy, 'relative.yml'));
    await symlink(secretFile, join(copy, 'absolute.yml'));
    await symlink('/proc/self/environ', join(copy, 'environ.yml'));
    for (const name of ['relative.yml', 'absolute.yml', 'environ.yml']) {
      expect(await readRepoFile(copy, name, limit)).toEqual({ status: 'refused', reason: 'is a symbolic link' });
      expect(await isRepoFile(copy, name)).toBe(false);
    }
  });

  it('refuses a file below a symlinked directory', async () => {
    const { root, copy } = await host();
    await writeFile(join(root, 'elsewhere.json'), '{"secret":true}');
    await symlink(root, join(copy, 'node_modules'));
    expect(await readRepoFile(copy, 'node_modules/elsewhere.json', limit)).toEqual({
      status: 'refused',
      reason: 'is below a symbolic link to a directory',
    });
    expect(await isRepoFile(copy, 'node_modules/elsewhere.json')).toBe(false);
  });

  it('refuses a FIFO without blocking on it', async () => {
    const { copy } = await host();
    await execa('mkfifo', [join(copy, '.codefleet.yml')]);
    // Nobody ever writes to the FIFO: a plain read would wait forever.
    expect(await readRepoFile(copy, '.codefleet.yml', limit)).toEqual({
      status: 'refused',
      reason: 'is a FIFO (named pipe)',
    });
  });

  itWithDevices('refuses a device node without opening it', async () => {
    const { copy } = await host();
    await execa('mknod', [join(copy, 'package.json'), 'c', '1', '5']);
    expect(await readRepoFile(copy, 'package.json', limit)).toEqual({ status: 'refused', reason: 'is a device' });
  });

  it('refuses a symlink to /dev/zero, a directory and a socket', async () => {
    const { copy } = await host();
    await symlink('/dev/zero', join(copy, 'zero'));
    await mkdir(join(copy, 'dir'));
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(join(copy, 'sock'), resolve));
    try {
      expect(await readRepoFile(copy, 'zero', limit)).toMatchObject({ reason: 'is a symbolic link' });
      expect(await readRepoFile(copy, 'dir', limit)).toMatchObject({ reason: 'is a directory' });
      expect(await readRepoFile(copy, 'sock', limit)).toMatchObject({ reason: 'is a socket' });
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('refuses a hard link, which can bring a file from outside into the copy', async () => {
    const { copy, secretFile } = await host();
    await link(secretFile, join(copy, 'linked.yml'));
    expect(await readRepoFile(copy, 'linked.yml', limit)).toEqual({
      status: 'refused',
      reason: 'has other hard links',
    });
  });

  it('refuses a file over the size bound instead of cutting it', async () => {
    const { copy } = await host();
    await writeFile(join(copy, 'big.json'), 'x'.repeat(1025));
    expect(await readRepoFile(copy, 'big.json', limit)).toEqual({
      status: 'refused',
      reason: 'is 1025 bytes; at most 1024 are read',
    });
    await writeFile(join(copy, 'exact.json'), 'x'.repeat(1024));
    expect(await readRepoFile(copy, 'exact.json', limit)).toMatchObject({ status: 'read' });
  });

  it('refuses paths that leave the copy (a programming error)', async () => {
    const { copy } = await host();
    await expect(readRepoFile(copy, '../github-installation-token', limit)).rejects.toThrow('not a path below');
    await expect(readRepoFile(copy, '/etc/passwd', limit)).rejects.toThrow('not a path below');
  });
});
