import { constants } from 'node:fs';
import { access, mkdir, realpath, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { displayHost, probeOllama } from '@codefleet/agents';
import type { Config, LoadedConfig } from '@codefleet/config';
import { runProcess } from '@codefleet/process';
import type { Queue } from '@codefleet/queue';
import type { Sandbox } from '@codefleet/sandbox';
import type { RunStore } from '@codefleet/store';
import { defaultAgentReadiness } from '../agent-check.js';
import {
  gitEnvFrom,
  localQueuePath,
  openConfiguredQueue,
  openConfiguredStore,
  runStorePath,
  sandboxSettings,
} from '../runtime.js';
import { describeOrigin, keyFileIsOpen, loadFleetKeys } from '../fleet-key.js';
import { fsProblem } from '../fs-problem.js';
import { probeInSandbox, sandboxVisibilityFix, versionArgv } from '../sandbox-probe.js';

/** One line of `codefleet doctor`: ok, or what is wrong and how to fix it. */
export interface Check {
  ok: boolean;
  what: string;
  fix?: string;
}

/**
 * Runs every check; never throws. It opens the queue and the run store itself, one at a
 * time, so a broken data dir, queue file or store is a FAIL line with the fix, and the
 * checks after it still run.
 */
export async function doctor(loaded: LoadedConfig): Promise<Check[]> {
  const { config, env } = loaded;
  const checks: Check[] = [];
  const git = await runProcess(['git', '--version'], { cwd: '/', env: { PATH: env.PATH ?? '' }, timeoutMs: 10_000 });
  checks.push(
    git.exitCode === 0
      ? { ok: true, what: git.outputTail.trim() }
      : {
          ok: false,
          what: 'git is not available',
          fix: 'install git 2.30 or newer (Debian: apt-get install -y git; macOS: xcode-select --install)',
        },
  );
  checks.push({ ok: true, what: `config: ${loaded.source ?? 'embedded defaults (no config.yaml found)'}` });
  checks.push(await dataDirCheck(config));
  const { redisChecks } = await import('./redis-check.js');
  checks.push(...redisChecks(config));
  checks.push(await queueCheck(config));
  checks.push(fleetKeyCheck(config));
  checks.push(...(await storeCheck(config)));
  const opened = await openDoctorSandbox(loaded);
  checks.push(opened.check);
  checks.push(...(await toolchainChecks(loaded, opened.sandbox)));
  checks.push(await agentCheck(loaded, opened.sandbox));
  const keyCheck = agentKeyCheck(loaded);
  if (keyCheck) checks.push(keyCheck);
  checks.push(await forgeCheck(loaded));
  const { producerChecks } = await import('./producer-checks.js');
  checks.push(...(await producerChecks(config)));
  return checks;
}

/**
 * Each toolchain's programs (the configured commands' first words), looked up on the PATH
 * checks run with (verification.env.path included), then run once in the sandbox a run
 * gets (`--version`), with the environment checks get: a program found here can still be
 * one runs cannot start (a pyenv shim or a rustup proxy whose home is in the hidden HOME).
 * A missing or hidden one is a warning, not a failure: a worker may never see a repository
 * of that kind. Without a sandbox to run in, where the program lies is judged instead.
 */
async function toolchainChecks(loaded: LoadedConfig, sandbox: Sandbox | undefined): Promise<Check[]> {
  const { findExecutable } = await import('@codefleet/process');
  const { runEnvironment } = await import('../pipeline-deps.js');
  const { toolchains } = loaded.config.verification;
  const env = runEnvironment(loaded.env, loaded.config.verification.env);
  const hiddenBy = await staticHiddenBy(loaded);
  const checks: Check[] = [];
  for (const [name, commands] of Object.entries(toolchains)) {
    const programs = [
      ...new Set([...(name === 'node' ? ['npm'] : []), ...Object.values(commands).flatMap((argv) => argv.slice(0, 1))]),
    ];
    const missing: string[] = [];
    const hidden: string[] = [];
    for (const program of programs) {
      const found = await findExecutable(program, '/', env.PATH);
      if (found === undefined) {
        missing.push(program);
      } else if (sandbox !== undefined && sandbox.mode !== 'none') {
        const probe = await probeInSandbox(sandbox, versionArgv(program), env);
        if (!probe.ok) hidden.push(`${program} (${found}): ${probe.problem}`);
      } else if (hiddenBy(found) !== undefined || hiddenBy(await realpath(found).catch(() => found)) !== undefined) {
        hidden.push(`${program} (${found}) lies where the sandbox hides it (the worker's HOME or data directory)`);
      }
    }
    if (missing.length > 0) {
      checks.push({
        ok: true,
        what: `WARNING toolchain ${name}: ${missing.join(', ')} not found on the checks' PATH: those checks of ${name} repositories cannot start`,
        fix: `install ${missing.join(', ')}, or add its directory to verification.env.path`,
      });
    } else if (hidden.length > 0) {
      checks.push({
        ok: true,
        what: `WARNING toolchain ${name}: not usable by runs, which see only what the sandbox shows: ${hidden.join('; ')}`,
        fix: sandboxVisibilityFix,
      });
    } else {
      checks.push({
        ok: true,
        what: `toolchain ${name}: ${programs.join(', ')}${sandbox !== undefined && sandbox.mode !== 'none' ? ' (run in the sandbox)' : ''}`,
      });
    }
  }
  return checks;
}

/** Which hidden path a host path lies under, for when no sandbox could be opened to ask. */
async function staticHiddenBy(loaded: LoadedConfig): Promise<(real: string) => string | undefined> {
  const { isWithin } = await import('@codefleet/sandbox');
  const settings = sandboxSettings(loaded);
  return (real) =>
    settings.mode === 'none' || settings.readPaths.some((dir) => isWithin(dir, real))
      ? undefined
      : settings.hiddenPaths.find((dir) => isWithin(dir, real));
}

/**
 * The sandbox opens as a worker's would (bwrap is started once), and the checks after run
 * in it. `none` is not a failure when chosen, but the line says what it exposes.
 */
async function openDoctorSandbox(loaded: LoadedConfig): Promise<{ check: Check; sandbox?: Sandbox }> {
  const { openSandbox, SandboxUnavailableError } = await import('@codefleet/sandbox');
  try {
    const sandbox = await openSandbox(sandboxSettings(loaded), {
      platform: process.platform,
      path: loaded.env.PATH ?? '',
    });
    return {
      check: { ok: true, what: sandbox.mode === 'none' ? `WARNING ${sandbox.description}` : sandbox.description },
      sandbox,
    };
  } catch (err) {
    if (err instanceof SandboxUnavailableError)
      return { check: { ok: false, what: `sandbox ${err.mode}: ${err.problem}`, fix: err.fix } };
    return { check: { ok: false, what: `sandbox: ${(err as Error).message}`, fix: 'check sandbox: in config.yaml' } };
  }
}

/** GitHub: opens the forge as a worker would (a GitHub App gets an installation token). */
async function forgeCheck(loaded: LoadedConfig): Promise<Check> {
  const { forge } = loaded.config;
  if (forge.type !== 'github') return { ok: true, what: 'forge: local (no token needed)' };
  const { github } = forge;
  const useApp =
    github.app_id !== undefined && github.private_key !== undefined && github.installation_id !== undefined;
  try {
    const { openForge } = await import('../pipeline-deps.js');
    const opened = await openForge(loaded, gitEnvFrom(loaded.env));
    await opened.forge.close?.();
    return {
      ok: true,
      what: useApp
        ? `GitHub App ${github.app_id}: installation ${github.installation_id} issued a token`
        : `GitHub token found in $${github.token_env}`,
    };
  } catch (err) {
    return {
      ok: false,
      what: `forge (github): ${(err as Error).message}`,
      fix: useApp
        ? 'check forge.github.app_id, installation_id and the key in the variable forge.github.private_key_env names'
        : `export ${github.token_env}=<a token with repo scope>, or configure a GitHub App`,
    };
  }
}

async function dataDirCheck(config: Config): Promise<Check> {
  const fix = 'set data_dir in config.yaml (or CODEFLEET_DATA_DIR) to a writable directory';
  try {
    await mkdir(config.data_dir, { recursive: true });
  } catch (err) {
    return { ok: false, what: `data dir ${config.data_dir} cannot be created: ${fsProblem(err)}`, fix };
  }
  try {
    await access(config.data_dir, constants.W_OK);
    return { ok: true, what: `data dir ${config.data_dir} is writable` };
  } catch (err) {
    return { ok: false, what: `data dir ${config.data_dir} is not writable: ${fsProblem(err)}`, fix };
  }
}

/** A SQLite file that cannot be opened: what is wrong with it, and the fix. */
async function sqliteProblem(path: string, setting: string, err: unknown): Promise<{ what: string; fix: string }> {
  // The adapters wrap what the driver or the file system threw.
  const cause = (err as { cause?: unknown }).cause ?? err;
  if (/^E[A-Z]+$/.test(String((cause as { code?: unknown }).code))) {
    return {
      what: `${path} cannot be created: ${fsProblem(cause)}`,
      fix: `make ${dirname(path)} a writable directory, or set ${setting}`,
    };
  }
  // A damaged file's message names it and the damage (the run store's, which has no fix of its own here).
  const what =
    (cause as Error).name === 'SqliteDamagedError'
      ? (cause as Error).message
      : `${path} cannot be opened: ${(cause as Error).message ?? String(cause)}`;
  if (
    await stat(path).then(
      (s) => s.isDirectory(),
      () => false,
    )
  )
    return { what, fix: `${path} is a directory: set ${setting} to a file path (the file is created when missing)` };
  return {
    what,
    fix: `move ${path} aside (a new, empty one is created on the next start) or set ${setting} (if it holds data you need, restore it from a backup instead)`,
  };
}

/** A damaged queue or run store file says what and how to fix it in its details. */
function damageCheck(name: string, err: unknown): Check | undefined {
  const details = (err as { details?: { what?: unknown; fix?: unknown } }).details;
  if (typeof details?.what !== 'string' || typeof details.fix !== 'string') return undefined;
  return { ok: false, what: `${name}: ${details.what}`, fix: details.fix };
}

async function queueCheck(config: Config): Promise<Check> {
  const name = `queue (${config.queue.backend})`;
  let queue: Queue;
  try {
    queue = await openConfiguredQueue(config);
  } catch (err) {
    const damaged = damageCheck(name, err);
    if (damaged) return damaged;
    const path = localQueuePath(config);
    if (path === undefined)
      return {
        ok: false,
        what: `${name} cannot be opened: ${(err as Error).message}`,
        fix: 'check the queue section of config.yaml',
      };
    const problem = await sqliteProblem(path, 'queue.local.path', err);
    return { ok: false, what: `${name}: ${problem.what}`, fix: problem.fix };
  }
  try {
    await queue.checkStorage?.();
    const stats = await queue.stats();
    return {
      ok: true,
      what: `${name}: depth ${stats.depth}, in flight ${stats.inFlight}, dead ${stats.deadLetter}, completed ${stats.completed}`,
    };
  } catch (err) {
    const damaged = damageCheck(name, err);
    if (damaged) return damaged;
    return {
      ok: false,
      what: `${name} is not reachable: ${(err as Error).message}`,
      fix: 'check the queue section of config.yaml',
    };
  } finally {
    await queue.close().catch(() => undefined);
  }
}

/**
 * The fleet key: where it comes from and its id, never the key. Missing is a failure on a
 * fleet backend (workers refuse to start) and fine on a local queue (made at first start).
 */
function fleetKeyCheck(config: Config): Check {
  let keys: ReturnType<typeof loadFleetKeys>;
  try {
    keys = loadFleetKeys(config, { create: false });
  } catch (err) {
    return {
      ok: false,
      what: `fleet key: ${(err as Error).message}`,
      fix: 'make a new key with `codefleet init` (then share it with every host)',
    };
  }
  if ('problem' in keys) {
    return config.queue.backend === 'local'
      ? { ok: true, what: `fleet key: none yet; the first start makes ${config.signing.key_file}` }
      : {
          ok: false,
          what: 'fleet key: none (workers refuse to start, producers cannot enqueue)',
          fix: keys.problem.replace(/^no fleet key: /, ''),
        };
  }
  const { origin, previousOrigin, keyring } = keys;
  const previous =
    previousOrigin === undefined || keyring.previous === undefined
      ? ''
      : `; previous key ${keyring.previous.id} from ${describeOrigin(previousOrigin)} still verifies`;
  const what = `fleet key: ${keyring.current.id} from ${describeOrigin(origin)}${previous}`;
  if (origin.kind === 'file' && keyFileIsOpen(origin.path)) {
    return { ok: true, what: `WARNING ${what}: the file is readable by other users`, fix: `chmod 600 ${origin.path}` };
  }
  return { ok: true, what };
}

async function storeCheck(config: Config): Promise<Check[]> {
  const name = `run store (${config.store.backend})`;
  let store: RunStore;
  try {
    store = openConfiguredStore(config);
  } catch (err) {
    const damaged = damageCheck(name, err);
    if (damaged) return [damaged];
    const path = runStorePath(config);
    if (path === undefined)
      return [
        {
          ok: false,
          what: `${name} cannot be opened: ${(err as Error).message}`,
          fix: 'check the store section of config.yaml',
        },
      ];
    const problem = await sqliteProblem(path, 'data_dir', err);
    return [{ ok: false, what: `${name}: ${problem.what}`, fix: problem.fix }];
  }
  try {
    const recent = await store.list({ limit: 1 });
    const { budgetCheck } = await import('./budget-check.js');
    return [
      { ok: true, what: `${name}: ${recent.length === 0 ? 'no runs yet' : `latest run ${recent[0]!.runId}`}` },
      await budgetCheck(store, config.costs, new Date()),
    ];
  } catch (err) {
    return [
      {
        ok: false,
        what: `${name} is not reachable: ${(err as Error).message}`,
        fix: 'check store.redis_url in config.yaml (workers and the CLI must share it)',
      },
    ];
  } finally {
    await store.close().catch(() => undefined);
  }
}

async function agentCheck(loaded: LoadedConfig, sandbox: Sandbox | undefined): Promise<Check> {
  return (await defaultAgentReadiness(loaded, sandbox)) ?? ollamaCheck(loaded.config);
}

/**
 * The built-in agent's server: an Ollama that answers and has the model (OpenAI-compatible
 * endpoints are not called), and which model it is and why (`auto` picks by the host's hardware).
 */
async function ollamaCheck(config: Config): Promise<Check> {
  const { ollama } = config.agents;
  const why = ollama.model_reason === undefined ? '' : ` (${ollama.model_reason})`;
  if (ollama.provider !== 'ollama' || ollama.host === undefined) {
    return {
      ok: true,
      what: `agent: ollama on the OpenAI-compatible endpoint ${ollama.host === undefined ? '(no host)' : displayHost(ollama.host)}, model ${ollama.model}${why} (not called by doctor)`,
    };
  }
  const probe = await probeOllama({ host: ollama.host, model: ollama.model, timeoutMs: 3_000 });
  if (probe.status === 'ready')
    return {
      ok: true,
      what: `agent: ollama ${probe.version} at ${displayHost(ollama.host)} has ${ollama.model}${why}`,
    };
  if (probe.status === 'model_missing') {
    return {
      ok: false,
      what: `agent ollama: ${displayHost(ollama.host)} has no ${ollama.model}${why}`,
      fix: `ollama pull ${ollama.model}, or set agents.ollama.model (auto: qwen2.5-coder:7b with a GPU or on Apple silicon, qwen2.5-coder:1.5b on CPU only)`,
    };
  }
  return {
    ok: false,
    what: `agent ollama: ${probe.detail}`,
    fix: 'start Ollama (ollama serve), or point $OLLAMA_HOST / agents.ollama.host at it',
  };
}

/** The default agent's API key: named in config, its value only in the environment (never printed). */
function agentKeyCheck(loaded: LoadedConfig): Check | undefined {
  const name = loaded.config.agents.default;
  if (name === 'script') return undefined;
  const keyEnv = loaded.config.agents[name].api_key_env;
  if (keyEnv === undefined) return undefined;
  return loaded.env[keyEnv]
    ? { ok: true, what: `agent ${name}: API key found in $${keyEnv}` }
    : {
        ok: false,
        what: `agent ${name}: no API key in $${keyEnv}`,
        fix: `export ${keyEnv}=<key>, or set agents.${name}.api_key_env in config.yaml`,
      };
}
