import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import type { LoadedConfig } from '@codefleet/config';
import { findExecutable } from '@codefleet/process';

/** What `agents.default` runs, or why it cannot run on this host, with the fix. */
export type AgentReadiness = { ok: true; what: string } | { ok: false; what: string; fix: string };

/**
 * Whether the default agent can start here: the script agent's module is readable, a CLI
 * agent's program (or the command template's) is on PATH. The built-in agent needs a
 * server, which only `doctor` asks (`undefined` here). Cheap and without loading the
 * agents, so a worker can say so at start instead of dead-lettering every job.
 */
export async function defaultAgentReadiness(loaded: LoadedConfig): Promise<AgentReadiness | undefined> {
  const { agents } = loaded.config;
  const name = agents.default;
  if (name === 'ollama') return undefined;
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
  const binary = name === 'command' ? agents.command.argv[0] : agents[name].binary;
  if (binary === undefined) return { ok: false, what: 'agent command has no argv', fix: 'set agents.command.argv in config.yaml' };
  const found = await findExecutable(binary, process.cwd(), loaded.env.PATH);
  if (found) return { ok: true, what: `agent: ${name} → ${found}` };
  const where = name === 'command' ? 'agents.command.argv[0]' : `agents.${name}.binary`;
  return { ok: false, what: `agent ${name}: ${binary} not found on PATH`, fix: `install ${binary}, or set ${where} / agents.default in config.yaml` };
}
