import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { loadConfig } from '@codefleet/config';
import type { GithubForge } from '@codefleet/forge';
import { silentLogger } from '@codefleet/log';
import { followUpFromReview } from '@codefleet/producer';
import { createTempDir, git, gitTestEnv, startGithubStandIn, type GithubStandIn, type TempDir } from '@codefleet/testkit';
import { runCli } from '../src/index.js';
import { openRuntime } from '../src/runtime.js';

// The codefleet CLI end to end on the GitHub STAND-IN: a person labels an issue, the
// poller queues it, a worker runs a scripted agent (stand-in for a model) and opens the
// pull request, all through the real Octokit adapter and git over smart HTTP.
describe('codefleet on GitHub (stand-in)', () => {
  let gh: GithubStandIn;
  let dir: TempDir;
  beforeEach(async () => {
    gh = await startGithubStandIn();
    dir = await createTempDir('cli-gh');
  });
  afterEach(async () => {
    await gh.close();
    await dir.dispose();
  });
  const cli = async (...argv: string[]) => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runCli(['--config', join(dir.path, 'config.yaml'), ...argv], {
      out: (l) => out.push(l), err: (l) => err.push(l), cwd: dir.path,
      env: { PATH: process.env.PATH, HOME: dir.path, GITHUB_TOKEN: gh.token, ...gitTestEnv() },
    });
    return { code, out: out.join('\n'), err: err.join('\n') };
  };

  it('label → poll → worker → one pull request with Fixes #N; the issue shows the outcome', async () => {
    await gh.createRepo('acme/widgets', { 'notes.txt': 'hello\n' });
    gh.setPermission('acme/widgets', 'alice', 'write');
    const issue = gh.createIssue('acme/widgets', { title: 'Append more notes', body: 'Add a line to notes.txt.' });
    gh.labelIssue('acme/widgets', issue.number, 'codefleet', 'alice');
    const agent = join(dir.path, 'agent.mjs');
    await writeFile(agent, "import fs from 'node:fs';\nconst w = process.argv[process.argv.indexOf('--workdir') + 1];\nfs.appendFileSync(w + '/notes.txt', 'more\\n');\n");
    await writeFile(join(dir.path, 'config.yaml'), [
      'data_dir: ./data', 'logging:', '  level: silent',
      'agents:', '  default: script', '  script:', `    module: ${agent}`,
      'forge:', '  type: github', '  github:', `    api_url: ${gh.url}`, '    repos: [acme/widgets]', '',
    ].join('\n'));

    const polled = await cli('producer', 'poll', '--once');
    expect(polled).toMatchObject({ code: 0, err: '' });
    expect(polled.out).toContain('"status":"enqueued"');
    expect((await cli('producer', 'poll', '--once')).out).toBe('');

    const worked = await cli('worker', '--once');
    expect(worked.out).toContain('processed 1: 1 done');
    const pulls = gh.pulls('acme/widgets');
    expect(pulls).toHaveLength(1);
    expect(pulls[0]!.head.ref).toBe(`ai/issue-${issue.number}`);
    expect(pulls[0]!.body).toContain(`Fixes #${issue.number}`);
    expect(gh.comments('acme/widgets', issue.number).at(-1)?.body).toMatch(/Status: done\s*$/);
    expect(gh.labels('acme/widgets', issue.number).sort()).toEqual(['codefleet', 'codefleet:pr-opened']);

    // A reviewer asks for more: the follow-up commits on the same branch, same pull request.
    const loaded = await loadConfig({ path: join(dir.path, 'config.yaml'), cwd: dir.path, env: { PATH: process.env.PATH, HOME: dir.path, GITHUB_TOKEN: gh.token, ...gitTestEnv() } });
    const rt = await openRuntime(loaded, { log: silentLogger() });
    try {
      const outcome = await followUpFromReview({ forge: (await rt.forge()) as GithubForge, queue: rt.queue, log: rt.log, labels: { queued: 'codefleet:queued' }, cancels: rt.store }, {
        repo: 'acme/widgets', issueNumber: pulls[0]!.number, actor: 'alice', via: 'test', pullNumber: pulls[0]!.number,
        headRef: pulls[0]!.head.ref, headRepo: 'acme/widgets', reviewBody: 'Also add a final line.', reviewState: 'changes_requested',
      });
      expect(outcome).toMatchObject({ status: 'enqueued' });
    } finally {
      await rt.close();
    }
    expect((await cli('worker', '--once')).out).toContain('processed 1: 1 done');
    expect(gh.pulls('acme/widgets')).toHaveLength(1);
    expect(gh.prCreations('acme/widgets', `ai/issue-${issue.number}`)).toBe(1);
    expect(await git(gh.repoDir('acme/widgets'), ['rev-list', '--count', `main..ai/issue-${issue.number}`])).toBe('2');
  }, 60_000);

  it('refuses to start without the token or the webhook secret, naming the variable', async () => {
    await writeFile(join(dir.path, 'config.yaml'), `data_dir: ./data\nforge:\n  type: github\n  github:\n    api_url: ${gh.url}\n`);
    const webhook = await cli('producer', 'webhook', '--port', '0');
    expect(webhook.code).not.toBe(0);
    expect(webhook.err).toContain('GITHUB_WEBHOOK_SECRET');
  });
});
