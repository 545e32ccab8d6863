import type { ChatMessage, ChatOutcome, ChatService } from '@codefleet/chat';
import { createJob, type Job, type JobRoute } from '@codefleet/core';
import type { LocalQueue } from '@codefleet/queue';

/**
 * A small chat service for these tests, doing what the real one (@codefleet/chat, built
 * elsewhere) promises the producer: `repo=` in the text, else the platform's hints, else
 * ask with `choices`; only a sender mapped to a permitted GitHub login may start work
 * (everyone else is refused politely); `/chat …` is answered at once; work is a real job in
 * a real LocalQueue, whose idempotency key (platform, channel, thread, message) makes a
 * second handling of one message converge on the first job.
 */
export function createTestChatService(options: {
  queue: LocalQueue;
  permitted: (login: string) => boolean;
  choices: string[];
  gate?: Promise<void>;
  /** Threads (root ts) whose job is still running, and that job's id: a message there is deferred when its producer keeps follow-ups. */
  running?: Map<string, string>;
}): ChatService & { handled: ChatMessage[]; jobs: Job[] } {
  const handled: ChatMessage[] = [];
  const jobs: Job[] = [];
  let n = 0;
  const route = (name: JobRoute['name']): JobRoute => ({
    name,
    source: 'fallback',
    confidence: 1,
    reason: 'test chat service',
  });
  return {
    handled,
    jobs,
    async handle(message: ChatMessage): Promise<ChatOutcome> {
      handled.push(message);
      // A slow chat service (a classifier on a busy local model) is simulated by a gate.
      await options.gate;
      if (message.text.startsWith('/chat '))
        return { kind: 'reply', text: `You said: ${message.text.slice(6)}`, route: route('CHAT') };
      const repo = /(?:^|\s)repo=([\w.-]+\/[\w.-]+)/.exec(message.text)?.[1] ?? message.repoHints[0];
      if (repo === undefined) return { kind: 'ask_repo', choices: options.choices, route: route('CODE') };
      if (message.access.login === undefined || !options.permitted(message.access.login)) {
        return {
          kind: 'refused',
          text: 'Sorry, I can only start work for people whose Slack account is mapped to a GitHub login with write access. Ask an operator to add you.',
          route: route('CODE'),
        };
      }
      const running = options.running?.get(message.thread);
      if (running !== undefined && message.deferFollowUp === true)
        return { kind: 'deferred', jobId: running, route: route('CODE'), repo };
      n += 1;
      const job = createJob(
        {
          repo,
          source: {
            kind: 'chat',
            platform: message.platform,
            channel: message.channel,
            thread_id: message.thread,
            message_id: message.messageId,
            ...(message.statusMessageId === undefined ? {} : { status_message_id: message.statusMessageId }),
          },
          title: message.text.slice(0, 200),
          requested_by: message.access.login,
          route: route('CODE'),
        },
        { id: `job-${n}-${message.messageId.replace('.', '-')}`, now: new Date() },
      );
      const result = await options.queue.enqueue(job);
      if (!result.deduplicated) jobs.push(job);
      return { kind: 'enqueued', jobId: result.id, route: route('CODE'), deduplicated: result.deduplicated, repo };
    },
  };
}
