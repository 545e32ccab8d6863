import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';

/** Debian's bundle of the CAs the system trusts (a TLS-inspecting egress's among them). */
const systemCa = '/etc/ssl/certs/ca-certificates.crt';

/**
 * The registry and CA this host's npm works with, as variables for a run or a worker's
 * verify environment. A sandboxed run has a fresh HOME, so it sees none of the host's user
 * npmrc, and a Node build without a global npmrc of its own (CI's Node 22 and 24) knows no
 * `cafile`: behind a TLS-inspecting egress npm inside the run would fail, as an operator's
 * would until they pass these on (verification.env.pass). The CA falls back to
 * NODE_EXTRA_CA_CERTS, then to the system bundle.
 */
export function hostNpmEnv(): Record<string, string> {
  const vars: Record<string, string> = {};
  const registry = npmConfig('registry');
  if (registry !== undefined) vars.npm_config_registry = registry;
  const cafile =
    npmConfig('cafile') ?? process.env.NODE_EXTRA_CA_CERTS ?? (existsSync(systemCa) ? systemCa : undefined);
  if (cafile !== undefined) vars.npm_config_cafile = cafile;
  if (process.env.NODE_EXTRA_CA_CERTS !== undefined) vars.NODE_EXTRA_CA_CERTS = process.env.NODE_EXTRA_CA_CERTS;
  return vars;
}

/** One npm setting as the host's npm reads it, or undefined when unset. */
function npmConfig(key: string): string | undefined {
  // Outside any workspace (`npm config` refuses to run inside one), with the host's env.
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !/^npm_config_workspaces?$/i.test(name)),
  );
  const value = execFileSync('npm', ['config', 'get', key], {
    cwd: tmpdir(),
    encoding: 'utf8',
    env,
    timeout: 60_000,
  }).trim();
  return value === '' || value === 'null' || value === 'undefined' ? undefined : value;
}
