import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ProcessResult, ResourceLimitHit } from '@codefleet/process';
import { proxySocket, sandboxHome, wardenScript } from '../bwrap.js';
import { isInternalAddress, parseAllowEntry, type NetworkPolicy } from '../network/policy.js';
import type { SandboxLimits } from '../types.js';
import type { CgroupParent } from './cgroup.js';
import type { WardenConfig } from './warden.js';

/** What the warden command is made of (a subset of the bwrap sandbox's parts). */
export interface WardenParts {
  node: string;
  network: NetworkPolicy;
  limits: SandboxLimits;
  prlimit?: string;
}

/** How often the warden counts the run's processes; memory and mounts every fourth time. */
const pollMs = 25;
const defaultProxyPort = 3128;

/** Bytes in `value` MiB. */
export function mb(value: number): number {
  return value * 1024 * 1024;
}

/**
 * The argv started inside bwrap (the warden, then `prlimit`, then the program) and its
 * environment: the run's own, with HOME and TMPDIR inside the run, the proxy variables every
 * common tool honours (curl, git, npm, pip, cargo, Node ≥ 22.21 with `NODE_USE_ENV_PROXY`),
 * and `NODE_OPTIONS` handed to the warden for the program only.
 */
export function wardenCommand(
  parts: WardenParts,
  env: Readonly<Record<string, string | undefined>>,
  program: string,
  args: readonly string[],
): { argv: string[]; env: Record<string, string> } {
  const { NODE_OPTIONS: nodeOptions, ...rest } = env;
  const forwards = loopbackForwards(parts.network);
  const proxyPort = pickProxyPort(forwards.map((forward) => forward.port));
  const config: WardenConfig = {
    ...(parts.network.mode === 'none' ? {} : { proxy: { socket: proxySocket, port: proxyPort, forwards } }),
    limits: {
      processes: parts.limits.processes,
      memoryBytes: mb(parts.limits.memoryMb),
      mounts: [
        { path: '/tmp', name: 'tmp', files: parts.limits.tmpFiles },
        { path: '/dev/shm', name: 'shm', files: parts.limits.tmpFiles },
      ],
      cpuSeconds: parts.limits.cpuSeconds,
      fileBytes: mb(parts.limits.fileSizeMb),
    },
    pollMs,
    nodeOptions: nodeOptions ?? null,
  };
  const limited = parts.prlimit === undefined ? [] : [parts.prlimit, ...prlimitArgs(parts.limits), '--'];
  const proxied = parts.network.mode === 'none' ? {} : proxyEnv(`http://127.0.0.1:${proxyPort}`);
  const defined = Object.fromEntries(
    Object.entries(rest).filter((entry): entry is [string, string] => entry[1] !== undefined),
  );
  return {
    // `--no-warnings`: the warden's stderr is the program's, and Node 22 warns at start that
    // NODE_USE_ENV_PROXY (meant for the program) is experimental. Children do not inherit it.
    argv: [parts.node, '--no-warnings', wardenScript, JSON.stringify(config), '--', ...limited, program, ...args],
    env: { ...defined, ...proxied, HOME: sandboxHome, TMPDIR: '/tmp' },
  };
}

/**
 * `prlimit` options for the limits the kernel enforces. Processes: the kernel counts them per
 * user namespace, so this bounds the run itself, at once, even where the warden's watch would
 * come too late (a fork bomb); a few more than the warden's limit, so that the warden still
 * sees the run go past it and ends it rather than letting it hang at the cap.
 */
function prlimitArgs(limits: SandboxLimits): string[] {
  return [
    `--nproc=${limits.processes + processHeadroom}`,
    `--nofile=${limits.openFiles}`,
    `--cpu=${limits.cpuSeconds}`,
    `--fsize=${mb(limits.fileSizeMb)}`,
    '--core=0',
  ];
}

/** bubblewrap's init and the warden count too, and the warden must see more than the limit. */
const processHeadroom = 8;

/** The variables that send a run's traffic through the proxy at `url`; loopback stays direct (the warden's forwards). */
export function proxyEnv(url: string): Record<string, string> {
  const noProxy = 'localhost,127.0.0.1,::1';
  return {
    HTTP_PROXY: url,
    HTTPS_PROXY: url,
    ALL_PROXY: url,
    http_proxy: url,
    https_proxy: url,
    all_proxy: url,
    NO_PROXY: noProxy,
    no_proxy: noProxy,
    npm_config_proxy: url,
    npm_config_https_proxy: url,
    YARN_HTTP_PROXY: url,
    YARN_HTTPS_PROXY: url,
    NODE_USE_ENV_PROXY: '1',
  };
}

/** Allowed host loopback destinations with a port: relayed inside the run at the same port. */
export function loopbackForwards(network: NetworkPolicy): { host: string; port: number }[] {
  if (network.mode === 'none') return [];
  const forwards: { host: string; port: number }[] = [];
  for (const entry of network.allow.map(parseAllowEntry)) {
    const loopback = entry.host === 'localhost' || (isInternalAddress(entry.host) && /^(127\.|::1$)/.test(entry.host));
    if (loopback && entry.port !== undefined && !forwards.some((forward) => forward.port === entry.port))
      forwards.push({ host: entry.host, port: entry.port });
  }
  return forwards;
}

function pickProxyPort(taken: readonly number[]): number {
  let port = defaultProxyPort;
  while (taken.includes(port)) port += 1;
  return port;
}

/**
 * Reads the status pipe (fd 3 of bwrap, handed to the warden, which keeps it from the
 * program): the warden's word that it started (so bubblewrap set the run up), and its report
 * of a limit.
 */
export function statusReader(): {
  read: (chunk: string) => void;
  ran: () => boolean;
  limit: () => ResourceLimitHit | undefined;
} {
  let ran = false;
  let carry = '';
  let limit: ResourceLimitHit | undefined;
  return {
    read(chunk) {
      const text = `${carry}${chunk}`;
      ran ||= text.includes('{"codefleet-warden":{"started":true}}');
      const lines = text.split('\n');
      carry = (lines.pop() ?? '').slice(-4096);
      for (const line of lines) limit ??= wardenReport(line);
    },
    ran: () => ran,
    limit: () => limit ?? wardenReport(carry),
  };
}

function wardenReport(line: string): ResourceLimitHit | undefined {
  if (!line.includes('codefleet-warden') || line.includes('"started"')) return undefined;
  try {
    const hit = (JSON.parse(line) as { 'codefleet-warden'?: Partial<ResourceLimitHit> })['codefleet-warden'];
    if (typeof hit?.limit !== 'string' || typeof hit.max !== 'number' || typeof hit.seen !== 'number') return undefined;
    return { limit: hit.limit.slice(0, 40), max: hit.max, seen: hit.seen };
  } catch {
    return undefined;
  }
}

/** The result with the run's limit hit (said at the end of its output too, where feedback reads it) and refusals. */
export function withFindings(
  result: ProcessResult,
  limit: ResourceLimitHit | undefined,
  refusals: ProcessResult['networkRefusals'],
): ProcessResult {
  const found: ProcessResult = {
    ...result,
    ...(refusals !== undefined && refusals.total > 0 ? { networkRefusals: refusals } : {}),
  };
  if (limit === undefined) return found;
  return {
    ...found,
    resourceLimit: limit,
    outputTail: `${result.outputTail}${result.outputTail.endsWith('\n') || result.outputTail === '' ? '' : '\n'}${describeLimitHit(limit)}\n`,
  };
}

/** One line for a limit hit: `resource_limit: processes — 513 seen, the limit is 512 (sandbox.limits.processes)`. */
export function describeLimitHit(hit: ResourceLimitHit): string {
  const setting = settingOf[hit.limit] ?? 'sandbox.limits';
  const bytes = /memory|size/.test(hit.limit);
  const show = (value: number) => (bytes ? `${Math.round(value / 1024 / 1024)} MiB` : String(value));
  const seen = hit.seen > 0 ? `${show(hit.seen)} seen, ` : '';
  const max = hit.max > 0 ? `the limit is ${show(hit.max)}` : 'over the limit';
  return `codefleet: resource_limit: ${hit.limit} — ${seen}${max} (${setting}); the run was stopped`;
}

const settingOf: Record<string, string> = {
  processes: 'sandbox.limits.processes',
  memory: 'sandbox.limits.memory_mb',
  tmp_size: 'sandbox.limits.tmp_mb',
  tmp_files: 'sandbox.limits.tmp_files',
  shm_size: 'sandbox.limits.shm_mb',
  shm_files: 'sandbox.limits.tmp_files',
  cpu_seconds: 'sandbox.limits.cpu_seconds',
  file_size: 'sandbox.limits.file_size_mb',
};

/**
 * Where a run's proxy socket goes: in its run directory, unless that path is too long for a
 * unix socket (108 bytes on Linux), then under a random name in the system's temporary directory.
 */
export function socketPath(runDir: string): string {
  const inRun = join(runDir, 'proxy.sock');
  if (Buffer.byteLength(inRun) < 100) return inRun;
  return join(tmpdir(), `codefleet-proxy-${randomBytes(8).toString('hex')}.sock`);
}

/** The network part of the sandbox's description line. */
export function describeNetwork(network: NetworkPolicy): string {
  if (network.mode === 'none') return 'no network';
  const allow = network.allow.length === 0 ? '' : `, and ${network.allow.join(', ')}`;
  return network.mode === 'public'
    ? `network through codefleet's proxy: the public internet only (no loopback, private or link-local address${allow})`
    : `network through codefleet's proxy: only ${network.allow.join(', ') || 'nothing'}`;
}

/** The cgroup part of the sandbox's description line (`doctor` shows it). */
export function describeCgroup(cgroup: CgroupParent | undefined): string {
  if (cgroup === undefined)
    return 'no cgroup (none this worker may create): the warden watches processes and memory every 25 ms';
  return `a cgroup v${cgroup.version} per run (pids${cgroup.memory === undefined ? '' : ' and memory'}) bounds processes${cgroup.memory === undefined ? '' : ' and memory'} in the kernel`;
}

/** The limits part of the sandbox's description line. */
export function describeLimits(limits: SandboxLimits, perProcess: boolean): string {
  const each = perProcess
    ? `; per process ${limits.openFiles} open files, ${limits.cpuSeconds} s CPU, ${limits.fileSizeMb} MiB files`
    : '; no per-process limits (prlimit is not installed)';
  return `limits per run: ${limits.processes} processes, ${limits.memoryMb} MiB memory, /tmp ${limits.tmpMb} MiB, /dev/shm ${limits.shmMb} MiB${each}`;
}
