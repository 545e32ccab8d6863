import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { createGithubForge, createIssueRequester, githubCredentialEnv } from '@codefleet/github';
import { createSlackClient, createSlackRequester } from '@codefleet/slack';
import {
  gitTestEnv,
  startGithubStandIn,
  startSlackStandIn,
  type GithubStandIn,
  type SlackStandIn,
} from '@codefleet/testkit';
import { createWorkspaceManager } from '@codefleet/workspace';
import { createHarness, implementsFeature, projectFiles, type Harness } from './harness.js';

// Reporting never blocks work, against the real stand-ins speaking the wire protocols: a
// platform that accepts requests and never answers, and one that rate-limits every edit.
// The job ends `done` however the platform behaves; a final report that cannot arrive
// before its deadline is journaled undelivered.
let h: Harness | undefined;
let slack: SlackStandIn | undefined;
let gh: GithubStandIn | undefined;
afterEach(async () => {
  await h?.dispose();
  await slack?.close();
  await gh?.close();
  h = slack = gh = undefined;
});

/** A harness whose jobs come from a Slack thread and report there through the real Web API client. */
async function slackJob(standIn: SlackStandIn, clientOptions: Parameters<typeof createSlackClient>[1] = {}) {
  h = await createHarness({ reportDeadlineMs: 1_000 });
  h.deps.requester = createSlackRequester({
    client: createSlackClient({ bot_token: standIn.botToken, api_url: standIn.apiUrl }, clientOptions),
    store: h.store,
  });
  await h.agent(implementsFeature);
  const { ts } = standIn.mention({ channel: 'C0REPO', user: 'U0ALICE', text: 'add two()' });
  const job = h.job({
    title: 'Add two()',
    source: { kind: 'chat', platform: 'slack', channel: 'C0REPO', thread_id: ts, message_id: ts },
  });
  return { harness: h, job, ts };
}

describe('reporting never blocks work (stand-ins)', () => {
  it('a silent Slack: the job ends done and its final report is journaled undelivered', async () => {
    slack = await startSlackStandIn();
    slack.silence();
    // No request timeout, so the silent call stays in flight all job long however slow this
    // machine is (Slack's policy would give it up after 10 s and let the next stage through).
    const { harness, job } = await slackJob(slack, { timeout: 0, retryConfig: { retries: 0 } });
    await harness.drain(job);
    expect(await harness.store.get(job.id)).toMatchObject({ stage: 'done', outcome: 'succeeded' });
    expect(await harness.store.journal()).toEqual([
      expect.objectContaining({ kind: 'undelivered_report', jobId: job.id, report: 'finished', requester: 'slack' }),
    ]);
    // One call in flight per job, latest wins: the stages wait behind the silent first call
    // and are dropped for the final report, never a call each piling up.
    const writes = slack.calls.filter((c) => c.method === 'chat.postMessage' || c.method === 'chat.update');
    expect(writes.map((c) => String(c.args.text).split('\n')[0])).toEqual([
      expect.stringContaining('Working on it (attempt 1)'),
      expect.stringContaining('Opened pull request'),
    ]);
  });

  it('Slack answering 429 to every chat.update: each edit is tried once and the final reply still arrives', async () => {
    slack = await startSlackStandIn();
    slack.rateLimit('chat.update', 5);
    const { harness, job, ts } = await slackJob(slack);
    await harness.drain(job);
    expect(await harness.store.get(job.id)).toMatchObject({ stage: 'done', outcome: 'succeeded' });
    // The client does not wait out Retry-After (which would pause every call behind it):
    // an edit refused is not tried again, so the edits are at most one per report told.
    const updates = slack.calls.filter((c) => c.method === 'chat.update');
    expect(updates.length).toBeGreaterThan(0);
    expect(updates.length).toBeLessThanOrEqual(7);
    const replies = slack.thread('C0REPO', ts).filter((m) => m.bot_id !== undefined);
    expect(replies.at(-1)?.text).toMatch(/pull request/i);
  });

  it('a silent GitHub API for issue comments and labels: the job ends done, the report is journaled', async () => {
    gh = await startGithubStandIn();
    await gh.createRepo('acme/widgets', projectFiles);
    const issue = gh.createIssue('acme/widgets', { title: 'Add two()', body: 'Add `two()`.', user: 'alice' });
    gh.silence(/\/issues\/(\d+\/(comments|labels)|comments\/)/);
    h = await createHarness({ reportDeadlineMs: 1_000 });
    await h.agent(implementsFeature);
    const env = { ...gitTestEnv(), PATH: process.env.PATH ?? '', HOME: h.dir.path };
    const forge = createGithubForge({
      token: gh.token,
      apiUrl: gh.url,
      gitUrl: gh.url,
      gitEnv: env,
      gitTimeoutMs: 30_000,
    });
    h.deps.forge = forge;
    h.deps.requester = createIssueRequester({ issues: forge.issues });
    h.deps.workspaces = createWorkspaceManager({
      cacheDir: join(h.dir.path, 'gh-cache'),
      reuse: true,
      gitEnv: env,
      remoteGitEnv: githubCredentialEnv(env, gh.token, gh.url),
    });
    const job = h.job({ repo: 'acme/widgets', title: 'Add two()', source: { kind: 'issue', number: issue.number } });
    await h.drain(job);
    expect(await h.store.get(job.id)).toMatchObject({ stage: 'done', outcome: 'succeeded' });
    expect(gh.pulls('acme/widgets')).toHaveLength(1);
    expect(await h.store.journal()).toEqual([
      expect.objectContaining({ kind: 'undelivered_report', jobId: job.id, report: 'finished', requester: 'issue' }),
    ]);
  });
});
