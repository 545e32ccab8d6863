import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { parse as parseYaml } from 'yaml';
import { parseConfig } from '@codefleet/config';
import { LocalQueue } from '@codefleet/queue';
import { createTempDir, type TempDir } from '@codefleet/testkit';
import { WorkerMonitor } from '@codefleet/worker';
import { createProducerMetrics, type ProducerMetrics } from '../src/commands/serve-metrics.js';

// The Grafana dashboard and the Prometheus in docker-compose.yml, checked against what the
// processes really export and where the compose services really serve it.

const root = fileURLToPath(new URL('../../../', import.meta.url));
const read = (path: string) => readFileSync(join(root, path), 'utf8');

interface Panel {
  id: number;
  type: string;
  title: string;
  datasource?: { type: string; uid: string };
  gridPos: { h: number; w: number; x: number; y: number };
  targets?: { refId: string; expr: string; datasource?: { type: string } }[];
}

describe('observability material (infra/grafana, infra/prometheus)', () => {
  let dir: TempDir;
  let queue: LocalQueue;
  let producer: ProducerMetrics;
  /** Every series name a worker or `serve` exports (histograms as _bucket, _sum, _count), and the families' types. */
  const series = new Set<string>();
  const families = new Map<string, string>();
  beforeAll(async () => {
    dir = await createTempDir('observability');
    queue = new LocalQueue({
      backend: 'local',
      path: join(dir.path, 'q.sqlite'),
      name: 'o',
      leaseMs: 5_000,
      maxAttempts: 3,
      pollMs: 20,
    });
    const worker = await WorkerMonitor.create({ queue, staleAfterMs: 30_000, liveWorkers: async () => 1 }, 1);
    producer = await createProducerMetrics();
    for (const registry of [worker.registry, producer.registry]) {
      for (const metric of await registry.getMetricsAsJSON()) {
        families.set(metric.name, String(metric.type));
        series.add(metric.name);
        const type = String(metric.type);
        if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) series.add(metric.name + suffix);
        if (type === 'summary') for (const suffix of ['_sum', '_count']) series.add(metric.name + suffix);
      }
    }
  });
  afterAll(async () => {
    producer.close();
    await queue.close();
    await dir.dispose();
  });

  it('the Grafana dashboard is well formed, every expr names only metrics we export, and every metric of ours has a panel', () => {
    const dashboard = JSON.parse(read('infra/grafana/codefleet-dashboard.json')) as {
      uid: string;
      title: string;
      schemaVersion: number;
      panels: Panel[];
      templating: { list: { name: string; type: string; query: string }[] };
    };
    expect(dashboard.uid).toMatch(/^[a-z0-9-]{1,40}$/);
    expect(dashboard.schemaVersion).toBeGreaterThanOrEqual(36);
    expect(dashboard.templating.list).toContainEqual(
      expect.objectContaining({ name: 'datasource', type: 'datasource', query: 'prometheus' }),
    );
    const ids = dashboard.panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    const used = new Set<string>();
    for (const panel of dashboard.panels) {
      expect(panel.gridPos.x + panel.gridPos.w).toBeLessThanOrEqual(24);
      if (panel.type === 'row') continue;
      expect(panel.datasource).toEqual({ type: 'prometheus', uid: '${datasource}' });
      expect(panel.targets?.length).toBeGreaterThan(0);
      for (const target of panel.targets ?? []) {
        const names = [...target.expr.matchAll(/\bcodefleet_[a-z0-9_]+/g)].map((m) => m[0]);
        expect(names.length).toBeGreaterThan(0);
        for (const name of names) {
          expect(series.has(name) ? name : `${panel.title}: ${name} is not exported`).toBe(name);
          used.add(name.replace(/_(bucket|sum|count)$/, ''));
        }
      }
    }
    // Ours, not the process metrics: each is on the dashboard.
    const ours = [...families.keys()].filter((n) => !/^codefleet_(process|nodejs)_/.test(n));
    expect(ours.length).toBeGreaterThan(15);
    for (const name of ours) expect(used.has(name) ? name : `no panel shows ${name}`).toBe(name);
  });

  it('compose runs Prometheus on loopback, and its scrape targets are the compose services on the ports they serve /metrics on', () => {
    type Service = {
      image?: string;
      build?: { dockerfile: string };
      command?: string[];
      environment?: Record<string, string>;
      ports?: string[];
      volumes?: string[];
    };
    const compose = parseYaml(read('docker-compose.yml')) as { services: Record<string, Service> };
    const prometheus = compose.services.prometheus!;
    expect(prometheus.image).toMatch(/^prom\/prometheus(:|$)/);
    expect(prometheus.volumes).toContain('./infra/prometheus/prometheus.yml:/etc/prometheus/prometheus.yml:ro');
    for (const port of prometheus.ports ?? []) expect(port).toMatch(/^127\.0\.0\.1:/);

    // Where each codefleet service serves /metrics: a worker on CODEFLEET_METRICS_PORT/HOST
    // (the image's ENV unless compose overrides it), `serve` on --health-port/--health-host.
    const imageEnv = Object.fromEntries(
      [
        ...read('infra/container/Dockerfile')
          .replace(/\\\n/g, ' ')
          .matchAll(/\b(CODEFLEET_METRICS_(?:PORT|HOST))=(\S+)/g),
      ].map((m) => [m[1]!, m[2]!]),
    );
    const serveDefaults = parseConfig('', { env: {}, baseDir: root, hostname: 'h' }).config.serve;
    const served = new Map<string, { port: string; host: string }>();
    for (const [name, service] of Object.entries(compose.services)) {
      if (service.build?.dockerfile !== 'infra/container/Dockerfile') continue;
      const flag = (f: string) =>
        service.command?.includes(f) ? service.command[service.command.indexOf(f) + 1] : undefined;
      const env = { ...imageEnv, ...service.environment };
      served.set(
        name,
        // serve answers /metrics on its one port, or on --health-port when one is given.
        service.command?.[0] === 'serve'
          ? {
              port: flag('--health-port') ?? env.CODEFLEET_SERVE_PORT ?? String(serveDefaults.port),
              host: flag('--health-host') ?? env.CODEFLEET_SERVE_HOST ?? serveDefaults.host,
            }
          : { port: env.CODEFLEET_METRICS_PORT!, host: env.CODEFLEET_METRICS_HOST ?? '127.0.0.1' },
      );
    }
    expect([...served.keys()].sort()).toEqual(['producer', 'worker']);

    type ScrapeConfig = {
      job_name: string;
      static_configs?: { targets: string[] }[];
      dns_sd_configs?: { names: string[]; type: string; port: number }[];
    };
    const config = parseYaml(read('infra/prometheus/prometheus.yml')) as { scrape_configs: ScrapeConfig[] };
    const scraped = new Set<string>();
    for (const job of config.scrape_configs) {
      const targets = [
        ...(job.static_configs ?? []).flatMap((c) => c.targets),
        ...(job.dns_sd_configs ?? []).flatMap((c) => c.names.map((n) => `${n}:${c.port}`)),
      ];
      expect(targets.length).toBeGreaterThan(0);
      for (const target of targets) {
        const [host] = target.split(':');
        const service = served.get(host!);
        expect(service ? host : `${job.job_name}: ${host} is no codefleet service`).toBe(host);
        expect(`${host}:${service!.port}`).toBe(target);
        // Another container scrapes it: loopback inside the service's container would not answer.
        expect(service!.host).toBe('0.0.0.0');
        scraped.add(host!);
      }
    }
    expect([...scraped].sort()).toEqual(['producer', 'worker']);
  });
});
