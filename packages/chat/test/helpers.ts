import { join } from 'node:path';
import { parseConfig, type Config } from '@codefleet/config';
import { createLogger, type Logger } from '@codefleet/log';
import { LocalQueue } from '@codefleet/queue';
import { SqliteRunStore } from '@codefleet/store';
import type { ChatMessage } from '../src/index.js';

/** A config from a plain object (JSON is YAML), as `config.yaml` would give it. */
export function configOf(tree: Record<string, unknown>, baseDir = '/tmp'): Config {
  return parseConfig(JSON.stringify({ logging: { level: 'silent' }, ...tree }), { env: {}, baseDir, hostname: 'test-host' }).config;
}

/** A logger whose lines are kept, parsed, for assertions on events. */
export function capturingLogger(): { log: Logger; events: () => Record<string, unknown>[] } {
  const lines: string[] = [];
  const log = createLogger({ level: 'debug', destination: { write: (line: string) => void lines.push(line) } });
  return { log, events: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

/** A real local queue and SQLite run store in `dir`. */
export function openBackends(dir: string): { queue: LocalQueue; store: SqliteRunStore; close: () => Promise<void> } {
  const queue = new LocalQueue({ backend: 'local', path: join(dir, 'queue.sqlite'), name: 'jobs', leaseMs: 60_000, maxAttempts: 1 });
  const store = new SqliteRunStore(join(dir, 'runs.sqlite'));
  return { queue, store, close: async () => { await queue.close(); await store.close(); } };
}

/** A Slack-like message; override what the test is about. */
export function messageOf(text: string, extra: Partial<ChatMessage> = {}): ChatMessage {
  return {
    platform: 'slack', channel: 'C1', thread: '1700000000.000100', messageId: '1700000000.000100', user: 'U1', text,
    access: { login: 'alice', allowedLocal: false }, repoHints: [], ...extra,
  };
}
