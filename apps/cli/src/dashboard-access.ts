import { join } from 'node:path';
import type { Config } from '@codefleet/config';
import { CodefleetError } from '@codefleet/core';
import { createSecretFile, readSecretFile } from './secret-file.js';

/** Who may use the dashboard, as `createDashboard` takes it, and what to say about it at start. */
export interface DashboardAccess {
  /** Operator name → token: the shared token (under `token_operator`) and each named operator's. */
  operators: Record<string, string>;
  trustedProxy?: { header: string; from: string[] };
  /** Lines for the terminal saying where each way in comes from; never a token. */
  lines: string[];
}

/** As short as a token may be (the dashboard refuses shorter ones too). */
const minTokenLength = 16;

/**
 * The dashboard's ways in, from `dashboard:`: each operator's token (from the variable the
 * config names for them; one that is unset stops the start, naming it), the trusted proxy,
 * and the shared token, from `token_env`. With none of these, a token is generated once
 * into `<data_dir>/dashboard-token` (mode 0600) and reused at every start, so a restart
 * does not change it; the terminal is told where to read it, never the token itself, since
 * a service's output ends up in its logs.
 */
export function dashboardAccess(config: Config, generateToken: () => string): DashboardAccess {
  const section = config.dashboard;
  const operators: Record<string, string> = {};
  const lines: string[] = [];
  for (const [name, variable] of Object.entries(section.operators)) {
    const token = section.operator_tokens[name];
    if (token === undefined)
      throw new CodefleetError(
        'invalid_config',
        `dashboard.operators.${name}: $${variable} is not set; set it to that operator's token (at least ${minTokenLength} characters), or remove the operator`,
        { verdict: 'permanent' },
      );
    operators[name] = token;
  }
  if (Object.keys(operators).length > 0) lines.push(`dashboard operators: ${Object.keys(operators).join(', ')}`);
  const proxy = section.trusted_proxy;
  if (proxy !== undefined)
    lines.push(`dashboard operators named by the ${proxy.header} header of requests from ${proxy.from.join(', ')}`);
  const shared = sharedToken(config, generateToken, Object.keys(operators).length > 0 || proxy !== undefined);
  if (shared !== undefined) {
    operators[section.token_operator] = shared.token;
    lines.push(shared.line);
  }
  return { operators, ...(proxy === undefined ? {} : { trustedProxy: proxy }), lines };
}

/**
 * The shared token: the variable's value; else, when nothing else lets anyone in, the one
 * kept in the token file (made now if missing). With operators or a proxy and no variable,
 * there is none: every action then has a name.
 */
function sharedToken(
  config: Config,
  generateToken: () => string,
  othersLetIn: boolean,
): { token: string; line: string } | undefined {
  const section = config.dashboard;
  if (section.token !== undefined)
    return { token: section.token, line: `dashboard token: the value of $${section.token_env}` };
  if (othersLetIn) return undefined;
  // On this host, with the rest of its state.
  const path = join(config.data_dir, 'dashboard-token');
  const what = 'the dashboard token file';
  const kept = readSecretFile(path, what);
  const made = kept === undefined ? createSecretFile(path, `${generateToken()}\n`, what) : undefined;
  const token = (kept ?? made?.text ?? '').trim();
  if (token.length < minTokenLength)
    throw new CodefleetError(
      'invalid_config',
      `${what} ${path} holds no usable token (at least ${minTokenLength} characters); delete it to have one made, or set $${section.token_env}`,
      { verdict: 'permanent' },
    );
  const fresh = made?.created === true ? 'generated now and kept' : 'generated at the first start, kept';
  return {
    token,
    line: `dashboard token: ${fresh} in ${path} (read it with: cat ${path}; set $${section.token_env} to choose one)`,
  };
}
