import { setTimeout as sleep } from 'node:timers/promises';
import {
  ChangeMessageVisibilityCommand,
  DeleteMessageCommand,
  ReceiveMessageCommand,
  type Message,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { parseJobJson, type Job } from '@codefleet/core';
import type { DeadLetter } from '../port.js';

/** How long a listed message stays hidden, so one listing can page past the first ten. */
const peekSeconds = 1;

/**
 * The SQS dead-letter queue that the main queue's redrive policy feeds: messages received
 * `maxReceiveCount` times without being settled (workers crashed on them, or the
 * coordination store was unreachable while they were claimed). Those never reached the
 * worker's own dead-lettering, so they are listed and redriven from SQS itself.
 */
export class RedrivePolicyQueue {
  readonly #sqs: SQSClient;
  readonly #url: string;

  constructor(sqs: SQSClient, url: string) {
    this.#sqs = sqs;
    this.#url = url;
  }

  /** Up to `limit` messages, each once, by peeking (they reappear after a second). */
  async list(limit: number): Promise<{ message: Message; letter: DeadLetter }[]> {
    const seen = new Map<string, Message>();
    for (let round = 0; round < 50 && seen.size < limit; round += 1) {
      const messages = await this.#receive(peekSeconds);
      const fresh = messages.filter((m) => m.MessageId !== undefined && !seen.has(m.MessageId));
      if (fresh.length === 0) break;
      for (const m of fresh) seen.set(m.MessageId ?? '', m);
    }
    return [...seen.values()].slice(0, limit).map((message) => ({ message, letter: toDeadLetter(message) }));
  }

  /**
   * Takes the message of dead letter `id` out of sight for `seconds` (it comes back by
   * itself if the redrive fails half-way); undefined when it is not there.
   */
  async take(id: string, seconds: number): Promise<{ message: Message; job?: Job } | undefined> {
    // A listing may have hidden it for a moment: look again until that has passed.
    const until = Date.now() + (peekSeconds + 1) * 1_000;
    for (;;) {
      const messages = await this.#receive(seconds);
      const found = messages.find((m) => toDeadLetter(m).id === id);
      // Everything else goes back at once.
      await Promise.all(messages.filter((m) => m !== found).map((m) => this.release(m)));
      if (found) {
        const letter = toDeadLetter(found);
        return { message: found, ...(letter.job === undefined ? {} : { job: letter.job }) };
      }
      if (Date.now() >= until) return undefined;
      await sleep(250);
    }
  }

  async delete(message: Message): Promise<void> {
    await this.#sqs.send(new DeleteMessageCommand({ QueueUrl: this.#url, ReceiptHandle: message.ReceiptHandle }));
  }

  /** Makes a taken message visible again. */
  async release(message: Message): Promise<void> {
    await this.#sqs
      .send(
        new ChangeMessageVisibilityCommand({
          QueueUrl: this.#url,
          ReceiptHandle: message.ReceiptHandle,
          VisibilityTimeout: 0,
        }),
      )
      .catch(() => undefined);
  }

  async #receive(visibilitySeconds: number): Promise<Message[]> {
    const { Messages = [] } = await this.#sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: this.#url,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 0,
        VisibilityTimeout: visibilitySeconds,
        MessageSystemAttributeNames: ['ApproximateReceiveCount', 'SentTimestamp'],
      }),
    );
    return Messages;
  }
}

function toDeadLetter(message: Message): DeadLetter & { job?: Job } {
  const raw = message.Body ?? '';
  let job: Job | undefined;
  try {
    job = parseJobJson(raw);
  } catch {
    job = undefined;
  }
  const sent = Number(message.Attributes?.SentTimestamp ?? 0);
  return {
    id: job?.id ?? `msg-${message.MessageId ?? ''}`,
    reason:
      'moved to the SQS dead-letter queue by its redrive policy: received too often without being settled (workers crashed on it, or the coordination store was down)',
    attempts: 0,
    deadAt: Number.isFinite(sent) ? sent : 0,
    ...(job === undefined ? {} : { job }),
    raw: raw.slice(0, 4_096),
  };
}
