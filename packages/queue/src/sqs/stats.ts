import { GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { QueueStats } from '../port.js';
import type { RedisAccessWatch } from '../redis-access.js';
import type { SqsQueueSettings } from '../settings.js';
import type { Coordination } from './coordination.js';

/** What the stats use of an `SqsQueue`. */
export interface StatsSide {
  settings: Pick<SqsQueueSettings, 'queueUrl' | 'priorityQueueUrl' | 'deadLetterQueueUrl'>;
  sqs: SQSClient;
  coord: Coordination;
  access: RedisAccessWatch;
  /** The error to throw for a failed SQS call (see `SqsQueue`). */
  unavailable: (error: unknown) => unknown;
}

/** SQS's approximate counts of the queues, with what only the coordination store knows. */
export async function sqsStats(side: StatsSide): Promise<QueueStats> {
  const urls = [
    side.settings.queueUrl,
    ...(side.settings.priorityQueueUrl === undefined ? [] : [side.settings.priorityQueueUrl]),
  ];
  const counts = await Promise.all(
    urls.map(async (url) => {
      const { Attributes: attributes = {} } = await side.sqs.send(
        new GetQueueAttributesCommand({
          QueueUrl: url,
          AttributeNames: [
            'ApproximateNumberOfMessages',
            'ApproximateNumberOfMessagesNotVisible',
            'ApproximateNumberOfMessagesDelayed',
          ],
        }),
      );
      return attributes;
    }),
  ).catch((error: unknown) => {
    throw side.unavailable(error);
  });
  const sum = (
    name:
      'ApproximateNumberOfMessages' | 'ApproximateNumberOfMessagesNotVisible' | 'ApproximateNumberOfMessagesDelayed',
  ) => counts.reduce((total, c) => total + Number(c[name] ?? 0), 0);
  const ready = sum('ApproximateNumberOfMessages');
  const delayed = sum('ApproximateNumberOfMessagesDelayed');
  const [dead, completed, moved, oldest] = await side.access.guard(
    Promise.all([side.coord.deadCount(), side.coord.completed(), movedByPolicy(side), side.coord.oldestQueuedAt()]),
  );
  // oldestQueuedAt comes from the coordination store (SQS's age of the oldest message is a
  // CloudWatch metric): jobs enqueued or redriven through this adapter and waiting, a
  // retry's included. Not seen: a job whose worker died mid-lease, while it waits for its
  // redelivery (the store still holds it running), and a foreign message (injectRaw).
  return {
    ready,
    delayed,
    inFlight: sum('ApproximateNumberOfMessagesNotVisible'),
    deadLetter: dead + moved,
    completed,
    depth: ready + delayed,
    ...(oldest === undefined ? {} : { oldestQueuedAt: oldest }),
  };
}

async function movedByPolicy(side: StatsSide): Promise<number> {
  if (side.settings.deadLetterQueueUrl === undefined) return 0;
  const { Attributes: a = {} } = await side.sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: side.settings.deadLetterQueueUrl,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  return Number(a.ApproximateNumberOfMessages ?? 0) + Number(a.ApproximateNumberOfMessagesNotVisible ?? 0);
}
