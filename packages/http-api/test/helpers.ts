import { join } from 'node:path';
import { parseConfig, type HttpApiConfig } from '@codefleet/config';
import { LocalQueue } from '@codefleet/queue';
import type { Report, Requester } from '@codefleet/requester';
import { SqliteRunStore } from '@codefleet/store';
import { createTempDir } from '@codefleet/testkit';

export const token = 'api-token-0123456789';
export const callbackSecret = 'callback-secret-abcdef';

/** `http_api:` as the config loader produces it. */
export function apiConfig(section: Record<string, unknown> = {}): HttpApiConfig {
  const env = { CODEFLEET_API_TOKEN: token, CODEFLEET_CALLBACK_SECRET: callbackSecret };
  const yaml = JSON.stringify({ http_api: { enabled: true, port: 0, callback_hosts: ['127.0.0.1'], ...section } });
  return parseConfig(yaml, { env, baseDir: '/srv', hostname: 'h' }).config.http_api;
}

/** A real local queue and run store in a temp dir. */
export async function openBackends(): Promise<{ queue: LocalQueue; store: SqliteRunStore; dispose(): Promise<void> }> {
  const dir = await createTempDir('http-api');
  const queue = new LocalQueue({
    backend: 'local',
    path: join(dir.path, 'queue.sqlite'),
    name: 'jobs',
    leaseMs: 60_000,
    maxAttempts: 3,
  });
  const store = new SqliteRunStore(join(dir.path, 'runs.sqlite'));
  return {
    queue,
    store,
    dispose: async () => {
      await queue.close();
      await store.close();
      await dir.dispose();
    },
  };
}

/** A requester that remembers what it was told. */
export function recordingRequester(): Requester & { reports: Report[] } {
  const reports: Report[] = [];
  return { kind: 'recording', reports, handles: () => true, report: async (r) => void reports.push(r) };
}
