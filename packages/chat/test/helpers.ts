import { join } from 'node:path';
import { parseConfig, type Config } from '@codefleet/config';
import { createLogger, type Logger } from '@codefleet/log';
import { LocalQueue } from '@codefleet/queue';
import { SqliteRunStore } from '@codefleet/store';
import type { Job } from '@codefleet/core';
import type { Report, Requester } from '@codefleet/requester';
import { createTempDir, type TempDir } from '@codefleet/testkit';
import {
  createChatService,
  type ChatMessage,
  type ChatService,
  type ChatServiceDeps,
  type PermissionCheck,
} from '../src/index.js';

/** A config from a plain object (JSON is YAML), as `config.yaml` would give it. */
export function configOf(tree: Record<string, unknown>, baseDir = '/tmp'): Config {
  return parseConfig(JSON.stringify({ logging: { level: 'silent' }, ...tree }), {
    env: {},
    baseDir,
    hostname: 'test-host',
  }).config;
}

/** A logger whose lines are kept, parsed, for assertions on events. */
export function capturingLogger(): { log: Logger; events: () => Record<string, unknown>[] } {
  const lines: string[] = [];
  const log = createLogger({ level: 'debug', destination: { write: (line: string) => void lines.push(line) } });
  return { log, events: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

/** A real local queue and SQLite run store in `dir`. */
function openBackends(dir: string): { queue: LocalQueue; store: SqliteRunStore; close: () => Promise<void> } {
  const queue = new LocalQueue({
    backend: 'local',
    path: join(dir, 'queue.sqlite'),
    name: 'jobs',
    leaseMs: 60_000,
    maxAttempts: 1,
  });
  const store = new SqliteRunStore(join(dir, 'runs.sqlite'));
  return {
    queue,
    store,
    close: async () => {
      await queue.close();
      await store.close();
    },
  };
}

/** A Slack-like message; override what the test is about. */
export function messageOf(text: string, extra: Partial<ChatMessage> = {}): ChatMessage {
  return {
    platform: 'slack',
    channel: 'C1',
    thread: '1700000000.000100',
    messageId: '1700000000.000100',
    user: 'U1',
    text,
    access: { login: 'alice', allowedLocal: false },
    repoHints: [],
    ...extra,
  };
}

/** A requester that keeps what it is told. */
function recordingRequester(): Requester & { reports: Report[] } {
  const reports: Report[] = [];
  return { kind: 'recording', reports, handles: () => true, report: async (report) => void reports.push(report) };
}

/** Everything a chat service test needs, opened in a fresh temp dir. */
export interface Harness {
  dir: TempDir;
  queue: LocalQueue;
  store: SqliteRunStore;
  requester: ReturnType<typeof recordingRequester>;
  events: () => Record<string, unknown>[];
  service(tree?: Record<string, unknown>, extra?: Partial<ChatServiceDeps>): ChatService;
  /** Claims the next queued job (and acks it), for a look at what was enqueued. */
  take(): Promise<Job | undefined>;
  close(): Promise<void>;
}

/** Opens a {@link Harness}; `modelHost` is where router.classifier and router.chat point. */
export async function openHarness(modelHost: string, permission?: PermissionCheck): Promise<Harness> {
  const dir = await createTempDir('chat');
  const { queue, store, close } = openBackends(dir.path);
  const requester = recordingRequester();
  const { log, events } = capturingLogger();
  let n = 0;
  return {
    dir,
    queue,
    store,
    requester,
    events,
    service: (tree = {}, extra = {}) => {
      const { router, ...rest } = tree as { router?: Record<string, unknown> };
      const config = configOf(
        { ...rest, router: { classifier: { host: modelHost, enabled: false }, chat: { host: modelHost }, ...router } },
        dir.path,
      );
      return createChatService({
        queue,
        store,
        requester,
        config,
        log,
        now: () => new Date('2026-11-24T08:00:00Z'),
        id: () => `job-${(n += 1)}`,
        ...(permission === undefined ? {} : { permission }),
        ...extra,
      });
    },
    take: async () => {
      const lease = await queue.claim({ workerId: 'test' });
      if (lease === undefined) return undefined;
      await lease.ack();
      return lease.job;
    },
    close: async () => {
      await close();
      await dir.dispose();
    },
  };
}
