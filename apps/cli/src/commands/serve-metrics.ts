import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Counter, Registry } from 'prom-client';
import type { Job } from '@codefleet/core';
import type { Queue } from '@codefleet/queue';
import { retentionCounter, type Trimmed } from '@codefleet/worker';

/** The producers `serve` hosts, as metric label values. */
type Producer = 'webhook' | 'slack' | 'line' | 'http';

/** Prometheus metrics of a `codefleet serve` process, served beside its /healthz. */
export interface ProducerMetrics {
  readonly registry: Registry;
  /** `queue`, with every enqueue counted by the job's source kind and what the queue did. */
  counting(queue: Queue): Queue;
  /**
   * Counts POST requests answered on local `port` as deliveries to `producer`: all of them
   * on a port of its own, those under `prefix` on the port it shares with the others.
   */
  watch(producer: Producer, port: number, prefix?: string): void;
  /** Counts what a housekeeping pass deleted (`codefleet_retention_trimmed_total`). */
  trimmed(trimmed: Trimmed): void;
  /** Stops watching HTTP requests. */
  close(): void;
}

const sourceKinds = new Set(['issue', 'chat', 'cli', 'ci', 'record', 'api']);
const requestStart = 'http.server.request.start';
const responseFinish = 'http.server.response.finish';

/**
 * Metrics of the producers: deliveries received, accepted (answered below 400) and rejected
 * (a bad signature, a malformed body, an unauthorised caller), and jobs enqueued by source.
 * Deliveries are seen through Node's HTTP diagnostics channels, matched to a producer by
 * the local port it listens on and, on the shared port, its route prefix, so the receivers
 * need no hook of their own; Slack's Socket
 * Mode has no HTTP request and shows in the jobs only. Labels: the producer name, the
 * result and the job's source kind (an enum): never a repository, user or delivery id.
 * Loads prom-client, so only a `serve` with a health port pays for it.
 */
export async function createProducerMetrics(): Promise<ProducerMetrics> {
  const prom = await import('prom-client');
  const registry = new prom.Registry();
  prom.collectDefaultMetrics({ register: registry, prefix: 'codefleet_' });
  const { received, answered, enqueued } = producerCounters(prom, registry);
  const trimmed = retentionCounter(prom, registry);
  const watched: Watched[] = [];
  const onStart = (message: unknown) => {
    const producer = producerOf(watched, message);
    if (producer) received.inc({ producer });
  };
  const onFinish = (message: unknown) => {
    const producer = producerOf(watched, message);
    if (producer)
      answered.inc({
        producer,
        result: (message as { response: ServerResponse }).response.statusCode < 400 ? 'accepted' : 'rejected',
      });
  };
  subscribe(requestStart, onStart);
  subscribe(responseFinish, onFinish);
  const count = (job: Job, result: EnqueueResult) => {
    const kind = (job as { source?: { kind?: unknown } }).source?.kind;
    enqueued.inc({ source: typeof kind === 'string' && sourceKinds.has(kind) ? kind : 'invalid', result });
  };
  return {
    registry,
    counting: (queue) => countingQueue(queue, count),
    trimmed,
    watch: (producer, port, prefix) => {
      watched.push({ producer, port, prefix });
      received.inc({ producer }, 0);
      for (const result of ['accepted', 'rejected']) answered.inc({ producer, result }, 0);
    },
    close: () => {
      unsubscribe(requestStart, onStart);
      unsubscribe(responseFinish, onFinish);
    },
  };
}

/** What happened to a job a producer handed to the queue. */
type EnqueueResult = 'enqueued' | 'deduplicated' | 'refused';

/** A producer's port (and, on the shared port, its route prefix), as given to `watch`. */
interface Watched {
  producer: Producer;
  port: number;
  prefix: string | undefined;
}

/** The producers' own counters, registered on `registry`. */
function producerCounters(prom: { Counter: typeof Counter }, registry: Registry) {
  const registers = [registry];
  const received = new prom.Counter({
    name: 'codefleet_producer_deliveries_received_total',
    help: 'Delivery requests (POST) that reached a producer.',
    labelNames: ['producer'],
    registers,
  });
  const answered = new prom.Counter({
    name: 'codefleet_producer_deliveries_total',
    help: 'Delivery requests answered: accepted (status below 400) or rejected.',
    labelNames: ['producer', 'result'],
    registers,
  });
  const enqueued: Counter = new prom.Counter({
    name: 'codefleet_producer_jobs_enqueued_total',
    help: 'Jobs the producers handed to the queue, by source kind: enqueued, deduplicated (already pending) or refused.',
    labelNames: ['source', 'result'],
    registers,
  });
  return { received, answered, enqueued };
}

/** The producer a diagnostics-channel message's request was a delivery to, if it was one. */
function producerOf(watched: readonly Watched[], message: unknown): Producer | undefined {
  const { request } = message as { request: IncomingMessage };
  const port = request.socket.localPort;
  if (request.method !== 'POST' || port === undefined) return undefined;
  const path = request.url ?? '/';
  const under = (prefix: string) => path === prefix || path.startsWith(`${prefix}/`) || path.startsWith(`${prefix}?`);
  return watched.find((w) => w.port === port && (w.prefix === undefined || under(w.prefix)))?.producer;
}

/** `queue` with every enqueue told to `count`, the rest passed through. */
function countingQueue(queue: Queue, count: (job: Job, result: EnqueueResult) => void): Queue {
  return {
    backend: queue.backend,
    enqueue: async (job) => {
      try {
        const result = await queue.enqueue(job);
        count(job, result.deduplicated ? 'deduplicated' : 'enqueued');
        return result;
      } catch (error) {
        count(job, 'refused');
        throw error;
      }
    },
    claim: (options) => queue.claim(options),
    pending: (options) => queue.pending(options),
    cancelPending: (id) => queue.cancelPending(id),
    stats: () => queue.stats(),
    deadLetters: (options) => queue.deadLetters(options),
    redrive: (id) => queue.redrive(id),
    drop: (id) => queue.drop(id),
    ...(queue.checkStorage ? { checkStorage: () => queue.checkStorage!() } : {}),
    ...(queue.trim ? { trim: queue.trim.bind(queue) } : {}),
    close: () => queue.close(),
  };
}
