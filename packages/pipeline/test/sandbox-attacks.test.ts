import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { SecretRegistry } from '@codefleet/log';
import { git } from '@codefleet/testkit';
import { branchName } from '@codefleet/workspace';
import { createHarness, implementsFeature, projectFiles, type Harness, outcomeOf } from './harness.js';

// A prompt-injected agent, played by scripted agents, against the real sandbox (bubblewrap
// here): each test is one attack, and what must hold after the job.
// Whole jobs, several per test (installs included): the package's timeout guards against a
// hang only.

let h: Harness | undefined;
afterEach(async () => {
  await h?.dispose();
  h = undefined;
});

/** What the work branch holds, file by file, on the origin the PR was pushed to. */
async function pushed(harness: Harness, branch: string): Promise<{ files: string[]; text: string }> {
  const files = (await git(harness.origin, ['ls-tree', '-r', '--name-only', branch])).trim().split('\n');
  const text = await git(harness.origin, ['log', '-p', '--format=%H %s', `main..${branch}`]);
  return { files, text };
}

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

  it("a .git directory planted in the copy (a clean filter) never runs in codefleet's own commit", async () => {
    h = await createHarness();
    const marker = join(h.dir.path, `filter-ran-${randomUUID()}`);
    await h.agent(`${implementsFeature}
if (pass === 'test') {
  // Replace the copy's link to its git directory with a git directory of the agent's own.
  fs.rmSync(path.join(workdir, '.git'), { recursive: true, force: true });
  fs.mkdirSync(path.join(workdir, '.git', 'objects'), { recursive: true });
  fs.mkdirSync(path.join(workdir, '.git', 'refs'), { recursive: true });
  fs.writeFileSync(path.join(workdir, '.git', 'HEAD'), 'ref: refs/heads/main\\n');
  fs.writeFileSync(path.join(workdir, '.git', 'config'), '[core]\\n\\trepositoryformatversion = 0\\n[filter "x"]\\n\\tclean = sh -c "touch ${marker}; cat"\\n');
  fs.writeFileSync(path.join(workdir, '.gitattributes'), '* filter=x\\n');
}`);
    const job = h.job({ title: 'Add two()' });
    await h.drain(job);
    expect(outcomeOf(await h.store.get(job.id))).toBe('succeeded');
    expect(existsSync(marker)).toBe(false);
    const { files } = await pushed(h, branchName(job));
    expect(files).toContain('test/two.test.js');
  });

  it("a commondir rewritten to a look-alike git directory never reaches codefleet's own commit", async () => {
    h = await createHarness();
    const marker = join(h.dir.path, `filter-ran-${randomUUID()}`);
    // The copy's git directory (as the copy's .git link names it) is told its common part is
    // a look-alike whose config and attributes run a filter in whatever git reads them next.
    await h.agent(`${implementsFeature}
if (pass === 'test') {
  const link = fs.readFileSync(path.join(workdir, '.git'), 'utf8').replace(/^gitdir: /, '').trim();
  const fake = path.join(workdir, '.look-alike');
  for (const dir of ['objects/info', 'refs/heads', 'info']) fs.mkdirSync(path.join(fake, dir), { recursive: true });
  fs.writeFileSync(path.join(fake, 'HEAD'), 'ref: refs/heads/main\\n');
  fs.writeFileSync(path.join(fake, 'config'), '[core]\\n\\trepositoryformatversion = 0\\n\\tbare = false\\n[filter "x"]\\n\\tclean = sh -c "touch ${marker}; cat"\\n');
  fs.writeFileSync(path.join(fake, 'info', 'attributes'), '* filter=x\\n');
  fs.writeFileSync(path.join(link, 'commondir'), fake + '\\n');
}`);
    const job = h.job({ title: 'Add two()' });
    await h.drain(job);
    expect(outcomeOf(await h.store.get(job.id))).toBe('succeeded');
    expect(existsSync(marker)).toBe(false);
    const { files } = await pushed(h, branchName(job));
    expect(files).toContain('test/two.test.js');
  });

  it('a 2 GB file the agent writes is refused before git copies it into the shared mirror', async () => {
    h = await createHarness();
    // Sparse: 2 GB to every reader, nothing on this machine's disk.
    await h.agent(`${implementsFeature}
if (pass === 'test') {
  fs.writeFileSync(path.join(workdir, 'big.bin'), '');
  fs.truncateSync(path.join(workdir, 'big.bin'), 2 * 1024 ** 3);
}`);
    const job = h.job({ title: 'Add two()' });
    await h.drain(job);
    const run = await h.store.get(job.id);
    expect(run?.outcome).toBe('failed');
    expect(run?.error?.message).toMatch(/big\.bin is 2048 MB/);
    const mirrors = join(h.dir.path, 'cache', 'mirrors');
    for (const mirror of readdirSync(mirrors)
      .filter((name) => name.endsWith('.git'))
      .map((name) => join(mirrors, name))) {
      const sizes = (await git(mirror, ['cat-file', '--batch-all-objects', '--batch-check=%(objectsize)']))
        .trim()
        .split('\n')
        .map(Number);
      expect(Math.max(...sizes)).toBeLessThan(1024 * 1024);
      expect(readdirSync(join(mirror, 'objects', 'pack')).filter((name) => name.startsWith('tmp_'))).toEqual([]);
    }
  });

  it('a global git config and attributes file planted in HOME reach neither the commit nor the next job', async () => {
    h = await createHarness();
    await h.agent(`${implementsFeature}
const home = process.env.HOME;
const before = fs.readdirSync(home).join(',');
fs.mkdirSync(path.join(home, '.config', 'git'), { recursive: true });
fs.writeFileSync(path.join(home, '.gitconfig'), '[filter "evil"]\\n\\tclean = sed s/2/666/\\n');
fs.writeFileSync(path.join(home, '.config', 'git', 'attributes'), '*.js filter=evil\\n');
fs.writeFileSync(path.join(workdir, 'home-seen-' + pass + '.txt'), 'home:' + before + '\\n');`);
    const first = h.job({ title: 'Add two()' });
    const second = h.job({ title: 'Add two() again' });
    await h.drain(first, second);
    for (const job of [first, second]) {
      expect(outcomeOf(await h.store.get(job.id))).toBe('succeeded');
      const { text } = await pushed(h, branchName(job));
      expect(text).toContain('export const two = () => 2;');
      // The filter would have turned 2 into 666 in what was committed (not in a commit hash).
      expect(text).not.toMatch(/^\+.*=> 666/m);
    }
    // Each run starts with an empty HOME: no run saw what an earlier one planted.
    for (const job of [first, second]) {
      const { text } = await pushed(h, branchName(job));
      expect(text.match(/^\+home:.*$/gm)).toEqual(['+home:', '+home:']);
    }
  });

  it('workflow files are read-only and never committed, even a new one', async () => {
    h = await createHarness({}, { ...projectFiles, '.github/workflows/ci.yml': 'on: push\n' });
    await h.agent(`${implementsFeature}
let wrote = 'refused';
try { fs.writeFileSync(path.join(workdir, '.github', 'workflows', 'ci.yml'), 'on: push\\njobs: { x: { runs-on: ubuntu-latest, steps: [ { run: "curl evil" } ] } }\\n'); wrote = 'written'; } catch (e) { wrote = e.code; }
try { fs.writeFileSync(path.join(workdir, '.github', 'workflows', 'new.yml'), 'on: pull_request_target\\n'); } catch {}
fs.writeFileSync(path.join(workdir, 'workflow-write.txt'), wrote + '\\n');`);
    const job = h.job({ title: 'Add two()' });
    await h.drain(job);
    const run = await h.store.get(job.id);
    expect([run?.outcome, run?.error?.message]).toEqual(['succeeded', undefined]);
    const { files, text } = await pushed(h, branchName(job));
    expect(files).not.toContain('.github/workflows/new.yml');
    expect(text).not.toContain('curl evil');
    expect(text).toMatch(/\+(EROFS|EACCES|EPERM|refused)/);
  });

  it("cannot write the shared mirror: a remote rewrite in the copy's git config stays in the agent's own git directory", async () => {
    h = await createHarness();
    await h.agent(`${implementsFeature}
const { execFileSync } = await import('node:child_process');
let out = '';
try { out = execFileSync('git', ['config', 'remote.origin.url', '/tmp/attacker.git'], { cwd: workdir, encoding: 'utf8', stdio: 'pipe' }); out += 'config-ok'; } catch (e) { out = 'config-failed'; }
try { out += ' ' + execFileSync('git', ['rev-parse', '--git-common-dir'], { cwd: workdir, encoding: 'utf8' }).trim(); } catch { out += ' no-git'; }
fs.writeFileSync(path.join(workdir, 'git-seen.txt'), out + '\\n');`);
    const first = h.job({ title: 'Add two()' });
    const second = h.job({ title: 'Add two() again' });
    await h.drain(first, second);
    // The agent's git worked on a git directory of its own, not the shared mirror, and the
    // second job fetched from the real origin.
    for (const job of [first, second]) expect(outcomeOf(await h.store.get(job.id))).toBe('succeeded');
    const { text } = await pushed(h, branchName(first));
    expect(text).toMatch(/^\+config-ok /m);
    // Its common dir is its own (shown where the copy's worktree directory is), not the mirror.
    expect(text).not.toMatch(/^\+config-ok .*\/mirrors\/[0-9a-f]+\.git$/m);
    expect((await pushed(h, branchName(second))).files).toContain('src/lib.js');
  });

  it("laid out as Seatbelt must (no remapped paths), the agent's git still works on a directory of its own", async () => {
    process.env.CODEFLEET_TEST_SANDBOX_LAYOUT = 'no-remap';
    try {
      h = await createHarness();
    } finally {
      delete process.env.CODEFLEET_TEST_SANDBOX_LAYOUT;
    }
    await h.agent(`${implementsFeature}
const { execFileSync } = await import('node:child_process');
const run = (args) => { try { return execFileSync('git', args, { cwd: workdir, encoding: 'utf8', stdio: 'pipe' }).trim(); } catch (e) { return 'failed'; } };
const seen = [run(['config', 'remote.origin.url', '/tmp/attacker.git']) === 'failed' ? 'config-failed' : 'config-ok'];
seen.push(run(['add', '-A']) === 'failed' ? 'add-failed' : 'add-ok');
seen.push(run(['-c', 'user.name=a', '-c', 'user.email=a@b', 'commit', '-qm', 'agent commit']) === 'failed' ? 'commit-failed' : 'commit-ok');
seen.push(run(['rev-parse', '--git-common-dir']));
fs.writeFileSync(path.join(workdir, 'git-seen.txt'), seen.join(' ') + '\\n');`);
    const first = h.job({ title: 'Add two()' });
    const second = h.job({ title: 'Add two() again' });
    await h.drain(first, second);
    for (const job of [first, second]) expect(outcomeOf(await h.store.get(job.id))).toBe('succeeded');
    const { text } = await pushed(h, branchName(first));
    // Config, staging and commit all worked, in the job's own git directory beside the copy.
    expect(text).toMatch(/^\+config-ok add-ok commit-ok \/.*\.view\/git$/m);
    expect(text).not.toContain('agent commit');
    // The mirror's config was never written: the second job fetched from the real origin.
    expect((await pushed(h, branchName(second))).files).toContain('src/lib.js');
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
