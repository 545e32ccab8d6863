import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { parseSuite } from '@codefleet/eval';
import { createTempDir, gitTestEnv, startGithubStandIn, type GithubStandIn, type TempDir } from '@codefleet/testkit';
import { runCli } from '../src/index.js';

// `codefleet eval mine --github` end to end on the GitHub STAND-IN: the API read through the
// real client at forge.github.api_url, the history cloned over git's smart HTTP with the token.
describe('codefleet eval mine --github (stand-in)', () => {
  let gh: GithubStandIn;
  let dir: TempDir;
  beforeEach(async () => {
    gh = await startGithubStandIn();
    dir = await createTempDir('eval-gh');
    await writeFile(
      join(dir.path, 'config.yaml'),
      ['data_dir: ./data', 'forge:', '  github:', `    api_url: ${gh.url}`, ''].join('\n'),
    );
  });
  afterEach(async () => {
    await gh.close();
    await dir.dispose();
  });
  const cli = async (env: Record<string, string>, ...argv: string[]) => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runCli(['--config', join(dir.path, 'config.yaml'), ...argv], {
      out: (l) => out.push(l),
      err: (l) => err.push(l),
      cwd: dir.path,
      env: { PATH: process.env.PATH, HOME: dir.path, ...gitTestEnv(), ...env },
    });
    return { code, out: out.join('\n'), err: err.join('\n') };
  };
  const mine = (...extra: string[]) =>
    cli({ GITHUB_TOKEN: gh.token }, 'eval', 'mine', '--github', 'acme/lib', '--out', 'suite.jsonl', ...extra);

  it('clones the repository, states tasks by their issues, and a second run adds only what is new', async () => {
    await gh.createRepo('acme/lib', { 'src/lib.js': 'export const v = 0;\n' });
    const issue = gh.createIssue('acme/lib', { title: 'v should be 1', body: 'It is 0.' });
    const land = async (branch: string, v: number, pull: { title: string; body?: string }) => {
      await gh.pushBranch('acme/lib', {
        branch,
        files: { 'src/lib.js': `export const v = ${v};\n`, 'test/lib.test.js': `// expects ${v}\n` },
        message: pull.title,
      });
      const opened = gh.openPull('acme/lib', { head: branch, ...pull });
      await gh.landPull('acme/lib', opened.number, 'squash');
      return opened.number;
    };
    const fixed = await land('one', 1, { title: 'Set v to 1', body: `Closes #${issue.number}` });

    const first = await mine();
    expect(first).toMatchObject({ code: 0 });
    expect(first.err).toContain('eval mine: cloning http://127.0.0.1:');
    expect(first.out).toMatch(/^eval mine: read 1 of 1 merged pull requests; 1 tasks \(1 new\) in /);
    const suite = parseSuite(await readFile(join(dir.path, 'suite.jsonl'), 'utf8'));
    expect(suite.instances.map((i) => [i.instance_id, i.repo, i.statement_source, i.problem_statement])).toEqual([
      [`acme__lib-${fixed}`, 'acme/lib', 'issue', 'v should be 1\n\nIt is 0.'],
    ]);

    const next = await land('two', 2, { title: 'Set v to 2', body: 'Two is better.' });
    const second = await mine();
    expect(second.out).toContain('2 tasks (1 new)');
    const again = parseSuite(await readFile(join(dir.path, 'suite.jsonl'), 'utf8'));
    expect(again.instances.map((i) => [i.instance_id, i.statement_source])).toEqual([
      [`acme__lib-${fixed}`, 'issue'],
      [`acme__lib-${next}`, 'pull_request'],
    ]);
    // Every API request carried the token in its header (git sends it once asked); no output shows it.
    expect(gh.requests.filter((r) => !r.path.includes('.git/')).every((r) => r.authorized)).toBe(true);
    expect(gh.requests.filter((r) => r.credentials).every((r) => r.authorized)).toBe(true);
    expect(`${first.out}${first.err}${second.out}${second.err}`).not.toContain(gh.token);
  });

  it('refuses without a token, with --ref, and with a --github that is not owner/name', async () => {
    const noToken = await cli({}, 'eval', 'mine', '--github', 'acme/lib', '--out', 'x.jsonl');
    expect(noToken.code).not.toBe(0);
    expect(noToken.err).toContain('export a token in $GITHUB_TOKEN');
    const withRef = await mine('--ref', 'main');
    expect(withRef.code).not.toBe(0);
    expect(withRef.err).toContain("option '--ref <branch|commit>' cannot be used with option '--github <owner/name>'");
    const notGithub = await cli({}, 'eval', 'mine', '--github', 'https://example.com/x.git', '--out', 'x.jsonl');
    expect(notGithub.err).toContain('expected GitHub owner/name');
    const neither = await cli({}, 'eval', 'mine', '--out', 'x.jsonl');
    expect(neither.err).toContain('give --repo');
  });
});
