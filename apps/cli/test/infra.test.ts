import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { parseConfig } from '@codefleet/config';
import { createTempDir, freePort, waitFor, type TempDir } from '@codefleet/testkit';

// The deployment material in infra/ and docker-compose.yml, checked the way a host uses
// it: each launcher's own command line and environment (install paths mapped onto this
// checkout, the data dir onto a temp dir) start a real worker on the sample config.yaml,
// which must answer /healthz and /metrics and drain to exit 0 on SIGTERM; the settings
// that must agree with codefleet's defaults (stop timeouts against the shutdown grace, SQS
// attributes, variable and metric names) are compared with the live values. Not covered
// here: building the container image (no Docker on these machines).

const root = fileURLToPath(new URL('../../../', import.meta.url));
const read = (path: string) => readFileSync(join(root, path), 'utf8');
const defaults = parseConfig('', { env: {}, baseDir: root, hostname: hostname() }).config;
const grace = defaults.worker.shutdown_grace_seconds;
const sampleConfig = read('config.yaml');

/** Every `${NAME` the sample config reads; a launcher setting another name sets nothing. */
const configVariables = new Set([...sampleConfig.matchAll(/\$\{([A-Z0-9_]+)/g)].map((m) => m[1]));
configVariables.add('CODEFLEET_CONFIG'); // read by the loader, not by the file
configVariables.add('OLLAMA_HOST'); // the built-in agent's server, read by the loader as the Ollama CLI reads it

interface Launch {
  argv: string[];
  env: Record<string, string>;
  cwd: string;
}

/**
 * Starts a launcher's command as it would, waits for health, scrapes metrics, runs
 * `whileUp` (a probe), then sends SIGTERM and resolves the exit code of the drain.
 */
async function exercise(
  launch: Launch,
  port: number,
  whileUp?: () => Promise<void>,
): Promise<{ metrics: string; exitCode: number | null }> {
  const [program, ...args] = launch.argv;
  const child = spawn(program!, args, { cwd: launch.cwd, env: launch.env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString('utf8');
  });
  child.stderr.on('data', (chunk: Buffer) => {
    output += chunk.toString('utf8');
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const failedToStart = new Promise<never>((_, reject) => {
    child.once('error', reject);
    void exited.then((code) =>
      reject(new Error(`${launch.argv.join(' ')} exited with ${code} before it was healthy: ${output.slice(-800)}`)),
    );
  });
  // Probed only once it says it listens there ("...:<port>/healthz" from a worker, "serving on
  // ...:<port> (/healthz" from serve): until then a port from freePort() may be another suite's
  // on a busy machine, and a probe of it lands on (or is answered by) that suite's server.
  const listening = new RegExp(`:${port}( \\()?/healthz`);
  try {
    await Promise.race([
      failedToStart,
      waitFor(() => listening.test(output), { what: `${launch.argv.join(' ')} to listen on ${port}` }),
    ]);
    await Promise.race([
      failedToStart,
      waitFor(async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).ok, {
        what: `/healthz of ${launch.argv.join(' ')} (output: ${output.slice(-800)})`,
      }),
    ]);
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    await whileUp?.();
    child.kill('SIGTERM');
    return { metrics, exitCode: await exited };
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}

/** Key=Value lines of a systemd unit; repeated keys (Environment=) keep every value. */
function unitEntries(text: string): Map<string, string[]> {
  const entries = new Map<string, string[]>();
  for (const line of text.split('\n')) {
    const match = /^([A-Za-z]+)=(.*)$/.exec(line.trim());
    if (match) entries.set(match[1]!, [...(entries.get(match[1]!) ?? []), match[2]!]);
  }
  return entries;
}

/** The strings of a plist `<array>` or the key/string pairs of a `<dict>` after `key`. */
function plistValue(text: string, key: string): string[] | Record<string, string> | number {
  const body = text.replace(/<!--[\s\S]*?-->/g, '');
  const after = body.slice(body.indexOf(`<key>${key}</key>`) + key.length + 11).trimStart();
  if (after.startsWith('<integer>')) return Number(/<integer>(\d+)<\/integer>/.exec(after)![1]);
  if (after.startsWith('<array>'))
    return [...after.slice(0, after.indexOf('</array>')).matchAll(/<string>(.*?)<\/string>/g)].map((m) => m[1]!);
  const dict = after.slice(0, after.indexOf('</dict>'));
  return Object.fromEntries(
    [...dict.matchAll(/<key>(.*?)<\/key>\s*<string>(.*?)<\/string>/g)].map((m) => [m[1]!, m[2]!]),
  );
}

/** Dockerfile instructions, continuation lines joined; ENV as name → value. */
function dockerfile(text: string): { instructions: Map<string, string>; env: Record<string, string> } {
  const lines = text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .filter((line) => line.trim() !== '' && !line.trimStart().startsWith('#'));
  const instructions = new Map<string, string>();
  const env: Record<string, string> = {};
  for (const line of lines) {
    const [name, ...rest] = line.trim().split(/\s+/);
    const value = rest.join(' ');
    instructions.set(name!, value);
    if (name === 'ENV') for (const [, key, val] of value.matchAll(/([A-Z0-9_]+)=(\S+)/g)) env[key!] = val!;
  }
  return { instructions, env };
}

describe('deployment material (infra/, docker-compose.yml)', () => {
  let dir: TempDir;
  let port: number;
  beforeEach(async () => {
    dir = await createTempDir('infra');
    port = await freePort();
  });
  afterEach(async () => {
    await dir.dispose();
  });
  const baseEnv = () => ({ PATH: process.env.PATH ?? '', HOME: dir.path });

  it('systemd: the unit starts a healthy worker that drains on SIGTERM, and stops it only after the grace', async () => {
    const unit = unitEntries(read('infra/systemd/codefleet-worker@.service'));
    expect(unit.get('KillMode')).toEqual(['mixed']); // SIGTERM to the worker only, not its agents
    expect(unit.get('KillSignal')).toEqual(['SIGTERM']);
    expect(Number(unit.get('TimeoutStopSec')![0])).toBeGreaterThan(grace + 10);
    const specifiers = (value: string) =>
      value
        .replaceAll('%i', String(port))
        .replaceAll('%H', hostname())
        .replaceAll('/etc/codefleet/config.yaml', join(root, 'config.yaml'))
        .replaceAll('/var/lib/codefleet', join(dir.path, 'data'))
        .replaceAll('/opt/codefleet', root.replace(/\/$/, ''));
    // What /etc/codefleet/env holds: the token of the forge the unit names.
    const env: Record<string, string> = { ...baseEnv(), GITHUB_TOKEN: 'stand-in-github-token' };
    for (const assignment of unit.get('Environment') ?? []) {
      const [name, ...value] = specifiers(assignment).split('=');
      expect(configVariables).toContain(name);
      env[name!] = value.join('=');
    }
    expect(env.CODEFLEET_METRICS_PORT).toBe(String(port));
    const argv = specifiers(unit.get('ExecStart')![0]!).split(' ');
    const { metrics, exitCode } = await exercise(
      { argv, env, cwd: specifiers(unit.get('WorkingDirectory')![0]!) },
      port,
    );
    expect(metrics).toContain('# TYPE codefleet_jobs_in_flight gauge');
    expect(metrics).toContain('# TYPE codefleet_workers_live gauge');
    expect(exitCode).toBe(0);
  });

  it('launchd: the property list starts a healthy worker that drains on SIGTERM, and waits out the grace', async () => {
    const plist = read('infra/launchd/dev.codefleet.worker.plist');
    expect(asInteger(plistValue(plist, 'ExitTimeOut'))).toBeGreaterThan(grace + 10);
    const paths = (value: string) =>
      value
        .replace('/opt/homebrew/opt/node@22/bin/node', process.execPath)
        .replaceAll('/etc/codefleet/config.yaml', join(root, 'config.yaml'))
        .replaceAll('/opt/codefleet/', root)
        .replaceAll('9101', String(port));
    const env: Record<string, string> = baseEnv();
    for (const [name, value] of Object.entries(plistValue(plist, 'EnvironmentVariables'))) {
      if (name === 'PATH' || name === 'HOME') continue; // this machine's, not the Mac's
      expect(configVariables.has(name) || name === 'GITHUB_TOKEN' ? name : `unknown ${name}`).toBe(name);
      env[name] = paths(String(value));
    }
    env.CODEFLEET_DATA_DIR = join(dir.path, 'data'); // not inside this checkout
    const argv = (plistValue(plist, 'ProgramArguments') as string[]).map(paths);
    const { exitCode } = await exercise({ argv, env, cwd: root }, port);
    expect(exitCode).toBe(0);
  });

  it('container: ENTRYPOINT and CMD start a healthy worker (HEALTHCHECK passes) that drains on SIGTERM; compose waits out the grace', async () => {
    const { instructions, env: imageEnv } = dockerfile(read('infra/container/Dockerfile'));
    expect(instructions.get('STOPSIGNAL')).toBe('SIGTERM');
    const appDir = instructions.get('WORKDIR')!;
    const local = (value: string) => value.replaceAll(`${appDir}/`, root).replaceAll('9101', String(port));
    const env: Record<string, string> = baseEnv();
    for (const [name, value] of Object.entries(imageEnv)) {
      if (name.startsWith('CODEFLEET_')) expect(configVariables).toContain(name);
      env[name] = local(value);
    }
    env.CODEFLEET_DATA_DIR = join(dir.path, 'data');
    let argv = [
      ...(JSON.parse(instructions.get('ENTRYPOINT')!) as string[]),
      ...(JSON.parse(instructions.get('CMD')!) as string[]),
    ].map(local);
    // tini reaps orphans in the container; where it is not installed the command is the rest.
    if (argv[0] === '/usr/bin/tini' && !existsSync('/usr/bin/tini')) argv = argv.slice(argv.indexOf('--') + 1);

    const healthcheck = (JSON.parse(instructions.get('HEALTHCHECK')!.replace(/^.*?CMD\s+/, '')) as string[]).map(local);
    const probe = async () => {
      const [program, ...args] = healthcheck;
      const probeExit = await new Promise<number | null>((resolve) =>
        spawn(program === 'node' ? process.execPath : program!, args, { env, stdio: 'ignore' }).once('exit', resolve),
      );
      expect(probeExit).toBe(0);
    };
    if (argv[0] === 'node') argv[0] = process.execPath; // the image's node on PATH: this one
    const { exitCode } = await exercise({ argv, env, cwd: root }, port, probe);
    expect(exitCode).toBe(0);

    const compose = parseYaml(read('docker-compose.yml')) as {
      services: Record<string, { stop_grace_period?: string; environment?: Record<string, string> }>;
    };
    const worker = compose.services.worker!;
    expect(Number(/^(\d+)s$/.exec(worker.stop_grace_period ?? '')?.[1])).toBeGreaterThan(grace + 10);
    for (const name of Object.keys(worker.environment ?? {}))
      if (name.startsWith('CODEFLEET_') || name.endsWith('_URL')) expect(configVariables).toContain(name);
  });

  it('kubernetes: the pod outlives the grace, probes /healthz, and KEDA scales on metrics a worker exports', async () => {
    type Deployment = {
      spec: {
        template: {
          spec: {
            terminationGracePeriodSeconds: number;
            containers: { env: { name: string }[]; livenessProbe: { httpGet: { path: string } } }[];
          };
        };
      };
    };
    type ScaledObject = { spec: { triggers: { metadata: { query: string } }[] } };
    const [deployment, scaled] = parseAllDocuments(read('infra/kubernetes/worker.yaml')).map(
      (doc) => doc.toJS() as unknown,
    ) as [Deployment, ScaledObject];
    const pod = deployment.spec.template.spec;
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(grace + 10);
    expect(pod.containers[0]!.livenessProbe.httpGet.path).toBe('/healthz');
    for (const { name } of pod.containers[0]!.env) if (name !== 'GITHUB_TOKEN') expect(configVariables).toContain(name);

    const query = scaled.spec.triggers[0]!.metadata.query;
    const names = [...query.matchAll(/codefleet_\w+/g)].map((m) => m[0]);
    expect(names.length).toBeGreaterThan(0);
    const env = { ...baseEnv(), CODEFLEET_DATA_DIR: join(dir.path, 'data'), CODEFLEET_METRICS_PORT: String(port) };
    const { metrics } = await exercise(
      { argv: [process.execPath, join(root, 'apps/cli/dist/bin/codefleet.js'), 'worker'], env, cwd: root },
      port,
    );
    for (const name of names) expect(metrics).toContain(`# TYPE ${name} `);
  });

  // Secrets the producers read through their *_env names (not `${...}` in config.yaml).
  const producerSecrets = new Set([
    'CODEFLEET_API_TOKEN',
    'CODEFLEET_CALLBACK_SECRET',
    'SLACK_BOT_TOKEN',
    'SLACK_APP_TOKEN',
    'SLACK_SIGNING_SECRET',
    'LINE_CHANNEL_SECRET',
    'LINE_CHANNEL_ACCESS_TOKEN',
    'GITHUB_TOKEN',
    'GITHUB_WEBHOOK_SECRET',
    'CODEFLEET_DASHBOARD_TOKEN',
  ]);
  const known = (name: string) => configVariables.has(name) || producerSecrets.has(name);

  it('systemd: the serve unit hosts the enabled producers, healthy, and stops on SIGTERM', async () => {
    const unit = unitEntries(read('infra/systemd/codefleet-serve.service'));
    const apiPort = await freePort();
    const local = (value: string) =>
      value
        .replaceAll('/etc/codefleet/config.yaml', join(root, 'config.yaml'))
        .replaceAll('/var/lib/codefleet', join(dir.path, 'data'))
        .replaceAll('/opt/codefleet', root.replace(/\/$/, ''));
    // What /etc/codefleet/env would hold for an HTTP API.
    const env: Record<string, string> = {
      ...baseEnv(),
      CODEFLEET_HTTP_API: 'true',
      CODEFLEET_HTTP_API_PORT: String(apiPort),
      CODEFLEET_API_TOKEN: 'api-token-0123456789',
      GITHUB_TOKEN: 'stand-in-github-token',
      // The unit serves everything, /healthz included, on serve's one port (8787); here on a free port.
      CODEFLEET_SERVE_PORT: String(port),
    };
    for (const assignment of unit.get('Environment') ?? []) {
      const [name, ...value] = local(assignment).split('=');
      expect(configVariables).toContain(name);
      env[name!] = value.join('=');
    }
    const argv = local(unit.get('ExecStart')![0]!).split(' ');
    const { exitCode } = await exercise(
      { argv, env, cwd: local(unit.get('WorkingDirectory')![0]!) },
      port,
      async () => {
        const created = await fetch(`http://127.0.0.1:${apiPort}/v1/jobs`, {
          method: 'POST',
          headers: { authorization: 'Bearer api-token-0123456789', 'content-type': 'application/json' },
          body: JSON.stringify({ repo: '/srv/repos/widgets', title: 'A job through the deployed API' }),
        });
        expect(created.status).toBe(201);
      },
    );
    expect(exitCode).toBe(0);
  });

  it("compose and kubernetes: the producers get only variables codefleet reads, and are probed on serve's one port", () => {
    const compose = parseYaml(read('docker-compose.yml')) as {
      services: Record<
        string,
        { command?: string[]; environment?: Record<string, string>; healthcheck?: { test: string[] } }
      >;
    };
    const producer = compose.services.producer!;
    for (const name of Object.keys(producer.environment ?? {}))
      expect(known(name) ? name : `unknown ${name}`).toBe(name);
    expect(producer.command).toEqual(['serve']);
    expect(producer.healthcheck!.test.join(' ')).toContain(`127.0.0.1:${defaults.serve.port}/healthz`);

    type Pod = {
      spec: {
        template: {
          spec: {
            containers: {
              args: string[];
              env: { name: string }[];
              ports: { name: string; containerPort: number }[];
              livenessProbe: { httpGet: { path: string; port: string } };
            }[];
          };
        };
      };
    };
    const [deployment] = parseAllDocuments(read('infra/kubernetes/serve.yaml')).map((doc) => doc.toJS() as unknown) as [
      Pod,
    ];
    const container = deployment.spec.template.spec.containers[0]!;
    expect(container.args.slice(0, 1)).toEqual(['serve']);
    for (const { name } of container.env) expect(known(name) ? name : `unknown ${name}`).toBe(name);
    const probePort = container.ports.find((p) => p.name === container.livenessProbe.httpGet.port)!.containerPort;
    expect(container.args).toEqual(['serve']);
    expect(probePort).toBe(defaults.serve.port);
    expect(container.livenessProbe.httpGet.path).toBe('/healthz');
  });

  it('aws: the SQS queues match the defaults the worker runs with', () => {
    const template = parseYaml(read('infra/aws/sqs-queues.yaml')) as {
      Resources: Record<string, { Properties: Record<string, unknown> }>;
    };
    const queue = template.Resources.JobQueue!.Properties;
    const { sqs } = defaults.queue;
    expect(queue.VisibilityTimeout).toBe(sqs.visibility_timeout);
    expect(queue.ReceiveMessageWaitTimeSeconds).toBe(sqs.wait_time_seconds);
    expect((queue.RedrivePolicy as { maxReceiveCount: number }).maxReceiveCount).toBe(sqs.max_receive_count);
    expect(queue.RedrivePolicy).toMatchObject({ deadLetterTargetArn: { 'Fn::GetAtt': ['DeadLetterQueue', 'Arn'] } });
  });
});

function asInteger(value: unknown): number {
  if (typeof value !== 'number') throw new Error(`expected an <integer>, got ${JSON.stringify(value)}`);
  return value;
}
