import { join } from 'node:path';
import { createHttpApp, listen, mountNodeHandler } from '@codefleet/http-server';
import type { Job } from '@codefleet/core';
import type { SlackConfig } from '@codefleet/config';
import { createLogger } from '@codefleet/log';
import type { ChatMessage, ChatOutcome } from '@codefleet/chat';
import { LocalQueue } from '@codefleet/queue';
import { SqliteRunStore } from '@codefleet/store';
import { createTempDir, startSlackStandIn, type SlackStandIn, type TempDir } from '@codefleet/testkit';
import { createSlackClient, createSlackProducer, createSlackRequester, type SlackProducer } from '../../src/index.js';
import { createTestChatService } from './chat-service.js';

/** Channels and users of the tests: C0REPO has a default repository, C0OTHER none. */
export const ids = {
  repoChannel: 'C0REPO',
  otherChannel: 'C0OTHER',
  alice: 'U0ALICE',
  nobody: 'U0NOBODY',
  mallory: 'U0MALLORY',
  aliceDm: 'D0ALICE',
  local: 'U0LOCAL',
} as const;

export interface Harness {
  slack: SlackStandIn;
  queue: LocalQueue;
  /** Where the producer records events before their ack. */
  inbox: LocalQueue;
  store: SqliteRunStore;
  chat: ReturnType<typeof createTestChatService>;
  producer: SlackProducer;
  requester: ReturnType<typeof createSlackRequester>;
  /** The HTTP events URL (HTTP mode). */
  eventsUrl?: string;
  /** Threads whose job is still running (root ts → job id), for the test chat service. */
  running: Map<string, string>;
  /** What reached the producer's `defer` hook (when the harness was opened with `keepFollowUps`). */
  deferred: { message: ChatMessage; outcome: Extract<ChatOutcome, { kind: 'deferred' }> }[];
  /** Every log line the producer wrote, parsed. */
  logs: Record<string, unknown>[];
  /** The jobs queued so far, oldest first. */
  jobs(): Job[];
  close(): Promise<void>;
}

export function slackConfig(slack: SlackStandIn, mode: 'socket' | 'http'): SlackConfig {
  return {
    enabled: true,
    mode,
    bot_token_env: 'SLACK_BOT_TOKEN',
    app_token_env: 'SLACK_APP_TOKEN',
    signing_secret_env: 'SLACK_SIGNING_SECRET',
    api_url: slack.apiUrl,
    port: 0,
    host: '127.0.0.1',
    channels: { [ids.repoChannel]: { repo: 'acme/widgets' } },
    users: { [ids.alice]: 'alice-gh', [ids.mallory]: 'mallory-gh' },
    allowed_users: [ids.local],
    bot_token: slack.botToken,
    app_token: slack.appToken,
    signing_secret: slack.signingSecret,
  };
}

/** The real Bolt app (producer) and requester against a fresh Slack stand-in, a real queue and store. */
export async function openHarness(
  mode: 'socket' | 'http',
  options: {
    gate?: Promise<void>;
    keepFollowUps?: boolean | 'failing';
    /** HTTP mode: the events mounted on another server's /slack/events (as `codefleet serve` does), not on a port of their own. */
    mounted?: boolean;
  } = {},
): Promise<Harness> {
  const slack = await startSlackStandIn();
  const dir: TempDir = await createTempDir('slack');
  const queue = new LocalQueue({
    backend: 'local',
    path: join(dir.path, 'queue.sqlite'),
    name: 'slack',
    leaseMs: 60_000,
    maxAttempts: 3,
    pollMs: 20,
  });
  const inbox = new LocalQueue({
    backend: 'local',
    path: join(dir.path, 'queue.sqlite'),
    name: 'slack-slack-inbox',
    leaseMs: 60_000,
    maxAttempts: 1_000,
    pollMs: 20,
  });
  const store = new SqliteRunStore(join(dir.path, 'runs.sqlite'));
  const running = new Map<string, string>();
  const deferred: Harness['deferred'] = [];
  const chat = createTestChatService({
    queue,
    running,
    permitted: (login) => login === 'alice-gh',
    choices: ['acme/widgets', 'acme/gadgets'],
    ...(options.gate === undefined ? {} : { gate: options.gate }),
  });
  const config = slackConfig(slack, mode);
  const clientOptions = { retryConfig: { retries: 0 } };
  const logs: Record<string, unknown>[] = [];
  const log = createLogger({
    level: 'debug',
    destination: { write: (line: string) => logs.push(JSON.parse(line) as Record<string, unknown>) },
  });
  const defer = async (message: ChatMessage, outcome: Harness['deferred'][number]['outcome']) => {
    if (options.keepFollowUps === 'failing') throw new Error('the follow-ups queue is unreachable');
    deferred.push({ message, outcome });
  };
  const producer = createSlackProducer({
    config,
    chat,
    store,
    inbox,
    log,
    clientOptions,
    ...(options.keepFollowUps === undefined || options.keepFollowUps === false ? {} : { defer }),
  });
  const host = options.mounted ? createHttpApp() : undefined;
  const started = await producer.start(
    host === undefined ? {} : { mount: (handler) => mountNodeHandler(host, '/slack/events', handler) },
  );
  const listening = host === undefined ? undefined : await listen(host, { port: 0 });
  const eventsUrl = listening === undefined ? started.eventsUrl : `${listening.url}/slack/events`;
  const requester = createSlackRequester({
    client: createSlackClient(config, clientOptions),
    store,
    secrets: ['sk-test-0123456789abcdef'],
  });
  return {
    slack,
    queue,
    inbox,
    store,
    chat,
    producer,
    requester,
    ...(eventsUrl === undefined ? {} : { eventsUrl }),
    running,
    deferred,
    logs,
    jobs: () => chat.jobs,
    close: async () => {
      await listening?.close();
      await producer.stop();
      await queue.close();
      await inbox.close();
      await store.close();
      await slack.close();
      await dir.dispose();
    },
  };
}
