import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { loadConfig } from '@codefleet/config';
import { pushedMarker } from '@codefleet/forge';
import { followUpFromReview, type GithubForge } from '@codefleet/github';
import { silentLogger } from '@codefleet/log';
import { createHmac } from 'node:crypto';
import {
  createTempDir,
  git,
  gitTestEnv,
  startGithubStandIn,
  waitFor,
  type GithubStandIn,
  type TempDir,
} from '@codefleet/testkit';
import { deliveryQueueSettings, webhook } from '../src/commands/producer.js';
import { followUpQueueSuffix } from '../src/commands/serve-slack.js';
import { sideQueueSettings } from '../src/commands/side-queue.js';
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
      out: (l) => out.push(l),
      err: (l) => err.push(l),
      cwd: dir.path,
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
    await writeFile(
      agent,
      "import fs from 'node:fs';\nconst w = process.argv[process.argv.indexOf('--workdir') + 1];\nfs.appendFileSync(w + '/notes.txt', 'more\\n');\n",
    );
    await writeFile(
      join(dir.path, 'config.yaml'),
      [
        'data_dir: ./data',
        'logging:',
        '  level: silent',
        'agents:',
        '  default: script',
        '  script:',
        `    module: ${agent}`,
        'forge:',
        '  type: github',
        '  github:',
        `    api_url: ${gh.url}`,
        '    repos: [acme/widgets]',
        '',
      ].join('\n'),
    );

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
    const loaded = await loadConfig({
      path: join(dir.path, 'config.yaml'),
      cwd: dir.path,
      env: { PATH: process.env.PATH, HOME: dir.path, GITHUB_TOKEN: gh.token, ...gitTestEnv() },
    });
    const rt = await openRuntime(loaded, { log: silentLogger() });
    try {
      const outcome = await followUpFromReview(
        {
          issues: ((await rt.forge()) as GithubForge).issues,
          queue: rt.queue,
          log: rt.log,
          requester: await rt.requester(),
          cancels: rt.store,
        },
        {
          repo: 'acme/widgets',
          issueNumber: pulls[0]!.number,
          actor: 'alice',
          via: 'test',
          pullNumber: pulls[0]!.number,
          headRef: pulls[0]!.head.ref,
          headRepo: 'acme/widgets',
          reviewBody: 'Also add a final line.',
          reviewState: 'changes_requested',
        },
      );
      expect(outcome).toMatchObject({ status: 'enqueued' });
    } finally {
      await rt.close();
    }
    expect((await cli('worker', '--once')).out).toContain('processed 1: 1 done');
    expect(gh.pulls('acme/widgets')).toHaveLength(1);
    expect(gh.prCreations('acme/widgets', `ai/issue-${issue.number}`)).toBe(1);
    expect(await git(gh.repoDir('acme/widgets'), ['rev-list', '--count', `main..ai/issue-${issue.number}`])).toBe('2');
  });

  it('producer webhook: a signed form-encoded label delivery is recorded, then queued as a job', async () => {
    await gh.createRepo('acme/widgets');
    gh.setPermission('acme/widgets', 'alice', 'write');
    const issue = gh.createIssue('acme/widgets', { title: 'Append more notes' });
    gh.labelIssue('acme/widgets', issue.number, 'codefleet', 'alice');
    await writeFile(
      join(dir.path, 'config.yaml'),
      [
        'data_dir: ./data',
        'logging:',
        '  level: silent',
        'forge:',
        '  type: github',
        '  github:',
        `    api_url: ${gh.url}`,
        '    repos: [acme/widgets]',
        '',
      ].join('\n'),
    );
    const env = {
      PATH: process.env.PATH,
      HOME: dir.path,
      GITHUB_TOKEN: gh.token,
      GITHUB_WEBHOOK_SECRET: 's3cret',
      ...gitTestEnv(),
    };
    const rt = await openRuntime(await loadConfig({ path: join(dir.path, 'config.yaml'), cwd: dir.path, env }), {
      log: silentLogger(),
      longRunning: true,
    });
    const stop = new AbortController();
    const lines: string[] = [];
    const running = webhook(rt, { port: 0, signal: stop.signal }, (l) => lines.push(l));
    try {
      const listening = await waitFor(() => lines.find((l) => l.startsWith('listening')));
      expect(listening).toContain('acme/widgets');
      const url = /(http:\/\/\S+\/webhook)/.exec(listening)![1]!;
      const payload = JSON.stringify({
        action: 'labeled',
        label: { name: 'codefleet' },
        issue: { number: issue.number },
        repository: { full_name: 'acme/widgets' },
        sender: { login: 'alice' },
      });
      const form = new URLSearchParams({ payload }).toString();
      const answer = await fetch(url, {
        method: 'POST',
        body: form,
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          'x-github-event': 'issues',
          'x-github-delivery': '72d3162e-cc78-11e3-81ab-4c9367dc0958',
          'x-hub-signature-256': `sha256=${createHmac('sha256', 's3cret').update(form).digest('hex')}`,
        },
      });
      expect(answer.status).toBe(202);
      await waitFor(async () => (await rt.queue.stats()).ready === 1, { what: 'the job' });
      // The label follows the enqueue: the job is queued first, so nothing is lost if labelling fails.
      await waitFor(() => gh.labels('acme/widgets', issue.number).includes('codefleet:queued'), {
        what: 'the queued label',
      });
    } finally {
      stop.abort();
      await running;
      await rt.close();
    }
  });

  it('producer webhook: a failing check on a codefleet pull request queues a follow-up with the log, as ci_feedback configures', async () => {
    const { bareDir } = await gh.createRepo('acme/widgets');
    const issue = gh.createIssue('acme/widgets', { title: 'Add a widget' });
    const work = join(dir.path, 'work');
    await git(dir.path, ['clone', '--quiet', bareDir, work]);
    await git(work, ['checkout', '--quiet', '-b', `ai/issue-${issue.number}`]);
    await git(work, ['commit', '--quiet', '--allow-empty', '-m', 'widget']);
    await git(work, ['push', '--quiet', 'origin', 'HEAD']);
    const sha = await git(work, ['rev-parse', 'HEAD']);
    await writeFile(
      join(dir.path, 'config.yaml'),
      [
        'data_dir: ./data',
        'logging:',
        '  level: silent',
        'forge:',
        '  type: github',
        '  github:',
        `    api_url: ${gh.url}`,
        '    repos: [acme/widgets]',
        '    ci_feedback:',
        '      max_rounds: 1',
        '      log_bytes: 1024',
        '',
      ].join('\n'),
    );
    const env = {
      PATH: process.env.PATH,
      HOME: dir.path,
      GITHUB_TOKEN: gh.token,
      GITHUB_WEBHOOK_SECRET: 's3cret',
      ...gitTestEnv(),
    };
    const rt = await openRuntime(await loadConfig({ path: join(dir.path, 'config.yaml'), cwd: dir.path, env }), {
      log: silentLogger(),
      longRunning: true,
    });
    const forge = (await rt.forge()) as GithubForge;
    const pr = await forge.ensurePullRequest({
      repo: 'acme/widgets',
      head: `ai/issue-${issue.number}`,
      base: 'main',
      title: 'Add a widget',
      body: `Fixes #${issue.number}\n\n${pushedMarker(sha)}`,
      draft: false,
    });
    const run = await gh.addCheckRun('acme/widgets', {
      ref: sha,
      name: 'test',
      conclusion: 'failure',
      log: `${'ok\n'.repeat(2_000)}Error: widget() is not defined\n`,
    });
    const stop = new AbortController();
    const lines: string[] = [];
    const running = webhook(rt, { port: 0, signal: stop.signal }, (l) => lines.push(l));
    try {
      const listening = await waitFor(() => lines.find((l) => l.startsWith('listening')));
      const url = /(http:\/\/\S+\/webhook)/.exec(listening)![1]!;
      const payload = JSON.stringify({
        action: 'completed',
        repository: { full_name: 'acme/widgets' },
        sender: { login: 'github-actions[bot]' },
        check_run: {
          id: run.id,
          name: 'test',
          head_sha: sha,
          conclusion: 'failure',
          check_suite: { head_branch: `ai/issue-${issue.number}` },
          pull_requests: [{ number: pr.number }],
        },
      });
      const answer = await fetch(url, {
        method: 'POST',
        body: payload,
        headers: {
          'content-type': 'application/json',
          'x-github-event': 'check_run',
          'x-hub-signature-256': `sha256=${createHmac('sha256', 's3cret').update(payload).digest('hex')}`,
        },
      });
      expect(answer.status).toBe(202);
      await waitFor(async () => (await rt.queue.stats()).ready === 1, { what: 'the follow-up job' });
      const job = (await rt.queue.claim({ workerId: 'w' }))!.job;
      expect(job).toMatchObject({
        branch: `ai/issue-${issue.number}`,
        source: { kind: 'issue', number: issue.number },
      });
      expect(job.body).toContain('widget() is not defined');
      expect(job.body.length).toBeLessThan(2_000);
      // The job is queued first (nothing lost), the round's comment follows it.
      const comment = await waitFor(() => gh.comments('acme/widgets', pr.number)[0], { what: 'the round comment' });
      expect(comment.body).toContain('Round 1 of 1');
    } finally {
      stop.abort();
      await running;
      await rt.close();
    }
  });

  it('deliveries are recorded beside the jobs; with SQS on the coordination Redis', () => {
    expect(
      deliveryQueueSettings({ backend: 'local', path: '/q.sqlite', name: 'codefleet', leaseMs: 1_000, maxAttempts: 4 }),
    ).toMatchObject({ backend: 'local', path: '/q.sqlite', name: 'codefleet-deliveries' });
    expect(
      deliveryQueueSettings({
        backend: 'sqs',
        queueUrl: 'https://sqs/q',
        region: 'us-east-1',
        coordinationUrl: 'redis://r:6379',
        prefix: 'cf',
        name: 'codefleet',
        leaseMs: 30_000,
        maxAttempts: 4,
      }),
    ).toEqual({
      backend: 'bullmq',
      url: 'redis://r:6379',
      prefix: 'cf',
      name: 'codefleet-deliveries',
      leaseMs: 30_000,
      maxAttempts: 1_000,
    });
    // Slack's kept follow-ups wait the same way, in a queue of their own.
    expect(
      sideQueueSettings(
        { backend: 'local', path: '/q.sqlite', name: 'codefleet', leaseMs: 1_000, maxAttempts: 4 },
        followUpQueueSuffix,
      ),
    ).toEqual({
      backend: 'local',
      path: '/q.sqlite',
      name: 'codefleet-chat-followups',
      leaseMs: 1_000,
      maxAttempts: 1_000,
    });
  });

  it('refuses to start without the token or the webhook secret, naming the variable', async () => {
    await writeFile(
      join(dir.path, 'config.yaml'),
      `data_dir: ./data\nforge:\n  type: github\n  github:\n    api_url: ${gh.url}\n`,
    );
    const webhook = await cli('producer', 'webhook', '--port', '0');
    expect(webhook.code).not.toBe(0);
    expect(webhook.err).toContain('GITHUB_WEBHOOK_SECRET');
  });
});
