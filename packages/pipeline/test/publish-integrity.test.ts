import { randomBytes, randomUUID } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import type { RunRecord } from '@codefleet/core';
import { scanForSecrets, SecretRegistry } from '@codefleet/log';
import { git } from '@codefleet/testkit';
import { slugify } from '@codefleet/workspace';
import { createHarness, implementsFeature, type Harness } from './harness.js';

// What is pushed is what was verified, byte for byte, and nothing published carries a
// secret: whole jobs through the real pipeline, real git repos, the local forge's bare origin.

let h: Harness | undefined;
afterEach(async () => {
  await h?.dispose();
  h = undefined;
});

// An operator's global git config, as git-lfs writes one: a clean filter that would rewrite
// content on `git add`, and a textconv that would hide a file's content from a diff.
const operatorGitConfig = [
  '[filter "upper"]',
  '\tclean = tr a-z A-Z',
  '\tsmudge = cat',
  '\trequired = true',
  '[diff "hide"]',
  "\ttextconv = sh -c 'echo hidden'",
].join('\n');

/** Everything the job published that people read, for a scan. */
async function published(harness: Harness, run: RunRecord): Promise<{ branch: string; texts: string[] }> {
  const branch = run.branch ?? '';
  const pr = await harness.forge.findPullRequest(run.job.repo, branch);
  const comments = await harness.forge.listComments(run.job.repo, { kind: 'task', key: run.job.idempotency_key });
  const pushed =
    (await git(harness.origin, ['branch', '--list', branch])) === ''
      ? ''
      : await git(harness.origin, ['log', '--format=%B', `main..${branch}`]);
  return { branch, texts: [branch, pushed, pr?.title ?? '', pr?.body ?? '', ...comments.map((c) => c.body)] };
}

describe('publishing', () => {
  it("pushes each file as verified, whatever the agent's .gitattributes asks (ident, eol, text, filter, diff)", async () => {
    h = await createHarness({ gitConfig: operatorGitConfig });
    const files: Record<string, string> = {
      'ident.txt': '$Id: 0123456789abcdef0123456789abcdef01234567 $\n',
      'eol.txt': 'one\r\ntwo\r\n',
      'text.txt': 'three\r\n',
      'filter.txt': 'lower case\n',
      'diff.txt': 'shown\r\n',
    };
    const attributes =
      'ident.txt ident\neol.txt text eol=lf\ntext.txt text\nfilter.txt filter=upper\ndiff.txt -diff diff=hide\n';
    await h.agent(`${implementsFeature}
if (pass === 'implement') {
  fs.writeFileSync(path.join(workdir, '.gitattributes'), ${JSON.stringify(attributes)});
  for (const [name, content] of Object.entries(${JSON.stringify(files)})) fs.writeFileSync(path.join(workdir, name), content);
}`);
    const job = h.job({ title: 'Add two()' });
    await h.drain(job);
    const run = await h.store.get(job.id);
    expect([run?.outcome, run?.error?.message]).toEqual(['succeeded', undefined]);
    const dir = join(h.dir.path, 'verified');
    await mkdir(dir);
    const verified: Record<string, string> = {};
    const pushed: Record<string, string> = {};
    for (const [name, content] of Object.entries(files)) {
      await writeFile(join(dir, name), content);
      verified[name] = await git(dir, ['hash-object', '--no-filters', name]);
      pushed[name] = await git(h.origin, ['rev-parse', `${run!.branch!}:${name}`]);
    }
    expect(pushed).toEqual(verified);
  });

  it('refuses a forge token written as `xxd -p` writes it (hex wrapped at 60 columns), even in a file a diff hides', async () => {
    const token = `ghp_${randomBytes(18).toString('hex')}`;
    h = await createHarness({ secrets: new SecretRegistry([token]), gitConfig: operatorGitConfig });
    const dump = Buffer.from(`${token}\n`)
      .toString('hex')
      .replace(/(.{60})/g, '$1\n');
    await h.agent(`${implementsFeature}
fs.writeFileSync(path.join(workdir, '.gitattributes'), 'dump.txt -diff diff=hide\\n');
fs.writeFileSync(path.join(workdir, 'dump.txt'), ${JSON.stringify(`${dump}\n`)});`);
    const job = h.job({ title: 'Add two()' });
    await h.drain(job);
    const run = await h.store.get(job.id);
    expect(run).toMatchObject({ outcome: 'failed', error: { code: 'secret_in_diff' } });
    expect(run!.error!.message).toContain('(hex-encoded) in dump.txt');
    expect(await git(h.origin, ['branch', '--list', run!.branch!])).toBe('');
  });

  it('masks a configured secret in the task title everywhere: branch, commit message, PR title and body, status comment', async () => {
    const secret = `sk-test-${randomUUID()}`;
    h = await createHarness({ secrets: new SecretRegistry([secret]) });
    await h.agent(implementsFeature);
    const job = h.job({ title: `Add two() using ${secret}` });
    await h.drain(job);
    const run = (await h.store.get(job.id))!;
    expect([run.outcome, run.error?.message]).toEqual(['succeeded', undefined]);
    const { branch, texts } = await published(h, run);
    expect(branch).toMatch(/^ai\/add-two-using-[0-9a-f]{8}$/);
    expect(texts.filter((text) => text !== '')).toHaveLength(5);
    for (const text of texts) {
      expect(scanForSecrets([{ file: 'published', added: text }], [secret])).toEqual([]);
      // What a slug keeps of the value: lower case, dashes.
      expect(text).not.toContain(slugify(secret).slice(0, 12));
    }
  });

  it('refuses to push a secret encoded in the task title, and the failure report does not carry it', async () => {
    const secret = `sk-test-${randomUUID()}`;
    h = await createHarness({ secrets: new SecretRegistry([secret]) });
    await h.agent(implementsFeature);
    const hex = Buffer.from(secret).toString('hex');
    const job = h.job({ title: `Add two() ${hex}` });
    await h.drain(job);
    const run = (await h.store.get(job.id))!;
    expect(run).toMatchObject({ outcome: 'failed', error: { code: 'secret_in_diff' } });
    expect(run.error!.message).toContain('(hex-encoded) in (the commit message)');
    const { branch, texts } = await published(h, run);
    expect(await git(h.origin, ['branch', '--list', branch])).toBe('');
    expect(branch).toMatch(/^ai\/withheld-it-held-a-secret-value-in-encod-[0-9a-f]{8}$/);
    expect(texts.join('\n')).toContain('secret_in_diff');
    for (const text of texts) expect(scanForSecrets([{ file: 'published', added: text }], [secret])).toEqual([]);
    expect(texts.join('\n')).not.toContain(hex.slice(0, 16));
  });
});
