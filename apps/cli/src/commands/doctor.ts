import { constants } from 'node:fs';
import { access, mkdir } from 'node:fs/promises';
import { displayHost, probeOllama } from '@codefleet/agents';
import { findExecutable, runProcess } from '@codefleet/process';
import type { Runtime } from '../runtime.js';

/** One line of `codefleet doctor`: ok, or what is wrong and how to fix it. */
export interface Check {
  ok: boolean;
  what: string;
  fix?: string;
}

/** Runs every check; never throws. */
export async function doctor(rt: Runtime): Promise<Check[]> {
  const { config, env } = rt.loaded;
  const checks: Check[] = [];
  const git = await runProcess(['git', '--version'], { cwd: '/', env: { PATH: env.PATH ?? '' }, timeoutMs: 10_000 });
  checks.push(git.exitCode === 0
    ? { ok: true, what: git.outputTail.trim() }
    : { ok: false, what: 'git is not available', fix: 'install git 2.30 or newer (Debian: apt-get install -y git; macOS: xcode-select --install)' });
  checks.push({ ok: true, what: `config: ${rt.loaded.source ?? 'embedded defaults (no config.yaml found)'}` });
  try {
    await mkdir(config.data_dir, { recursive: true });
    await access(config.data_dir, constants.W_OK);
    checks.push({ ok: true, what: `data dir ${config.data_dir} is writable` });
  } catch {
    checks.push({ ok: false, what: `data dir ${config.data_dir} is not writable`, fix: 'set data_dir in config.yaml (or CODEFLEET_DATA_DIR) to a writable directory' });
  }
  try {
    const stats = await rt.queue.stats();
    checks.push({ ok: true, what: `queue (${config.queue.backend}): depth ${stats.depth}, in flight ${stats.inFlight}, dead ${stats.deadLetter}, completed ${stats.completed}` });
  } catch (err) {
    checks.push({ ok: false, what: `queue (${config.queue.backend}) is not reachable: ${(err as Error).message}`, fix: 'check the queue section of config.yaml' });
  }
  try {
    const recent = await rt.store.list({ limit: 1 });
    checks.push({ ok: true, what: `run store (${config.store.backend}): ${recent.length === 0 ? 'no runs yet' : `latest run ${recent[0]!.runId}`}` });
  } catch (err) {
    checks.push({ ok: false, what: `run store (${config.store.backend}) is not reachable: ${(err as Error).message}`, fix: 'check store.redis_url in config.yaml (workers and the CLI must share it)' });
  }
  checks.push(await agentCheck(rt));
  const keyCheck = agentKeyCheck(rt);
  if (keyCheck) checks.push(keyCheck);
  if (config.forge.type === 'github') {
    checks.push(config.forge.github.token
      ? { ok: true, what: `GitHub token found in $${config.forge.github.token_env}` }
      : { ok: false, what: `no GitHub token in $${config.forge.github.token_env}`, fix: `export ${config.forge.github.token_env}=<a token with repo scope>` });
  } else {
    checks.push({ ok: true, what: 'forge: local (no token needed)' });
  }
  return checks;
}

async function agentCheck(rt: Runtime): Promise<Check> {
  const { agents } = rt.config;
  const name = agents.default;
  if (name === 'script') {
    const module = agents.script.module;
    if (!module) return { ok: false, what: 'agent "script" has no module', fix: 'set agents.script.module in config.yaml, or choose a real agent in agents.default' };
    try {
      await access(module, constants.R_OK);
      return { ok: true, what: `agent: script ${module} (scripted, no model)` };
    } catch {
      return { ok: false, what: `agent script ${module} not found`, fix: 'fix agents.script.module' };
    }
  }
  if (name === 'ollama') return ollamaCheck(rt);
  const binary = name === 'command' ? agents.command.argv[0] : agents[name].binary;
  if (binary === undefined) return { ok: false, what: 'agent command has no argv', fix: 'set agents.command.argv in config.yaml' };
  const found = await findExecutable(binary, process.cwd(), rt.loaded.env.PATH);
  return found
    ? { ok: true, what: `agent: ${name} → ${found}` }
    : { ok: false, what: `agent ${name}: ${binary} not found on PATH`, fix: `install ${binary}, or set agents.${name}.binary / agents.default in config.yaml` };
}

/** The built-in agent's server: an Ollama that answers and has the model (OpenAI-compatible endpoints are not called). */
async function ollamaCheck(rt: Runtime): Promise<Check> {
  const { ollama } = rt.config.agents;
  if (ollama.provider !== 'ollama' || ollama.host === undefined) {
    return { ok: true, what: `agent: ollama on the OpenAI-compatible endpoint ${ollama.host === undefined ? '(no host)' : displayHost(ollama.host)}, model ${ollama.model} (not called by doctor)` };
  }
  const probe = await probeOllama({ host: ollama.host, model: ollama.model, timeoutMs: 3_000 });
  if (probe.status === 'ready') return { ok: true, what: `agent: ollama ${probe.version} at ${displayHost(ollama.host)} has ${ollama.model}` };
  if (probe.status === 'model_missing') {
    return { ok: false, what: `agent ollama: ${displayHost(ollama.host)} has no ${ollama.model}`, fix: `ollama pull ${ollama.model}, or set agents.ollama.model (qwen2.5-coder:1.5b on CPU-only hosts)` };
  }
  return { ok: false, what: `agent ollama: ${probe.detail}`, fix: 'start Ollama (ollama serve), or point $OLLAMA_HOST / agents.ollama.host at it' };
}

/** The default agent's API key: named in config, its value only in the environment (never printed). */
function agentKeyCheck(rt: Runtime): Check | undefined {
  const name = rt.config.agents.default;
  if (name === 'script') return undefined;
  const keyEnv = rt.config.agents[name].api_key_env;
  if (keyEnv === undefined) return undefined;
  return rt.loaded.env[keyEnv]
    ? { ok: true, what: `agent ${name}: API key found in $${keyEnv}` }
    : { ok: false, what: `agent ${name}: no API key in $${keyEnv}`, fix: `export ${keyEnv}=<key>, or set agents.${name}.api_key_env in config.yaml` };
}
