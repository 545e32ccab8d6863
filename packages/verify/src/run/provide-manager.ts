import { createHash, randomBytes } from 'node:crypto';
import { chmod, lstat, mkdir, readFile, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { isAbsolute, join, normalize } from 'node:path';
import { CodefleetError } from '@codefleet/core';
import { runProcess, type ProcessRunner } from '@codefleet/process';
import type { PackageManager } from '../plan/package-manager.js';

/** Options of {@link provideManager}. */
export interface ProvideOptions {
  /** Where fetched managers are kept, shared by jobs, outside every working copy; runs must see it read-only. */
  toolsDir: string;
  /** The environment of the host-side `npm pack` (PATH with npm and node, HOME, registry and CA settings). */
  env: Readonly<Record<string, string>>;
  /** Time limit of the fetch. */
  timeoutMs: number;
  signal?: AbortSignal;
  /** Runs `npm pack` and `tar`; default `runProcess` on the host. */
  runner?: ProcessRunner;
  /** The CPU the bun binary is for (`process.arch` by default). */
  arch?: string;
}

/** A manager made available: put `binDir` in front of PATH; `env` holds the settings it needs beside npm's. */
export interface ProvidedManager {
  binDir: string;
  /** The npm package and version (or major) it came from: `pnpm@9.15.0`, `@yarnpkg/cli-dist@4`. */
  spec: string;
  env: Record<string, string>;
}

/**
 * Makes `manager` runnable in the job's runs: npm is the host's; pnpm, yarn (classic and
 * berry) and bun are fetched once per version on the host with its own npm (`npm pack`,
 * so the host's registry, proxy and CA apply), unpacked under `toolsDir` and given a
 * `bin/` of launchers. Fetching here rather than with corepack inside the sandbox: a run
 * reaches the network only through codefleet's proxy, which corepack honours only in recent
 * versions, and every run would fetch again into its fresh HOME.
 * A version pinned with a hash (`pnpm@9.15.0+sha512.…`) must match the fetched tarball.
 *
 * @throws {CodefleetError} `verify_failed`: transient when the fetch failed, permanent
 *   when the tarball does not match the pinned hash.
 */
export async function provideManager(
  manager: PackageManager,
  options: ProvideOptions,
): Promise<ProvidedManager | undefined> {
  if (manager.name === 'npm') return undefined;
  const spec = packageSpec(manager, options.arch ?? process.arch);
  const dir = join(options.toolsDir, spec.replace('/', '+'));
  const provided = { binDir: join(dir, 'bin'), spec, env: managerEnv(manager, options.env) };
  if (await isDirectory(provided.binDir)) return provided;
  await mkdir(options.toolsDir, { recursive: true });
  const temp = `${dir}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    await mkdir(temp);
    const tarball = await fetchTarball(spec, temp, options);
    if (manager.integrity !== undefined) await checkIntegrity(tarball, manager, spec);
    await run(['tar', '-xzf', tarball, '-C', temp, '--no-same-owner'], temp, options, `unpack ${spec}`);
    await rm(tarball, { force: true });
    await writeLaunchers(temp, dir, manager);
    // Another worker may have provided it meanwhile: theirs is as good.
    await rename(temp, dir).catch(async (error: unknown) => {
      if (!(await isDirectory(provided.binDir))) throw error;
    });
    return provided;
  } finally {
    await rm(temp, { recursive: true, force: true });
  }
}

/** The npm package that holds the manager: yarn 2+ ships as `@yarnpkg/cli-dist`, bun as a binary per CPU. */
export function packageSpec(manager: PackageManager, arch: string): string {
  if (manager.name === 'yarn' && manager.flavour === 'berry') return `@yarnpkg/cli-dist@${manager.version}`;
  if (manager.name === 'bun') return `@oven/bun-linux-${arch === 'arm64' ? 'aarch64' : 'x64'}@${manager.version}`;
  return `${manager.name}@${manager.version}`;
}

/**
 * What the manager needs to reach the registry the way npm does: pnpm and yarn classic read
 * npm's `npm_config_*` settings, yarn berry and bun have their own names for them.
 */
function managerEnv(manager: PackageManager, env: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  const registry = env.npm_config_registry;
  const ca = env.npm_config_cafile ?? env.NODE_EXTRA_CA_CERTS;
  if (manager.name === 'yarn' && manager.flavour === 'berry') {
    out.YARN_ENABLE_TELEMETRY = '0';
    if (registry !== undefined) out.YARN_NPM_REGISTRY_SERVER = registry;
    if (ca !== undefined) out.YARN_HTTPS_CA_FILE_PATH = ca;
  }
  if (manager.name === 'bun') {
    if (registry !== undefined) out.BUN_CONFIG_REGISTRY = registry;
    if (ca !== undefined) out.NODE_EXTRA_CA_CERTS = ca;
  }
  return out;
}

async function fetchTarball(spec: string, dir: string, options: ProvideOptions): Promise<string> {
  await run(
    ['npm', 'pack', spec, '--pack-destination', dir, '--ignore-scripts', '--silent'],
    dir,
    options,
    `fetch ${spec} from the npm registry`,
  );
  const tarballs = (await readdir(dir)).filter((name) => name.endsWith('.tgz'));
  if (tarballs.length !== 1)
    throw new CodefleetError('verify_failed', `npm pack ${spec} left ${tarballs.length} tarballs`, {
      verdict: 'transient',
    });
  return join(dir, tarballs[0]!);
}

async function run(argv: string[], cwd: string, options: ProvideOptions, what: string): Promise<void> {
  const result = await (options.runner ?? runProcess)(argv, {
    cwd,
    env: options.env,
    timeoutMs: options.timeoutMs,
    tailBytes: 4096,
    ...(options.signal === undefined ? {} : { signal: options.signal }),
  });
  if (result.cancelled) throw new CodefleetError('cancelled', `cancelled while trying to ${what}`);
  if (result.exitCode === 0) return;
  const why =
    result.spawnError ?? (result.timedOut ? 'timed out' : result.outputTail.trim().split('\n').slice(-3).join(' / '));
  throw new CodefleetError('verify_failed', `could not ${what}: ${why.slice(0, 500)}`, { verdict: 'transient' });
}

async function checkIntegrity(tarball: string, manager: PackageManager, spec: string): Promise<void> {
  const { algorithm, hex } = manager.integrity!;
  const actual = createHash(algorithm)
    .update(await readFile(tarball))
    .digest('hex');
  if (actual === hex) return;
  throw new CodefleetError(
    'verify_failed',
    `${spec} from the registry does not match the hash package.json's packageManager pins (${algorithm}); fix packageManager or the registry`,
    { verdict: 'permanent' },
  );
}

/**
 * `bin/<name>` in `temp` for each executable the package declares: a shell script that runs
 * it (by its path once `temp` is renamed to `dir`) with the `node` on PATH (the run's), or the
 * bun binary itself. Paths are codefleet's own (`toolsDir`, a validated spec) and the
 * package's bin entries, which must stay inside it.
 */
async function writeLaunchers(temp: string, dir: string, manager: PackageManager): Promise<void> {
  const bin = join(temp, 'bin');
  await mkdir(bin);
  const root = join(dir, 'package');
  if (manager.name === 'bun') {
    await chmod(join(temp, 'package', 'bin', 'bun'), 0o755);
    await launcher(bin, 'bun', `exec ${quote(join(root, 'bin', 'bun'))} "$@"`);
    await launcher(bin, 'bunx', `exec ${quote(join(root, 'bin', 'bun'))} x "$@"`);
    return;
  }
  const declared = (JSON.parse(await readFile(join(temp, 'package', 'package.json'), 'utf8')) as { bin?: unknown }).bin;
  const entries = typeof declared === 'string' ? [[manager.name, declared]] : Object.entries(declared ?? {});
  for (const [name, target] of entries) {
    if (typeof target !== 'string' || !/^[\w.-]+$/.test(name)) continue;
    const relative = normalize(target);
    if (isAbsolute(relative) || relative.startsWith('..')) continue;
    await launcher(bin, name, `exec node ${quote(join(root, relative))} "$@"`);
  }
  if (!(await readdir(bin)).includes(manager.name)) {
    throw new CodefleetError('verify_failed', `the ${manager.name} package declares no ${manager.name} executable`, {
      verdict: 'permanent',
    });
  }
}

async function launcher(bin: string, name: string, line: string): Promise<void> {
  await writeFile(join(bin, name), `#!/bin/sh\n${line}\n`, { mode: 0o755 });
}

function quote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

async function isDirectory(path: string): Promise<boolean> {
  return lstat(path).then(
    (info) => info.isDirectory(),
    () => false,
  );
}
