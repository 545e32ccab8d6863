import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import { AGENT_NAMES, type LoadedConfig } from '@codefleet/config';
import { findExecutable } from '@codefleet/process';
import type { Sandbox } from '@codefleet/sandbox';
import { probeInSandbox } from './sandbox-probe.js';

/** What an agent runs, or why it cannot run on this host, with the fix. */
export type AgentReadiness = { ok: true; what: string } | { ok: false; what: string; fix: string };

/**
 * Whether the default agent can start here: see {@link agentReadiness}. Cheap and without
 * loading the agents, so a worker can say so at start instead of dead-lettering every job.
 */
export async function defaultAgentReadiness(
  loaded: LoadedConfig,
  sandbox?: Sandbox,
): Promise<AgentReadiness | undefined> {
  // A job that names no agent runs the escalation chain when there is one.
  return agentReadiness(
    loaded,
    loaded.config.agents.escalation.length > 0 ? 'escalation' : loaded.config.agents.default,
    sandbox,
  );
}

/**
 * Whether agent `name` (an agent, an `agents.profiles` entry or an escalation chain, each of
 * whose tiers must) can start here: the script
 * agent's module is readable, a CLI agent's program (or the command template's) is on PATH,
 * the built-in agent has a model and a host. Whether that host answers and has the model is
 * only asked by `doctor` (`undefined` here): a network call does not belong in `enqueue`.
 * Given the sandbox runs get, a CLI agent's program must also start in it (see
 * {@link sandboxProblem}): one only the host's HOME holds would fail every run.
 */
export async function agentReadiness(
  loaded: LoadedConfig,
  name: string,
  sandbox?: Sandbox,
): Promise<AgentReadiness | undefined> {
  const { agents } = loaded.config;
  const chain = name === 'escalation' ? agents.escalation : agents.chains[name];
  if (chain !== undefined && chain.length > 0) {
    // Every tier must be able to start: the last one is the one a hard task ends up on.
    const tiers = await Promise.all(chain.map((tier) => agentReadiness(loaded, tier, sandbox)));
    const broken = tiers.find((tier) => tier !== undefined && !tier.ok);
    if (broken !== undefined) return { ...broken, what: `escalation chain ${name}: ${broken.what}` };
    return { ok: true, what: `escalation chain ${name}: ${chain.join(' → ')}` };
  }
  const profile = agents.profiles[name];
  if (profile !== undefined) {
    const readiness = await agentReadiness(loaded, profile.agent, sandbox);
    return readiness && { ...readiness, what: `profile ${name}: ${readiness.what}` };
  }
  if (!(AGENT_NAMES as readonly string[]).includes(name)) {
    return {
      ok: false,
      what: `agent "${name}" is neither an agent nor a profile`,
      fix: `use one of ${AGENT_NAMES.join(', ')}, or define agents.profiles.${name} in config.yaml`,
    };
  }
  if (name === 'ollama') {
    const { host, model } = agents.ollama;
    if (!host)
      return {
        ok: false,
        what: 'agent ollama has no host',
        fix: 'set agents.ollama.host in config.yaml (the openai provider has no default host)',
      };
    if (!model) return { ok: false, what: 'agent ollama has no model', fix: 'set agents.ollama.model in config.yaml' };
    return undefined;
  }
  if (name === 'script') {
    const module = agents.script.module;
    if (!module)
      return {
        ok: false,
        what: 'agent "script" has no module',
        fix: 'set agents.script.module in config.yaml, or choose a real agent in agents.default (e.g. CODEFLEET_AGENT=claude)',
      };
    try {
      await access(module, constants.R_OK);
      return { ok: true, what: `agent: script ${module} (scripted, no model)` };
    } catch {
      return { ok: false, what: `agent script ${module} not found`, fix: 'fix agents.script.module in config.yaml' };
    }
  }
  const agent = name as Exclude<(typeof AGENT_NAMES)[number], 'ollama' | 'script'>;
  const binary = agent === 'command' ? agents.command.argv[0] : agents[agent].binary;
  if (binary === undefined)
    return { ok: false, what: 'agent command has no argv', fix: 'set agents.command.argv in config.yaml' };
  // Runs get agents.env.path in front of PATH: the program may live there.
  const path = [...agents.env.path, ...(loaded.env.PATH ? [loaded.env.PATH] : [])].join(':');
  const found = await findExecutable(binary, process.cwd(), path);
  const where = agent === 'command' ? 'agents.command.argv[0]' : `agents.${agent}.binary`;
  if (found) {
    const problem =
      sandbox === undefined
        ? undefined
        : await sandboxProblem(loaded, sandbox, agent === 'command' ? ['test', '-x', found] : [found, '--version']);
    if (problem === undefined) return { ok: true, what: `agent: ${name} → ${found}` };
    return {
      ok: false,
      what: `agent ${name}: ${found} is on this host, but runs cannot start it in the sandbox (${problem})`,
      fix: `install ${binary} system-wide (under /usr, /usr/local or /opt), or add its directory and what it needs (e.g. the Node it runs on) to sandbox.read_paths, or set ${where} to one the sandbox shows`,
    };
  }
  return {
    ok: false,
    what: `agent ${name}: ${binary} not found on PATH`,
    fix: `install ${binary}, or set ${where} / agents.default in config.yaml`,
  };
}

/**
 * Why `argv` does not run in the sandbox runs get, with the environment agents get; none
 * for `sandbox.mode: none` or `container`. A CLI agent's `--version` is harmless; a command agent's
 * program is not run, only looked at from inside (`test -x`).
 */
async function sandboxProblem(loaded: LoadedConfig, sandbox: Sandbox, argv: string[]): Promise<string | undefined> {
  // A container runs the image's programs, not the host's: what the host found says nothing there.
  if (sandbox.mode === 'none' || sandbox.mode === 'container') return undefined;
  const { runEnvironment } = await import('./pipeline-deps.js');
  const probe = await probeInSandbox(sandbox, argv, runEnvironment(loaded.env, loaded.config.agents.env));
  if (probe.ok) return undefined;
  return argv[0] === 'test' ? `the sandbox does not show ${argv[2] ?? ''}` : probe.problem;
}
