import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { probeOllama } from '@codefleet/agents';
import { parseConfig, type Config } from '@codefleet/config';
import { docFiles, docSection, FLEET_ACL_RULES, startOllamaStandIn, type OllamaStandIn } from '@codefleet/testkit';
import { enabledProducers } from '../src/commands/serve.js';

// Every deployment file runs a worker whose agent can run and whose forge is the one it
// names, and runs the producers. Each file's own environment (plus the secrets its comments
// say to provide) goes through the config loader with the sample config.yaml; the agent's
// model server is the one the file names, it pulls the model the worker asks for, and an
// Ollama stand-in holding exactly those models answers the worker's readiness probe. The
// launchers themselves start real processes in infra.test.ts.

const root = fileURLToPath(new URL('../../../', import.meta.url));
const read = (path: string) => readFileSync(join(root, path), 'utf8');
const sample = read('config.yaml');
/** What the docs tell an operator to provide as secrets; the values are stand-ins. */
const secrets = {
  GITHUB_TOKEN: 'stand-in-github-token',
  GITHUB_WEBHOOK_SECRET: 'stand-in-webhook-secret',
  REDIS_PASSWORD: 'stand-in-redis-password',
};

const load = (env: Record<string, string>): Config =>
  parseConfig(sample, { env, baseDir: root, hostname: hostname() }).config;

/** `${NAME}`, `${NAME:-default}` and `${NAME:?error}` as docker compose interpolates them from the host's environment. */
function interpolate(value: string, host: Record<string, string>): string {
  return value.replace(/\$\{([A-Z0-9_]+)(?::([-?])([^}]*))?\}/g, (_, name: string, kind?: string, text?: string) => {
    if (kind === '?' && !host[name]) throw new Error(`compose refuses to start: ${text}`);
    return (host[name] || (kind === '-' ? text : undefined)) ?? '';
  });
}

/** Key=Value entries of a systemd unit (Environment= repeated). */
function unitEnvironment(text: string, specifiers: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [, assignment] of text.matchAll(/^Environment=(.*)$/gm)) {
    const expanded = assignment!.replace(/%([a-zA-Z])/g, (m, s: string) => specifiers[s] ?? m);
    const at = expanded.indexOf('=');
    env[expanded.slice(0, at)] = expanded.slice(at + 1);
  }
  return env;
}

/** The EnvironmentVariables dict and ProgramArguments of a launchd property list. */
function plist(text: string): { env: Record<string, string>; argv: string[] } {
  const body = text.replace(/<!--[\s\S]*?-->/g, '');
  const dict = /<key>EnvironmentVariables<\/key>\s*<dict>([\s\S]*?)<\/dict>/.exec(body)![1]!;
  const argv = /<key>ProgramArguments<\/key>\s*<array>([\s\S]*?)<\/array>/.exec(body)![1]!;
  return {
    env: Object.fromEntries(
      [...dict.matchAll(/<key>(.*?)<\/key>\s*<string>(.*?)<\/string>/g)].map((m) => [m[1]!, m[2]!]),
    ),
    argv: [...argv.matchAll(/<string>(.*?)<\/string>/g)].map((m) => m[1]!),
  };
}

type KubeEnv = { name: string; value?: string; valueFrom?: { secretKeyRef?: { key: string }; fieldRef?: unknown } }[];
/** A container's env: values as written, secrets as the stand-ins (created per the file's comment), field refs as a pod name. */
function kubeEnvironment(env: KubeEnv): Record<string, string> {
  const byKey: Record<string, string> = {
    'github-token': secrets.GITHUB_TOKEN,
    'github-webhook-secret': secrets.GITHUB_WEBHOOK_SECRET,
    'api-token': 'stand-in-api-token-0123456789',
    'redis-password': secrets.REDIS_PASSWORD,
  };
  const out: Record<string, string> = {};
  for (const e of env) {
    // Kubernetes expands $(NAME) from the variables declared before this one.
    if (e.value !== undefined)
      out[e.name] = e.value.replace(/\$\(([A-Za-z0-9_]+)\)/g, (m, name: string) => out[name] ?? m);
    else if (e.valueFrom?.secretKeyRef) {
      if (byKey[e.valueFrom.secretKeyRef.key] !== undefined) out[e.name] = byKey[e.valueFrom.secretKeyRef.key]!;
    } else out[e.name] = 'codefleet-worker-abc12';
  }
  return out;
}

/** Models a shell command pulls (`ollama pull "$VAR"` with VAR from `env`, or `ollama pull name`). */
function pulled(command: string, env: Record<string, string>): string[] {
  return [...command.matchAll(/ollama pull "?\$?\$?\{?([A-Za-z0-9_.:-]+)\}?"?/g)].map((m) => env[m[1]!] ?? m[1]!);
}

interface Deployment {
  file: string;
  /** The worker's environment as the file sets it, with the secrets it says to provide. */
  env: Record<string, string>;
  /** The Ollama URL the file's model server answers on, and the models it pulls. */
  ollama: { url: string; models: string[] };
}

describe('deployment files: a worker with a working agent and the forge it names, and the producers', () => {
  let ollama: OllamaStandIn | undefined;
  afterAll(async () => {
    await ollama?.close();
  });

  type ComposeService = {
    image?: string;
    command?: string[];
    entrypoint?: string[];
    environment?: Record<string, string>;
    ports?: string[];
  };
  const compose = parseYaml(read('docker-compose.yml')) as { services: Record<string, ComposeService> };
  const imageEnv = Object.fromEntries(
    [
      ...read('infra/container/Dockerfile')
        .replace(/\\\n/g, ' ')
        .matchAll(/\b(CODEFLEET_[A-Z_]+)=(\S+)/g),
    ].map((m) => [m[1]!, m[2]!]),
  );
  const composeEnv = (service: ComposeService) => ({
    ...imageEnv,
    ...Object.fromEntries(
      Object.entries(service.environment ?? {}).map(([k, v]) => [k, interpolate(String(v), secrets)]),
    ),
  });
  const kube = (file: string) =>
    parseAllDocuments(read(file)).map(
      (d) => d.toJS() as { kind: string; metadata: { name: string }; spec: Record<string, unknown> },
    );
  type PodSpec = {
    containers: { args?: string[]; command?: string[]; env: KubeEnv; ports?: { containerPort: number }[] }[];
  };
  const podOf = (doc: { spec: Record<string, unknown> }) => (doc.spec.template as { spec: PodSpec }).spec;
  const readme = read('infra/README.md');

  const deployments: Deployment[] = [];
  beforeAll(() => {
    // Compose: the ollama service the worker's OLLAMA_HOST names, and what ollama-pull pulls.
    const pull = compose.services['ollama-pull']!;
    deployments.push({
      file: 'docker-compose.yml',
      env: composeEnv(compose.services.worker!),
      ollama: { url: `http://ollama:11434`, models: pulled(pull.entrypoint!.join(' '), composeEnv(pull)) },
    });
    expect(compose.services.ollama!.image).toMatch(/^ollama\/ollama(:|$)/);
    expect(interpolate(pull.environment!.OLLAMA_HOST!, {})).toBe('http://ollama:11434');

    // Kubernetes: the worker Deployment, and the Service and pull Job of ollama.yaml.
    const worker = kube('infra/kubernetes/worker.yaml').find((d) => d.kind === 'Deployment')!;
    const ollamaDocs = kube('infra/kubernetes/ollama.yaml');
    const service = ollamaDocs.find((d) => d.kind === 'Service')!;
    const job = ollamaDocs.find((d) => d.kind === 'Job')!;
    const jobContainer = podOf(job).containers[0]!;
    const port = (service.spec.ports as { port: number }[])[0]!.port;
    deployments.push({
      file: 'infra/kubernetes/worker.yaml',
      env: { ...imageEnv, ...kubeEnvironment(podOf(worker).containers[0]!.env) },
      ollama: {
        url: `http://${service.metadata.name}:${port}`,
        models: pulled(jobContainer.command!.join(' '), kubeEnvironment(jobContainer.env)),
      },
    });

    // A host (systemd, launchd): the host's Ollama, with the models infra/README.md says to pull.
    const hostModels = pulled(readme, {});
    deployments.push({
      file: 'infra/systemd/codefleet-worker@.service',
      env: {
        ...unitEnvironment(read('infra/systemd/codefleet-worker@.service'), { i: '9101', H: 'host' }),
        ...secrets,
      },
      ollama: { url: 'http://127.0.0.1:11434', models: hostModels },
    });
    deployments.push({
      file: 'infra/launchd/dev.codefleet.worker.plist',
      env: plist(read('infra/launchd/dev.codefleet.worker.plist')).env,
      ollama: { url: 'http://127.0.0.1:11434', models: hostModels },
    });
  });

  it('each worker runs the built-in agent on the model server its file names, with a model that server pulls, and can run it', async () => {
    expect(deployments.map((d) => d.file)).toHaveLength(4);
    for (const { file, env, ollama: server } of deployments) {
      const config = load(env);
      expect([file, config.agents.default]).toEqual([file, 'ollama']);
      expect([file, config.agents.ollama.provider, config.agents.ollama.host]).toEqual([file, 'ollama', server.url]);
      expect([file, server.models]).toEqual([file, expect.arrayContaining([config.agents.ollama.model])]);
      // The readiness check the worker and `doctor` make, against a server holding exactly those models.
      ollama = await startOllamaStandIn({ models: server.models });
      const probe = await probeOllama({ host: ollama.url, model: config.agents.ollama.model, timeoutMs: 5_000 });
      expect([file, probe.status]).toEqual([file, 'ready']);
      await ollama.close();
      ollama = undefined;
    }
  });

  it('each worker publishes to GitHub with the token its file provides', () => {
    for (const { file, env } of deployments) {
      const config = load(env);
      expect([file, config.forge.type]).toEqual([file, 'github']);
      expect([file, config.forge.github.token === undefined ? 'no token' : 'token']).toEqual([file, 'token']);
    }
  });

  it('the launchd daemons run a supported Node (22 LTS or 24 from Homebrew, never the EOL 20), with a HOME', () => {
    for (const file of ['infra/launchd/dev.codefleet.worker.plist', 'infra/launchd/dev.codefleet.serve.plist']) {
      const { argv, env } = plist(read(file));
      expect([file, argv[0]]).toEqual([file, expect.stringMatching(/^\/opt\/homebrew\/opt\/node@(22|24)\/bin\/node$/)]);
      expect([file, env.PATH?.split(':')[0]]).toEqual([file, argv[0]!.replace(/\/node$/, '')]); // npx and npm of the same Node
      expect([file, env.HOME]).toEqual([file, '/Users/codefleet']);
    }
    expect(read('infra/container/Dockerfile')).toMatch(/^ARG NODE_IMAGE=node:(22|24)-/m);
  });

  it('each deployment runs the producers (`codefleet serve`) with the GitHub webhook on', () => {
    const producers: { file: string; argv: string[]; env: Record<string, string> }[] = [];
    const composeProducer = compose.services.producer!;
    producers.push({ file: 'docker-compose.yml', argv: composeProducer.command!, env: composeEnv(composeProducer) });
    expect((composeProducer as { profiles?: string[] }).profiles).toBeUndefined(); // started by `docker compose up`
    const serve = podOf(kube('infra/kubernetes/serve.yaml').find((d) => d.kind === 'Deployment')!).containers[0]!;
    producers.push({
      file: 'infra/kubernetes/serve.yaml',
      argv: serve.args!,
      env: { ...imageEnv, ...kubeEnvironment(serve.env) },
    });
    const unit = read('infra/systemd/codefleet-serve.service');
    producers.push({
      file: 'infra/systemd/codefleet-serve.service',
      argv: /^ExecStart=(.*)$/m.exec(unit)![1]!.split(' '),
      env: { ...unitEnvironment(unit, {}), ...secrets },
    });
    const launchd = plist(read('infra/launchd/dev.codefleet.serve.plist'));
    producers.push({ file: 'infra/launchd/dev.codefleet.serve.plist', argv: launchd.argv, env: launchd.env });
    for (const { file, argv, env } of producers) {
      expect([file, argv.find((a) => a === 'serve')]).toEqual([file, 'serve']);
      const config = load(env);
      expect([file, enabledProducers(config)]).toEqual([file, expect.arrayContaining(['webhook'])]);
    }
  });

  it('compose and the systemd unit serve the dashboard: published on loopback only, token from the environment', () => {
    const composeProducer = compose.services.producer!;
    const fromCompose = load(composeEnv(composeProducer));
    // On serve's one port (no port of its own).
    expect(fromCompose.dashboard.port).toBeUndefined();
    expect(fromCompose.dashboard).toMatchObject({
      enabled: true,
      token_env: 'CODEFLEET_DASHBOARD_TOKEN',
      read_only: false,
    });
    // 0.0.0.0 inside the container; the host publishes it on 127.0.0.1 only.
    expect(fromCompose.serve.host).toBe('0.0.0.0');
    expect(composeProducer.ports).toContain(`127.0.0.1:${fromCompose.serve.port}:${fromCompose.serve.port}`);
    for (const published of composeProducer.ports ?? []) expect(published).toMatch(/^127\.0\.0\.1:/);
    const unit = read('infra/systemd/codefleet-serve.service');
    const fromUnit = load({ ...unitEnvironment(unit, {}), ...secrets });
    expect([fromUnit.dashboard.enabled, fromUnit.dashboard.port]).toEqual([true, undefined]);
    expect(fromUnit.serve.host).toBe('127.0.0.1');
  });

  it('Redis wants a password everywhere it is shipped, and every service connects with it', () => {
    // Compose: the server refuses to start without REDIS_PASSWORD and requires it.
    const redis = compose.services.redis!;
    expect(() => interpolate(String(redis.environment!.REDIS_PASSWORD), {})).toThrow(/REDIS_PASSWORD/);
    expect(redis.command!.join(' ')).toContain('--requirepass "$$REDIS_PASSWORD"');
    expect(redis.ports).toEqual(['127.0.0.1:6379:6379']);
    // Kubernetes: the server's password is the secret the clients' URLs expand.
    const server = podOf(kube('infra/kubernetes/redis.yaml').find((d) => d.kind === 'Deployment')!).containers[0]!;
    expect(server.args!.join(' ')).toContain('--requirepass $(REDIS_PASSWORD)');
    expect(kubeEnvironment(server.env).REDIS_PASSWORD).toBe(secrets.REDIS_PASSWORD);
    const clients = [
      ['docker-compose.yml worker', composeEnv(compose.services.worker!)],
      ['docker-compose.yml producer', composeEnv(compose.services.producer!)],
      ...['worker', 'serve'].map((name) => [
        `infra/kubernetes/${name}.yaml`,
        {
          ...imageEnv,
          ...kubeEnvironment(
            podOf(kube(`infra/kubernetes/${name}.yaml`).find((d) => d.kind === 'Deployment')!).containers[0]!.env,
          ),
        },
      ]),
    ] as [string, Record<string, string>][];
    for (const [file, env] of clients) {
      const config = load(env);
      expect([file, config.queue.backend, config.store.backend]).toEqual([file, 'bullmq', 'redis']);
      for (const url of [config.queue.bullmq.url, config.store.redis_url])
        expect([file, url]).toEqual([file, `redis://:${secrets.REDIS_PASSWORD}@redis:6379`]);
      expect([file, config.allow_insecure_redis]).toEqual([file, false]);
      // Without the password the same file does not start.
      const { REDIS_PASSWORD: _, ...without } = secrets;
      const bare = file.startsWith('docker')
        ? {
            ...imageEnv,
            ...Object.fromEntries(
              Object.entries(compose.services[file.split(' ')[1]!]!.environment!).map(([k, v]) => [
                k,
                interpolate(String(v), without),
              ]),
            ),
          }
        : { ...env, REDIS_URL: 'redis://:@redis:6379' };
      expect(() => load(bare)).toThrow(
        /queue\.bullmq\.url: Redis at redis:6379 is not on this host and the URL has no password/,
      );
    }
  });

  it('no shipped file or doc shows an open Redis URL to another host', () => {
    const files = [
      'docker-compose.yml',
      'infra/kubernetes/worker.yaml',
      'infra/kubernetes/serve.yaml',
      'infra/container/Dockerfile',
      'infra/systemd/codefleet-worker@.service',
      'infra/launchd/dev.codefleet.worker.plist',
      'infra/README.md',
      ...docFiles(),
      'config.yaml',
    ];
    for (const file of files) {
      const open = [...read(file).matchAll(/\brediss?:\/\/(?![^\s"']*@)([^\s/:"'<>$]+)/g)]
        .map((m) => m[0])
        .filter((url) => !/\/\/(127\.0\.0\.1|localhost|\[::1\])/.test(url));
      expect([file, open]).toEqual([file, []]);
    }
    // The docs' ACL user is the one the queue conformance suite and the store contracts pass through.
    expect(docSection('A fleet on several hosts: three Mac minis and a Linux host').text).toContain(
      `user codefleet on >PASSWORD ${FLEET_ACL_RULES}`,
    );
  });
});
