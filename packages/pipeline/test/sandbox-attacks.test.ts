import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { SecretRegistry } from '@codefleet/log';
import { git } from '@codefleet/testkit';
import { branchName } from '@codefleet/workspace';
import { createHarness, implementsFeature, outcomeOf, projectFiles, pushed, type Harness } from './harness.js';

// A prompt-injected agent, played by scripted agents, against the real sandbox (bubblewrap
// here): each test is one attack, and what must hold after the job.
// Whole jobs, several per test (installs included): the package's timeout guards against a
// hang only.

let h: Harness | undefined;
afterEach(async () => {
  await h?.dispose();
  h = undefined;
});

/** Commits a submodule entry (a gitlink to the base commit) at `at` on the origin's main. */
async function addSubmoduleEntry(harness: Harness, at: string): Promise<void> {
  const clone = join(harness.dir.path, `clone-${randomUUID()}`);
  await git(harness.dir.path, ['clone', '--quiet', harness.origin, clone]);
  const head = (await git(clone, ['rev-parse', 'HEAD'])).trim();
  await git(clone, ['update-index', '--add', '--cacheinfo', `160000,${head},${at}`]);
  await git(clone, ['commit', '--quiet', '-m', 'Add a submodule']);
  await git(clone, ['push', '--quiet', 'origin', 'HEAD:main']);
}

describe('the sandbox against a prompt-injected agent', () => {
  it("cannot read the worker's environment through /proc: no token to commit", async () => {
    const marker = `ghs_marker${randomUUID().replaceAll('-', '')}`;
    // A stand-in for the worker's process that holds a token in its environment.
    const holder = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], {
      env: { ...process.env, CODEFLEET_TEST_INSTALLATION_TOKEN: marker },
      stdio: 'ignore',
    });
    try {
      h = await createHarness();
      await h.agent(`
let found = '';
for (const pid of fs.readdirSync('/proc').filter((n) => /^\\d+$/.test(n))) {
  try { const env = fs.readFileSync('/proc/' + pid + '/environ', 'utf8'); const m = /ghs_marker\\w+/.exec(env); if (m) found = m[0]; } catch {}
}
fs.writeFileSync(path.join(workdir, 'loot.txt'), 'found:' + found + '\\n');
${implementsFeature}`);
      const job = h.job({ title: 'Add two()' });
      await h.drain(job);
      expect(outcomeOf(await h.store.get(job.id))).toBe('succeeded');
      const { text } = await pushed(h, branchName(job));
      expect(text).toContain('found:');
      expect(text).not.toContain(marker);
    } finally {
      holder.kill('SIGKILL');
    }
  });

  it('a secret the agent commits (base64, or a token minted after start) is never pushed: the job fails naming the file', async () => {
    const apiKey = `sk-test-${randomUUID()}`;
    const minted = `opaque-installation-token-${randomUUID()}`;
    const secrets = new SecretRegistry([apiKey]);
    h = await createHarness({ secrets });
    // A token minted at run time (a GitHub App's), known only to the registry.
    secrets.add(minted);
    await h.agent(`${implementsFeature}
fs.writeFileSync(path.join(workdir, 'src', 'config.js'), 'export const k = "' + Buffer.from('key=${apiKey}').toString('base64') + '";\\n');
fs.writeFileSync(path.join(workdir, 'notes.md'), 'token: ${encodeURIComponent(minted)}\\n');`);
    const job = h.job({ title: 'Add two()' });
    await h.drain(job);
    const run = await h.store.get(job.id);
    expect(run).toMatchObject({ outcome: 'failed', error: { code: 'secret_in_diff' } });
    expect(run!.error!.message).toContain('src/config.js');
    expect(run!.error!.message).toContain('notes.md');
    expect(JSON.stringify(run)).not.toContain(apiKey);
    expect(JSON.stringify(run)).not.toContain(minted);
    expect(await git(h.origin, ['branch', '--list', branchName(job)])).toBe('');
    expect(run!.attempts).toHaveLength(1);
  });

  it.each([
    [
      'attributes make git warn (eol=crlf)',
      { '.gitattributes': '*.txt text eol=crlf\n', 'notes.txt': 'one\r\n' },
      false,
    ],
    // git warns about the URL only where the index holds a submodule at that path.
    [
      '.gitmodules holds a URL git refuses as an option',
      { '.gitmodules': '[submodule "x"]\n\tpath = x\n\turl = -oProxyCommand=touch /tmp/pwned\n', 'notes.txt': 'one\n' },
      true,
    ],
  ])(
    "a repository whose %s still publishes: git's warnings are never read as paths",
    async (_what, repoFiles: Record<string, string>, gitlink: boolean) => {
      h = await createHarness({}, { ...projectFiles, ...repoFiles });
      if (gitlink) await addSubmoduleEntry(h, 'x');
      await h.agent(`${implementsFeature}
fs.writeFileSync(path.join(workdir, 'notes.txt'), 'one\\ntwo\\n');`);
      const job = h.job({ title: 'Add two()' });
      await h.drain(job);
      const run = await h.store.get(job.id);
      expect([run?.outcome, run?.error?.message]).toEqual(['succeeded', undefined]);
      const { files } = await pushed(h, branchName(job));
      expect(files).toEqual(expect.arrayContaining(['notes.txt', 'src/lib.js', 'test/two.test.js']));
      expect(files.every((file) => !/warning|LF will be replaced/.test(file))).toBe(true);
    },
  );

  it("a patch job's shell commands run in the sandbox: the data directory and other files of the host are not there", async () => {
    h = await createHarness();
    await h.agent('throw new Error("the model agent must not run for a patch job");');
    const outside = join(h.dir.path, `planted-${randomUUID()}`);
    const patch = JSON.stringify([
      {
        type: 'file_edit',
        action: 'update',
        target: 'src/lib.js',
        content: 'export const one = () => 1;\nexport const two = () => 2;\n',
      },
      {
        type: 'shell_command',
        action: 'run',
        content: `ls ${h.dir.path} > seen.txt 2>&1; echo x > ${outside}; echo "wrote=$?" >> seen.txt; true`,
      },
    ]);
    const job = h.job({ title: 'Add two()', patch });
    await h.drain(job);
    expect(outcomeOf(await h.store.get(job.id))).toBe('succeeded');
    expect(existsSync(outside)).toBe(false);
    const { text } = await pushed(h, branchName(job));
    expect(text).toContain('+wrote=');
    expect(text).not.toMatch(/runs\.sqlite|queue\.sqlite|origin\.git/);
  });

  it('a node shim planted in node_modules never runs in a later job: only install steps write dependencies', async () => {
    const lock = {
      name: 'sample',
      lockfileVersion: 3,
      requires: true,
      packages: {
        '': { name: 'sample', dependencies: { dep: 'file:vendor/dep' } },
        'node_modules/dep': { resolved: 'vendor/dep', link: true },
        'vendor/dep': { name: 'dep', version: '1.0.0' },
      },
    };
    h = await createHarness(
      {},
      {
        ...projectFiles,
        'package.json': JSON.stringify(
          {
            name: 'sample',
            private: true,
            type: 'module',
            dependencies: { dep: 'file:vendor/dep' },
            scripts: { build: 'node build.mjs', test: 'node --test' },
          },
          null,
          2,
        ),
        'package-lock.json': JSON.stringify(lock, null, 2),
        'vendor/dep/package.json': JSON.stringify({ name: 'dep', version: '1.0.0' }),
      },
    );
    // Before the first install (pass 1) and after it (pass 2): plant a node shim, and a
    // forged install stamp beside it.
    await h.agent(`${implementsFeature}
const bin = path.join(workdir, 'node_modules', '.bin');
let outcome = 'planted';
try {
  fs.mkdirSync(bin, { recursive: true });
  fs.writeFileSync(path.join(bin, 'node'), '#!/bin/sh\\necho SHIM-RAN\\nexit 0\\n', { mode: 0o755 });
  fs.writeFileSync(path.join(workdir, 'node_modules', '.codefleet-lock-hash'), 'forged\\n');
} catch (e) { outcome = e.code; }
// What npm ci wrote is there to overwrite after the install, unless it is read-only.
let overwrite = 'absent';
const installed = path.join(workdir, 'node_modules', '.package-lock.json');
if (fs.existsSync(installed)) { try { fs.appendFileSync(installed, ' '); overwrite = 'written'; } catch (e) { overwrite = e.code; } }
fs.writeFileSync(path.join(workdir, 'shim-' + pass + '.txt'), outcome + ' ' + overwrite + '\\n');`);
    const first = h.job({ title: 'Add two()' });
    const second = h.job({ title: 'Add two() again' });
    await h.drain(first, second);
    for (const job of [first, second]) {
      const run = await h.store.get(job.id);
      expect([run?.outcome, run?.error?.message]).toEqual(['succeeded', undefined]);
      expect(run!.verification.some((v) => v.output_tail.includes('SHIM-RAN'))).toBe(false);
      // The install ran on the base before the agent (job 1) and was kept for job 2: the
      // passes found it fresh ...
      expect(
        run!.verification.filter((v) => v.step === 'install').every((v) => v.output_tail.includes('install skipped')),
      ).toBe(true);
      // ... and node_modules was read-only for the agent throughout.
      const { text } = await pushed(h, branchName(job));
      expect(text).toMatch(/^\+\S+ (EROFS|EACCES|EPERM)$/m);
      expect(text).not.toMatch(/^\+\S+ written$/m);
    }
  });

  it("a file the install's lifecycle script runs, changed by an agent, shapes no dependencies a later job uses", async () => {
    const lock = {
      name: 'sample',
      lockfileVersion: 3,
      requires: true,
      packages: {
        '': { name: 'sample', hasInstallScript: true, dependencies: { dep: 'file:vendor/dep' } },
        'node_modules/dep': { resolved: 'vendor/dep', link: true },
        'vendor/dep': { name: 'dep', version: '1.0.0' },
      },
    };
    h = await createHarness(
      {},
      {
        ...projectFiles,
        'package.json': JSON.stringify(
          {
            name: 'sample',
            private: true,
            type: 'module',
            dependencies: { dep: 'file:vendor/dep' },
            scripts: { postinstall: 'node setup.cjs', build: 'node build.mjs', test: 'node --test' },
          },
          null,
          2,
        ),
        'package-lock.json': JSON.stringify(lock, null, 2),
        'vendor/dep/package.json': JSON.stringify({ name: 'dep', version: '1.0.0' }),
        'setup.cjs': "require('fs').writeFileSync('node_modules/.who', 'base');\n",
      },
    );
    await h.agent(`${implementsFeature}
if (!fs.existsSync(path.join(workdir, 'planted'))) fs.writeFileSync(path.join(workdir, 'setup.cjs'), "require('fs').writeFileSync('node_modules/.who', 'PLANTED');\\n");`);
    const first = h.job({ title: 'Add two()' });
    const second = h.job({
      title: 'Add two() again',
      dod: [['node', '-e', "console.log('who=' + require('fs').readFileSync('node_modules/.who', 'utf8'))"]],
    });
    await h.drain(first, second);
    const run = await h.store.get(second.id);
    expect(outcomeOf(run)).toBe('succeeded');
    const dod = run!.verification.find((v) => v.step === 'dod');
    expect(dod?.output_tail).toContain('who=base');
  });
});
