import { isIP } from 'node:net';
import { AGENT_NAMES, type AgentName, type Config } from '@codefleet/config';

/**
 * True when `url` points at a model server on this host or this network: loopback
 * (127.0.0.0/8, ::1, `localhost`, `*.localhost`, 0.0.0.0), a private address (10/8,
 * 172.16/12, 192.168/16, fc00::/7), link-local (169.254/16, fe80::/10), an mDNS name
 * (`*.local`), or a host the operator listed in `router.local_hosts`. Names are not resolved:
 * a DNS answer can change between this check and the request, so a name counts only when
 * it is listed. Anything unparsable is not local.
 */
export function isLocalEndpoint(url: string, localHosts: readonly string[] = []): boolean {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return false;
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return false;
  const host = parsed.hostname
    .toLowerCase()
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '');
  if (host === '') return false;
  const listed = localHosts.map((h) => h.toLowerCase().replace(/\.$/, ''));
  if (listed.includes(host) || listed.includes(parsed.host.toLowerCase())) return true;
  if (host === 'localhost' || host.endsWith('.localhost') || host.endsWith('.local')) return true;
  switch (isIP(host)) {
    case 4:
      return isLocalIpv4(host);
    case 6:
      return isLocalIpv6(host);
    default:
      return false;
  }
}

function isLocalIpv4(address: string): boolean {
  const [a = -1, b = -1] = address.split('.').map(Number);
  return (
    a === 127 ||
    a === 10 ||
    (a === 172 && b >= 16 && b <= 31) ||
    (a === 192 && b === 168) ||
    (a === 169 && b === 254) ||
    address === '0.0.0.0'
  );
}

function isLocalIpv6(address: string): boolean {
  if (address === '::1' || address === '::') return true;
  // IPv4-mapped (::ffff:10.0.0.1, which URL writes as ::ffff:a00:1): the IPv4 address decides.
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(address);
  if (mapped) {
    const high = Number.parseInt(mapped[1] ?? '0', 16);
    const low = Number.parseInt(mapped[2] ?? '0', 16);
    return isLocalIpv4(`${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`);
  }
  const first = Number.parseInt(address.split(':')[0] || '0', 16);
  // fc00::/7 (unique local) and fe80::/10 (link-local).
  return (first & 0xfe00) === 0xfc00 || (first & 0xffc0) === 0xfe80;
}

/** Whether an agent (or agents.profiles entry) runs on a local model, and why not when not. */
export type AgentLocality =
  { local: true; agent: AgentName; model?: string } | { local: false; agent?: AgentName; reason: string };

/** Aider's Ollama default when `OLLAMA_API_BASE` is unset (LiteLLM's). */
const aiderOllamaDefault = 'http://localhost:11434';

/**
 * Where the agent `name` (an agent or an agents.profiles name) sends its prompts: the
 * built-in `ollama` agent on a local host, aider with an `ollama/` or `ollama_chat/` model
 * and a local `OLLAMA_API_BASE` (from `env`, the environment the config was loaded with), and
 * `script` (no model) are local; claude, codex and gemini are cloud services, and `command`
 * runs a CLI whose model nobody here can see, so it does not count as local either.
 */
export function agentLocality(
  name: string,
  config: Pick<Config, 'agents' | 'router'>,
  env: Readonly<Record<string, string>> = {},
): AgentLocality {
  const profile = config.agents.profiles[name];
  const agent =
    profile?.agent ?? ((AGENT_NAMES as readonly string[]).find((known) => known === name) as AgentName | undefined);
  if (agent === undefined) return { local: false, reason: `"${name}" names no agent or agents.profiles entry` };
  const localHosts = config.router.local_hosts;
  switch (agent) {
    case 'script':
      return { local: true, agent };
    case 'ollama': {
      const host = config.agents.ollama.host;
      const model = profile?.model ?? config.agents.ollama.model;
      if (host === undefined || !isLocalEndpoint(host, localHosts)) {
        return {
          local: false,
          agent,
          reason: `the ${name} agent's model server (agents.ollama.host) is not a local host`,
        };
      }
      return { local: true, agent, model };
    }
    case 'aider': {
      const model = profile?.model ?? config.agents.aider.model;
      if (!/^ollama(_chat)?\//.test(model))
        return { local: false, agent, reason: `the ${name} agent's model ${model} is not an Ollama model` };
      const base = env.OLLAMA_API_BASE ?? aiderOllamaDefault;
      if (!isLocalEndpoint(base, localHosts))
        return { local: false, agent, reason: `the ${name} agent's Ollama (OLLAMA_API_BASE) is not a local host` };
      return { local: true, agent, model };
    }
    case 'command':
      return { local: false, agent, reason: `the ${name} agent runs a command whose model cannot be checked` };
    default:
      return { local: false, agent, reason: `the ${name} agent (${agent}) runs on a cloud model` };
  }
}
