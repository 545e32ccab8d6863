import { join } from 'node:path';
import type { ChatMessage, ChatOutcome, ChatService } from '@codefleet/chat';
import { parseConfig, type LineConfig } from '@codefleet/config';
import { createJob, type JobRoute } from '@codefleet/core';
import { LocalQueue } from '@codefleet/queue';
import { SqliteRunStore } from '@codefleet/store';
import { createTempDir, type LineStandIn } from '@codefleet/testkit';

/** `line:` as the config loader produces it, secrets from the stand-in. */
export function lineConfig(line: LineStandIn, section: Record<string, unknown> = {}): LineConfig {
  const env = { LINE_CHANNEL_SECRET: line.channelSecret, LINE_CHANNEL_ACCESS_TOKEN: line.accessToken };
  const yaml = JSON.stringify({ line: { enabled: true, api_url: line.url, port: 0, ...section } });
  return parseConfig(yaml, { env, baseDir: '/srv', hostname: 'h' }).config.line;
}

/**
 * A small chat service for the tests (the real one is built elsewhere): it records every
 * message with the policy it came with, answers a forced CHAT route at once, and queues a job
 * for an explicit `/code` the policy allows, on a real local queue.
 */
export function recordingChat(queue: LocalQueue): ChatService & { seen: ChatMessage[] } {
  const seen: ChatMessage[] = [];
  return {
    seen,
    async handle(message: ChatMessage): Promise<ChatOutcome> {
      seen.push(message);
      const explicit = /^\/code\s/.test(message.text);
      if (message.policy?.forceRoute === 'CHAT' && !(explicit && message.policy.allowExplicitCode === true)) {
        const route: JobRoute = { name: 'CHAT', source: 'forced', confidence: 1, reason: 'the platform forces CHAT' };
        return { kind: 'reply', text: `(CHAT) you said: ${message.text}`, route };
      }
      const route: JobRoute = { name: 'CODE', source: 'command', confidence: 1, reason: '/code' };
      const job = createJob(
        {
          repo: message.repoHints[0] ?? 'acme/widgets',
          title: message.text.replace(/^\/code\s+/, ''),
          source: {
            kind: 'chat',
            platform: message.platform,
            channel: message.channel,
            thread_id: message.thread,
            message_id: message.messageId,
          },
          requested_by: message.access.login ?? message.user,
          route,
        },
        { id: `line-${message.messageId}`, now: new Date() },
      );
      const result = await queue.enqueue(job);
      return { kind: 'enqueued', jobId: result.id, route, deduplicated: result.deduplicated, repo: job.repo };
    },
  };
}

/** A real local queue, the webhook's inbox beside it, and a run store in a temp dir. */
export async function openBackends(): Promise<{
  queue: LocalQueue;
  inbox: LocalQueue;
  store: SqliteRunStore;
  dispose(): Promise<void>;
}> {
  const dir = await createTempDir('line');
  const queue = new LocalQueue({
    backend: 'local',
    path: join(dir.path, 'queue.sqlite'),
    name: 'jobs',
    leaseMs: 60_000,
    maxAttempts: 3,
  });
  const inbox = new LocalQueue({
    backend: 'local',
    path: join(dir.path, 'queue.sqlite'),
    name: 'jobs-line-inbox',
    leaseMs: 60_000,
    maxAttempts: 1_000,
    pollMs: 20,
  });
  const store = new SqliteRunStore(join(dir.path, 'runs.sqlite'));
  return {
    queue,
    inbox,
    store,
    dispose: async () => {
      await queue.close();
      await inbox.close();
      await store.close();
      await dir.dispose();
    },
  };
}
