import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { createTempDir, type TempDir } from '@codefleet/testkit';
import { installIsFresh, readInstallRecord, writeInstallStamp } from '../src/run/install.js';

// The install record kept outside the copy: what makes node_modules "fresh" for the next job.
describe('install record', () => {
  let dir: TempDir;
  let copy: string;
  let stamp: string;
  const manifest = (scripts: Record<string, string> = {}) => JSON.stringify({ name: 'x', dependencies: { a: '1.0.0' }, scripts });
  beforeEach(async () => {
    dir = await createTempDir('install-record');
    copy = join(dir.path, 'copy');
    stamp = join(dir.path, 'copy.install-stamp');
    await mkdir(join(copy, 'node_modules', 'a'), { recursive: true });
    await mkdir(join(copy, 'packages', 'p', 'node_modules', 'b'), { recursive: true });
    await mkdir(join(copy, 'packages', 'p', 'node_modules', 'b', 'node_modules'), { recursive: true });
    await writeFile(join(copy, 'package.json'), manifest({ test: 'node --test' }));
    await writeFile(join(copy, 'package-lock.json'), '{"lockfileVersion":3}');
  });
  afterEach(async () => dir.dispose());

  it('records the hash and every node_modules the install left, not the ones inside them', async () => {
    await writeInstallStamp(copy, stamp);
    expect((await readInstallRecord(stamp))?.dirs).toEqual(['node_modules', 'packages/p/node_modules']);
    expect(await installIsFresh(copy, stamp)).toBe(true);
  });

  it('a lifecycle script or .npmrc changed since makes it stale; another script does not', async () => {
    await writeInstallStamp(copy, stamp);
    await writeFile(join(copy, 'package.json'), manifest({ test: 'node --test --watch' }));
    expect(await installIsFresh(copy, stamp)).toBe(true);
    await writeFile(join(copy, 'package.json'), manifest({ test: 'node --test', postinstall: 'node plant.js' }));
    expect(await installIsFresh(copy, stamp)).toBe(false);
    await writeFile(join(copy, 'package.json'), manifest({ test: 'node --test' }));
    expect(await installIsFresh(copy, stamp)).toBe(true);
    await writeFile(join(copy, '.npmrc'), 'ignore-scripts=false\n');
    expect(await installIsFresh(copy, stamp)).toBe(false);
  });

  it('a recorded directory gone makes it stale; a record pointing outside the copy is not trusted', async () => {
    await writeInstallStamp(copy, stamp);
    const { rm } = await import('node:fs/promises');
    await rm(join(copy, 'packages', 'p', 'node_modules'), { recursive: true });
    expect(await installIsFresh(copy, stamp)).toBe(false);
    await writeFile(stamp, JSON.stringify({ hash: 'h', dirs: ['../elsewhere', '/etc', 'node_modules'] }));
    expect((await readInstallRecord(stamp))?.dirs).toEqual(['node_modules']);
  });
});
