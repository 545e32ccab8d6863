import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { git } from '@codefleet/testkit';
import { branchName } from '@codefleet/workspace';
import { createHarness, implementsFeature, outcomeOf, projectFiles, pushed, type Harness } from './harness.js';

// A prompt-injected agent, played by scripted agents, against the real sandbox (bubblewrap
// here), through git: its hooks, filters, config and the mirror every job shares. Each test
// is one attack, and what must hold after the job. (sandbox-attacks.test.ts has the rest.)
// Whole jobs, several per test (installs included): the package's timeout guards against a
// hang only.

let h: Harness | undefined;
afterEach(async () => {
  await h?.dispose();
  h = undefined;
});

describe('the sandbox against a prompt-injected agent: git and the shared mirror', () => {
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
});
