// The run's network, for real: bubblewrap with its own network namespace, the warden's relay
// and the worker's proxy, against a real redis-server, host listeners, and the npm registry.
import { execFileSync } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { createServer as createHttpServer } from 'node:http';
import { createServer, isIP, type AddressInfo, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { NetworkRefusal } from '@codefleet/process';
import { createTempDir, hostNpmEnv, startRedis, type RedisServer, type TempDir } from '@codefleet/testkit';
import { isInternalAddress, openSandbox, type NetworkPolicy, type Sandbox } from '../src/index.js';

const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C' };
const host = { platform: process.platform, path: env.PATH };
const node = process.execPath;

let dir: TempDir;
let copy: string;
let redis: RedisServer;
const servers: Server[] = [];

async function listen(server: Server, path?: string): Promise<number> {
  servers.push(server);
  await new Promise<void>((resolve) =>
    path === undefined ? server.listen(0, '127.0.0.1', resolve) : server.listen(path, resolve),
  );
  return path === undefined ? (server.address() as AddressInfo).port : 0;
}

async function sandboxWith(network: NetworkPolicy): Promise<Sandbox> {
  return openSandbox(
    {
      mode: 'bwrap',
      network,
      readPaths: [],
      hiddenPaths: [join(dir.path, 'data')],
      runRoot: join(dir.path, 'data', 'sandbox'),
    },
    host,
  );
}

async function run(sandbox: Sandbox, argv: string[]) {
  const refused: NetworkRefusal[] = [];
  const result = await sandbox.run(argv, {
    cwd: copy,
    env,
    writable: [copy],
    timeoutMs: 120_000,
    onNetworkRefused: (refusal) => refused.push(refusal),
  });
  return { ...result, refused };
}

/** A Node one-liner that connects to `target` (port or socket path), prints what it got or the error code. */
function probe(target: string): string[] {
  return [
    node,
    '-e',
    `require('net').connect(${target}).on('data', (d) => { console.log('GOT', String(d).trim()); process.exit(0); }).on('error', (e) => { console.log('ERR', e.code); process.exit(1); })`,
  ];
}

beforeAll(async () => {
  dir = await createTempDir('sandbox-network');
  copy = join(dir.path, 'data', 'copies', 'c1');
  await mkdir(copy, { recursive: true });
  redis = await startRedis();
});

afterAll(async () => {
  for (const server of servers) server.close();
  await redis?.stop();
  await dir?.dispose();
});

describe('a bwrap run on the public network policy (the default)', () => {
  it("cannot reach the fleet's Redis on loopback: not directly, not through the proxy, not by a name that resolves to it", async () => {
    await redis.command('SET', 'codefleet:job:1', 'real');
    const sandbox = await sandboxWith({ mode: 'public', allow: [] });
    const url = `127.0.0.1:${redis.port}`;
    // What the attacker did: redis-cli from /usr/bin, then the same through the proxy variables.
    const result = await run(sandbox, [
      'sh',
      '-c',
      [
        `redis-cli -h 127.0.0.1 -p ${redis.port} SET codefleet:job:1 forged 2>&1 | head -n 1`,
        // --noproxy '': loopback is in NO_PROXY (allowed loopback ports are relayed at their own address).
        `curl -sS -m 20 --noproxy '' -p -x "$HTTPS_PROXY" telnet://${url} 2>&1 | head -n 1`,
        `curl -sS -m 20 --noproxy '' -p -x "$HTTPS_PROXY" telnet://localhost:${redis.port} 2>&1 | head -n 1`,
        `curl -sS -m 20 --noproxy '' -x "$HTTP_PROXY" http://localhost.:${redis.port}/ 2>&1 | head -n 2`,
      ].join('; '),
    ]);
    expect(result.exitCode).toBe(0);
    expect(result.outputTail).toMatch(/Could not connect to Redis|Connection refused/);
    expect(result.outputTail).toMatch(/CONNECT tunnel failed, response 403/);
    expect(result.outputTail).toContain('an internal address');
    expect(await redis.command('GET', 'codefleet:job:1')).toBe('$4');
    expect(result.refused.map((refusal) => refusal.destination)).toEqual([
      url,
      `localhost:${redis.port}`,
      `localhost:${redis.port}`,
    ]);
    expect(result.refused.every((refusal) => refusal.reason.includes('resolves to 127.0.0.1'))).toBe(true);
    expect(result.networkRefusals).toEqual({ kept: result.refused, total: 3 });
  });

  it("cannot reach the host's abstract unix sockets, nor loopback ports directly", async () => {
    const name = `codefleet-test-${process.pid}`;
    const greeting = createServer((socket) => socket.end('hello from the host\n'));
    await listen(greeting, `\0${name}`);
    const tcp = createServer((socket) => socket.end('hello from loopback\n'));
    const port = await listen(tcp);
    const sandbox = await sandboxWith({ mode: 'public', allow: [] });
    const abstract = await run(sandbox, probe(JSON.stringify(`\0${name}`)));
    expect(abstract.outputTail).toContain('ERR ECONNREFUSED');
    const direct = await run(sandbox, probe(String(port)));
    expect(direct.outputTail).toContain('ERR ECONNREFUSED');
    // The same probes from the host get through: the listeners are there.
    expect(
      (
        await run(
          await openSandbox(
            {
              mode: 'none',
              network: { mode: 'public', allow: [] },
              readPaths: [],
              hiddenPaths: [],
              runRoot: join(dir.path, 'none'),
            },
            host,
          ),
          probe(String(port)),
        )
      ).outputTail,
    ).toContain('GOT hello');
  });

  it('a redirect to an internal address is a new request, judged again', async () => {
    const inner = createHttpServer((_, res) => res.end('inner secret\n'));
    const innerPort = await listen(inner as unknown as Server);
    const outer = createHttpServer((_, res) =>
      res.writeHead(302, { Location: `http://localhost:${innerPort}/` }).end(),
    );
    const outerPort = await listen(outer as unknown as Server);
    // The outer server is named (as an operator names a LAN host); the inner one is not.
    const sandbox = await sandboxWith({ mode: 'public', allow: [`localhost:${outerPort}`] });
    const result = await run(sandbox, [
      'sh',
      '-c',
      `curl -sS -L -m 20 --noproxy '' -x "$HTTP_PROXY" http://localhost:${outerPort}/ 2>&1 | head -n 3`,
    ]);
    expect(result.outputTail).not.toContain('inner secret');
    expect(result.outputTail).toContain(`localhost:${innerPort} refused`);
  });

  it('installs a real package from the npm registry through the proxy (npm honours HTTPS_PROXY)', async () => {
    const project = join(copy, 'install');
    await mkdir(project, { recursive: true });
    await writeFile(
      join(project, 'package.json'),
      JSON.stringify({ name: 'probe', version: '1.0.0', private: true, dependencies: { 'is-number': '7.0.0' } }),
    );
    // The run has a fresh HOME, so it sees none of the host's user npmrc: the registry and CA
    // this host's npm uses (a mirror, a TLS-inspecting egress's CA) are passed on as an
    // operator passes them (verification.env.pass), and a mirror on a private address is
    // named in `allow`, as the policy asks. npm comes from PATH, as a repository's install
    // step finds it (a Node build may ship without one, and then without a global npmrc).
    const npm = hostNpm();
    const allow = npm.privateRegistry === undefined ? [] : [npm.privateRegistry];
    const sandbox = await sandboxWith({ mode: 'public', allow });
    const result = await sandbox.run(['npm', 'install', '--no-audit', '--no-fund', '--ignore-scripts'], {
      cwd: project,
      env: { ...env, ...npm.env },
      writable: [copy],
      timeoutMs: 300_000,
    });
    expect({
      exitCode: result.exitCode,
      added: /added 1 package/.test(result.outputTail),
      output: result.outputTail.slice(-2000),
    }).toMatchObject({ exitCode: 0, added: true });
  }, 320_000);
});

/** The host's npm settings for a run, and its registry's `host:port` when that is internal. */
function hostNpm(): { env: Record<string, string>; privateRegistry?: string } {
  const env = hostNpmEnv();
  const url = new URL(env.npm_config_registry ?? 'https://registry.npmjs.org/');
  const port = url.port === '' ? (url.protocol === 'http:' ? 80 : 443) : Number(url.port);
  const internalHost = isIP(url.hostname) !== 0 ? isInternalAddress(url.hostname) : lookupInternal(url.hostname);
  return { env, ...(internalHost ? { privateRegistry: `${url.hostname}:${port}` } : {}) };
}

function lookupInternal(name: string): boolean {
  let out: string[];
  try {
    out = execFileSync('getent', ['ahosts', name], { encoding: 'utf8' }).trim().split('\n');
  } catch {
    return false; // does not resolve here: the install below says so itself
  }
  return out.some((line) => isInternalAddress(line.split(/\s+/)[0] ?? ''));
}

describe('allowlist and none', () => {
  it('allowlist: only the named destinations, the rest refused (public hosts included)', async () => {
    const sandbox = await sandboxWith({ mode: 'allowlist', allow: ['registry.npmjs.org:443'] });
    const result = await run(sandbox, [
      'sh',
      '-c',
      'curl -sS -m 20 -o /dev/null -w "%{http_code}\\n" https://registry.npmjs.org/is-number; curl -sS -m 20 https://deb.debian.org/ 2>&1 | head -n 1',
    ]);
    expect(result.outputTail).toMatch(/^200$/m);
    expect(result.refused).toEqual([{ destination: 'deb.debian.org:443', reason: 'not in sandbox.network.allow' }]);
  });

  it('none: no proxy variables, nothing reachable', async () => {
    const sandbox = await sandboxWith({ mode: 'none', allow: [] });
    const result = await run(sandbox, [
      'sh',
      '-c',
      'echo "proxy=${HTTPS_PROXY:-unset}"; curl -sS -m 20 https://registry.npmjs.org/ 2>&1 | head -n 1',
    ]);
    expect(result.outputTail).toContain('proxy=unset');
    expect(result.outputTail).toMatch(/Could not resolve host|Couldn't connect|Failed to connect/);
    expect(result.networkRefusals).toBeUndefined();
  });
});
