import { createHmac } from 'node:crypto';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { createLogger, SecretRegistry, type Logger } from '@codefleet/log';
import { LocalQueue } from '@codefleet/queue';
import { SqliteRunStore } from '@codefleet/store';
import { createTempDir, gitTestEnv, startGithubStandIn, type GithubStandIn, type TempDir } from '@codefleet/testkit';
import {
  type CiFeedbackSettings,
  createDeliveryProcessor,
  createGithubForge,
  createIssueRequester,
  type DeliveryProcessor,
  type GithubForge,
  startWebhookServer,
  type TriggerDeps,
  type WebhookServer,
} from '../../src/index.js';

const labels = {
  queued: 'codefleet:queued',
  running: 'codefleet:running',
  prOpened: 'codefleet:pr-opened',
  failed: 'codefleet:failed',
};

// Real GitHub payloads (@octokit/webhooks-examples), pointed at the stand-in's repository
// and signed by the test; the real Octokit forge asks the GitHub STAND-IN for permissions
// and the issue; deliveries and jobs land in real SQLite queues (one file, two names).
const require = createRequire(import.meta.url);
const examples = require('@octokit/webhooks-examples') as { name: string; examples: Record<string, unknown>[] }[];
const example = (name: string, match: (x: Record<string, unknown>) => boolean) =>
  examples.find((e) => e.name === name)!.examples.find(match)!;
const labeledExample = example('issues', (x) => x.action === 'labeled');
const commentExample = example(
  'issue_comment',
  (x) => x.action === 'created' && !(x.issue as { pull_request?: unknown }).pull_request,
);
const reviewExample = example('pull_request_review', (x) => x.action === 'submitted');
export const secret = 'webhook-secret-for-tests';

/* eslint-disable @typescript-eslint/no-explicit-any -- GitHub's payloads, edited by key */
const repoFields = (payload: Record<string, any>, repo: string) => ({
  ...payload.repository,
  full_name: repo,
  name: repo.split('/')[1],
  owner: { ...payload.repository.owner, login: repo.split('/')[0] },
});

export function labeled(repo: string, issue: number, sender: string, label = 'codefleet'): string {
  const payload = structuredClone(labeledExample) as Record<string, any>;
  payload.label = { ...payload.label, name: label };
  payload.issue = { ...payload.issue, number: issue, title: 'STALE TITLE FROM THE PAYLOAD', body: 'stale body' };
  payload.repository = repoFields(payload, repo);
  payload.sender = { ...payload.sender, login: sender };
  return JSON.stringify(payload);
}

export function commented(repo: string, issue: number, sender: string, text: string, id = 1): string {
  const payload = structuredClone(commentExample) as Record<string, any>;
  payload.issue = { ...payload.issue, number: issue };
  payload.comment = { ...payload.comment, id, body: text, user: { ...payload.comment.user, login: sender } };
  payload.repository = repoFields(payload, repo);
  payload.sender = { ...payload.sender, login: sender };
  return JSON.stringify(payload);
}

export function reviewed(
  repo: string,
  pull: number,
  head: string,
  sender: string,
  text: string,
  options: { state?: string; id?: number } = {},
): string {
  const payload = structuredClone(reviewExample) as Record<string, any>;
  payload.review = {
    ...payload.review,
    id: options.id ?? payload.review.id,
    body: text,
    state: options.state ?? 'changes_requested',
    user: { ...payload.review.user, login: sender },
  };
  payload.pull_request = {
    ...payload.pull_request,
    number: pull,
    head: { ...payload.pull_request.head, ref: head, repo: { ...payload.pull_request.head.repo, full_name: repo } },
  };
  payload.repository = repoFields(payload, repo);
  payload.sender = { ...payload.sender, login: sender };
  return JSON.stringify(payload);
}
const checkRunExample = example(
  'check_run',
  (x) => x.action === 'completed' && (x.check_run as { conclusion?: string }).conclusion === 'failure',
);
const checkSuiteExample = example('check_suite', (x) => x.action === 'completed');
const statusExample = example('status', () => true);

/** A `check_run.completed` delivery: `run` as the stand-in keeps it, on `branch`, naming `pulls`. */
export function checkRunCompleted(
  repo: string,
  run: { id: number; name: string; headSha: string; conclusion: string | null; suiteId: number },
  branch: string,
  pulls: number[],
): string {
  const payload = structuredClone(checkRunExample) as Record<string, any>;
  const pullRefs = pulls.map((number) => ({
    ...payload.check_run.pull_requests[0],
    number,
    head: { ...payload.check_run.pull_requests[0].head, ref: branch, sha: run.headSha },
  }));
  payload.check_run = {
    ...payload.check_run,
    id: run.id,
    name: run.name,
    head_sha: run.headSha,
    conclusion: run.conclusion,
    pull_requests: pullRefs,
    check_suite: {
      ...payload.check_run.check_suite,
      id: run.suiteId,
      head_branch: branch,
      head_sha: run.headSha,
      pull_requests: pullRefs,
    },
  };
  payload.repository = repoFields(payload, repo);
  payload.sender = { ...payload.sender, login: 'github-actions[bot]' };
  return JSON.stringify(payload);
}

/** A `check_suite.completed` delivery for `sha` on `branch`. */
export function checkSuiteCompleted(
  repo: string,
  sha: string,
  branch: string,
  conclusion: string,
  pulls: number[],
): string {
  const payload = structuredClone(checkSuiteExample) as Record<string, any>;
  const pullRefs = pulls.map((number) => ({
    ...payload.check_suite.pull_requests[0],
    number,
    head: { ...payload.check_suite.pull_requests[0].head, ref: branch, sha },
  }));
  payload.check_suite = {
    ...payload.check_suite,
    head_sha: sha,
    head_branch: branch,
    after: sha,
    conclusion,
    status: 'completed',
    pull_requests: pullRefs,
  };
  payload.repository = repoFields(payload, repo);
  return JSON.stringify(payload);
}

/** A `status` delivery: `context` reports `state` on `sha`, which `branches` contain. */
export function statusEvent(repo: string, sha: string, branches: string[], state: string, context: string): string {
  const payload = structuredClone(statusExample) as Record<string, any>;
  Object.assign(payload, {
    sha,
    state,
    context,
    description: `${context} says ${state}`,
    branches: branches.map((name) => ({ ...payload.branches[0], name })),
  });
  payload.repository = repoFields(payload, repo);
  return JSON.stringify(payload);
}
/* eslint-enable @typescript-eslint/no-explicit-any */

export const sign = (body: string, key = secret) => `sha256=${createHmac('sha256', key).update(body).digest('hex')}`;

/** The producer wired as `codefleet producer webhook` wires it, on the stand-in. */
export interface Harness {
  gh: GithubStandIn;
  dir: TempDir;
  forge: GithubForge;
  jobs: LocalQueue;
  deliveries: LocalQueue;
  store: SqliteRunStore;
  deps: TriggerDeps;
  server: WebhookServer;
  processor: DeliveryProcessor;
  /** Every log line, parsed. */
  logs: Record<string, unknown>[];
  deliver(body: string, headers?: Record<string, string>): Promise<Response>;
  close(): Promise<void>;
}

export async function openHarness(
  options: { repos?: string[]; baseDelayMs?: number; ciFeedback?: CiFeedbackSettings } = {},
): Promise<Harness> {
  const gh = await startGithubStandIn();
  await gh.createRepo('acme/widgets');
  const dir = await createTempDir('producer');
  const path = join(dir.path, 'q.sqlite');
  const jobs = new LocalQueue({ backend: 'local', path, name: 'jobs', leaseMs: 60_000, maxAttempts: 4 });
  const deliveries = new LocalQueue({
    backend: 'local',
    path,
    name: 'jobs-deliveries',
    leaseMs: 60_000,
    maxAttempts: 1_000,
    pollMs: 10,
  });
  const forge = createGithubForge({
    token: gh.token,
    apiUrl: gh.url,
    gitUrl: gh.url,
    gitEnv: { ...gitTestEnv(), PATH: process.env.PATH ?? '' },
  });
  const store = new SqliteRunStore(join(dir.path, 'runs.sqlite'));
  const logs: Record<string, unknown>[] = [];
  const log: Logger = createLogger({
    secrets: new SecretRegistry(),
    destination: {
      write: (line: string) => {
        logs.push(JSON.parse(line) as Record<string, unknown>);
      },
    },
  });
  const deps: TriggerDeps = {
    issues: forge.issues,
    queue: jobs,
    log,
    requester: createIssueRequester({ issues: forge.issues, labels }),
    cancels: store,
    runs: store,
    checks: forge.checks,
    ciFeedback: options.ciFeedback ?? { enabled: true, maxRounds: 2, logBytes: 4096 },
  };
  const server = await startWebhookServer(deps, {
    secret,
    triggerLabel: 'codefleet',
    deliveries,
    port: 0,
    ...(options.repos ? { repos: options.repos } : {}),
  });
  const processor = createDeliveryProcessor(deps, {
    deliveries,
    ...(options.baseDelayMs === undefined ? {} : { baseDelayMs: options.baseDelayMs }),
  });
  let n = 0;
  return {
    gh,
    dir,
    forge,
    jobs,
    deliveries,
    store,
    deps,
    server,
    processor,
    logs,
    deliver: (body, headers = {}) =>
      fetch(`http://127.0.0.1:${server.port}/webhook`, {
        method: 'POST',
        body,
        headers: {
          'content-type': 'application/json',
          'x-github-event': 'issues',
          'x-github-delivery': `d-${(n += 1)}`,
          'x-hub-signature-256': sign(body),
          ...headers,
        },
      }),
    async close() {
      await server.close();
      await store.close();
      await deliveries.close();
      await jobs.close();
      await dir.dispose();
      await gh.close();
    },
  };
}
