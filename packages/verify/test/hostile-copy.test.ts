import { lstat, mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { execa } from 'execa';
import { createTempDir, writeFiles, type TempDir } from '@codefleet/testkit';
import { installStampFile, planVerification, runVerification, type PlannedStep } from '../src/index.js';
import { defaultVerification, nodeScript, testEnv } from './helpers.js';

// A working copy whose files the repository or the agent shaped to make codefleet read,
// hang on, or write to something outside the copy.

const dirs: TempDir[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((dir) => dir.dispose()));
});

const secret = 'ghs_L1veInStAlLaTiOnToKeN0123456789abcd';

/** A worker's data dir: the App's token file, and a working copy three levels below it. */
async function host(files: Record<string, string> = {}): Promise<{ data: string; copy: string; tokenFile: string }> {
  const dir = await createTempDir('hostile-copy');
  dirs.push(dir);
  const copy = join(dir.path, 'workspaces', 'acme-app', 'copy-1');
  await mkdir(copy, { recursive: true });
  await writeFiles(copy, files);
  const tokenFile = join(dir.path, 'github-installation-token');
  await writeFile(tokenFile, secret);
  return { data: dir.path, copy, tokenFile };
}

const config = defaultVerification();

describe('planVerification on a hostile copy', () => {
  it('a .codefleet.yml linked to the token file is refused without quoting the token', async () => {
    const { copy } = await host({ 'go.mod': 'module x\n' });
    await symlink('../../../github-installation-token', join(copy, '.codefleet.yml'));
    const error = await planVerification(copy, { config }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'invalid_config', verdict: 'permanent' });
    expect((error as Error).message).toContain('.codefleet.yml');
    expect((error as Error).message).toContain('is a symbolic link');
    const everything = `${(error as Error).message} ${JSON.stringify(error)}`;
    expect(everything).not.toContain(secret);
    expect(everything).not.toContain('L1veInStAlL');
  });

  it('a .codefleet.yml linked to /etc/passwd or /proc/self/environ is refused the same way', async () => {
    for (const target of ['/etc/passwd', '/proc/self/environ']) {
      const { copy } = await host();
      await symlink(target, join(copy, '.codefleet.yml'));
      await expect(planVerification(copy, { config })).rejects.toMatchObject({
        message: expect.stringContaining('is a symbolic link'),
      });
    }
  });

  it('a FIFO as .codefleet.yml, package.json or pyproject.toml fails or is ignored, never hangs', async () => {
    const fifoConfig = await host();
    await execa('mkfifo', [join(fifoConfig.copy, '.codefleet.yml')]);
    await expect(planVerification(fifoConfig.copy, { config })).rejects.toMatchObject({
      message: expect.stringContaining('FIFO'),
    });

    // The toolchain is forced, so the manifests are read even though they mark nothing.
    const node = await host({ '.codefleet.yml': 'toolchain: node\n' });
    await execa('mkfifo', [join(node.copy, 'package.json')]);
    expect((await planVerification(node.copy, { config })).toolchain).toBe('node');
    const python = await host({ '.codefleet.yml': 'toolchain: python\n' });
    await execa('mkfifo', [join(python.copy, 'pyproject.toml')]);
    expect((await planVerification(python.copy, { config })).toolchain).toBe('python');
  });

  it('a package.json linked from outside marks nothing, and is not read when node is forced', async () => {
    const { data, copy } = await host();
    await writeFile(join(data, 'outside.json'), JSON.stringify({ scripts: { lint: 'exfiltrate' } }));
    await symlink(join(data, 'outside.json'), join(copy, 'package.json'));
    expect(await planVerification(copy, { config })).toMatchObject({ toolchain: 'none', steps: [] });

    // Forced, it plans as for an unreadable manifest: the configured commands, not its scripts.
    await writeFile(join(copy, '.codefleet.yml'), 'toolchain: node\n');
    const forced = await planVerification(copy, { config });
    expect(forced.steps.find((step) => step.name === 'lint')?.command).toEqual(config.toolchains.node.lint);
  });
});

describe('the install stamp on a hostile copy', () => {
  const options = { env: testEnv, timeoutMs: 10_000 };
  const manifest = JSON.stringify({ devDependencies: { leftpad: '1.0.0' } });

  it('a FIFO where the stamp goes is read as "not installed", without hanging', async () => {
    const { copy } = await host({ 'package.json': manifest, 'package-lock.json': '{}' });
    await mkdir(join(copy, 'node_modules'));
    await execa('mkfifo', [join(copy, 'node_modules', installStampFile)]);
    const install: PlannedStep = { name: 'install', command: nodeScript('') };
    const outcome = await runVerification(copy, [install], options);
    expect(outcome.results[0]).toMatchObject({ name: 'install', passed: true });
    expect(outcome.results[0]?.skipped).toBeUndefined();
  });

  it('an install that links the stamp to a file outside the copy cannot make codefleet write there', async () => {
    const { copy, tokenFile } = await host({ 'package.json': manifest, 'package-lock.json': '{}' });
    const linkStamp: PlannedStep = {
      name: 'install',
      command: nodeScript(
        `const fs=require('fs'); fs.mkdirSync('node_modules',{recursive:true}); fs.symlinkSync(${JSON.stringify(tokenFile)}, 'node_modules/${installStampFile}')`,
      ),
    };
    await runVerification(copy, [linkStamp], options);
    expect(await readFile(tokenFile, 'utf8')).toBe(secret);
    // The link was replaced by a stamp of the copy's own.
    expect((await lstat(join(copy, 'node_modules', installStampFile))).isFile()).toBe(true);
  });

  it('an install that makes node_modules a link out of the copy gets no stamp written there', async () => {
    const { data, copy } = await host({ 'package.json': manifest, 'package-lock.json': '{}' });
    const outside = join(data, 'outside-dir');
    const linkDir: PlannedStep = {
      name: 'install',
      command: nodeScript(
        `const fs=require('fs'); fs.mkdirSync(${JSON.stringify(outside)}); fs.symlinkSync(${JSON.stringify(outside)}, 'node_modules')`,
      ),
    };
    await runVerification(copy, [linkDir], options);
    await expect(lstat(join(outside, installStampFile))).rejects.toMatchObject({ code: 'ENOENT' });
  });
});
