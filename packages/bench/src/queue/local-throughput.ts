/**
 * `npm run bench` (queue): enqueue → claim → ack throughput of the embedded SQLite queue
 * for 10 000 jobs, drained by 1 and by 4 worker processes. Prints jobs/s; asserts nothing.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LocalQueue, type LocalQueueSettings } from '@codefleet/queue';
import { createTempDir, sampleJob, startFixture, waitFor } from '@codefleet/testkit';

const jobs = Number(process.argv[2] ?? 10_000);
const drainer = fileURLToPath(new URL('./drain.js', import.meta.url));

async function run(processes: number): Promise<void> {
  const dir = await createTempDir('bench-queue');
  const settings: LocalQueueSettings = {
    backend: 'local',
    path: join(dir.path, 'queue.sqlite'),
    name: 'bench',
    leaseMs: 60_000,
    maxAttempts: 4,
    pollMs: 5,
  };
  const queue = new LocalQueue(settings);
  try {
    const t0 = performance.now();
    for (let i = 0; i < jobs; i += 1) await queue.enqueue(sampleJob());
    const enqueueMs = performance.now() - t0;

    const workers = Array.from({ length: processes }, (_, n) =>
      startFixture(drainer, [JSON.stringify({ settings, workerId: `bench-${n}`, idleMs: 300 })]),
    );
    await Promise.all(workers.map((w) => w.waitForLine('ready')));
    const t1 = performance.now();
    await waitFor(async () => (await queue.stats()).completed === jobs || undefined, {
      timeoutMs: 600_000,
      intervalMs: 10,
    });
    const drainMs = performance.now() - t1;
    await Promise.all(workers.map((w) => w.exited));
    const perWorker = workers.map((w) => w.lines.find((l) => l.startsWith('idle '))?.slice(5) ?? '?').join('/');

    const rate = (n: number, ms: number) => Math.round((n / ms) * 1000).toLocaleString('en-US');
    console.log(
      `local queue, ${jobs} jobs, ${processes} worker process${processes > 1 ? 'es' : ''}: ` +
        `enqueue ${rate(jobs, enqueueMs)} jobs/s · claim+ack ${rate(jobs, drainMs)} jobs/s · ` +
        `end to end ${rate(jobs, enqueueMs + drainMs)} jobs/s (jobs per worker ${perWorker})`,
    );
  } finally {
    await queue.close();
    await dir.dispose();
  }
}

await run(1);
await run(4);
