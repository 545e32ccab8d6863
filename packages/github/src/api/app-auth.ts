import { sign } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { CodefleetError } from '@codefleet/core';
import { githubSignal, noAnswerReason } from './outbound.js';

/** Where the GitHub forge gets its token: fixed (a PAT) or refreshed (a GitHub App). */
export interface TokenSource {
  /** A token valid for at least a few minutes more. */
  token(): Promise<string>;
  /** Stops background refreshing, if any. */
  close(): void;
  /**
   * GitHub refused `token` (401: revoked, or minted against a skewed clock): forget it, so
   * the next {@link token} is a fresh one. True when a fresh one can be had, which is worth
   * one more try; false for a fixed token (absent means the same).
   */
  refused?(token: string): boolean;
}

/** A fixed token, e.g. a personal access token: a refused one stays refused. */
export function staticToken(token: string): TokenSource {
  return { token: async () => token, close: () => undefined, refused: () => false };
}

/** Settings of {@link githubAppTokens}. */
export interface GithubAppAuth {
  appId: number;
  /** The App's private key (PEM), from the environment. */
  privateKey: string;
  installationId: number;
  /** REST API base, e.g. `https://api.github.com`. */
  apiUrl: string;
  /**
   * A file (written 0600) that always holds the current installation token, for git's
   * credential helper: git runs as a child process and cannot ask this process.
   */
  tokenFile?: string;
  /**
   * Told every installation token the moment it is minted, before anything else sees it:
   * pass the process's `SecretRegistry` (@codefleet/log) so logs, run records and comments
   * mask the token even where it matches no known token shape.
   */
  secrets?: { add(value: string): void };
  now?: () => number;
}

const b64url = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');

/**
 * Installation tokens of a GitHub App: a JWT signed with the App's key (RS256, valid 9
 * minutes, `iat` backdated a minute for clock drift) is exchanged for an installation
 * token, cached until 5 minutes before it expires (GitHub: one hour), and refreshed in the
 * background every 10 minutes so the token file never goes stale between jobs. A token
 * GitHub refuses before then is dropped on {@link TokenSource.refused}; the next call mints
 * another.
 */
export function githubAppTokens(auth: GithubAppAuth): TokenSource {
  const now = auth.now ?? Date.now;
  let cached: { token: string; expiresAt: number } | undefined;
  let pending: Promise<string> | undefined;

  const jwt = () => {
    const seconds = Math.floor(now() / 1_000);
    const unsigned = `${b64url({ alg: 'RS256', typ: 'JWT' })}.${b64url({ iat: seconds - 60, exp: seconds + 540, iss: String(auth.appId) })}`;
    let signature: Buffer;
    try {
      signature = sign('RSA-SHA256', Buffer.from(unsigned), auth.privateKey);
    } catch (error) {
      throw new CodefleetError(
        'invalid_config',
        `the GitHub App private key cannot sign: ${(error as Error).message}`,
        { verdict: 'permanent' },
      );
    }
    return `${unsigned}.${signature.toString('base64url')}`;
  };

  const refresh = async (): Promise<string> => {
    const url = `${auth.apiUrl.replace(/\/+$/, '')}/app/installations/${auth.installationId}/access_tokens`;
    const response = await exchange(url, jwt());
    const body = (await response.json()) as { token?: string; expires_at?: string };
    if (typeof body.token !== 'string')
      throw new CodefleetError('forge_rejected', 'GitHub App token exchange returned no token');
    auth.secrets?.add(body.token);
    const expiresAt = Date.parse(body.expires_at ?? '') || now() + 3_600_000;
    cached = { token: body.token, expiresAt };
    if (auth.tokenFile !== undefined) writeFileSync(auth.tokenFile, body.token, { mode: 0o600 });
    return body.token;
  };

  const token = async () => {
    if (cached && cached.expiresAt - now() > 5 * 60_000) return cached.token;
    pending ??= refresh().finally(() => {
      pending = undefined;
    });
    return pending;
  };
  const timer = setInterval(() => {
    if (cached && cached.expiresAt - now() > 30 * 60_000) return;
    cached = undefined;
    void token().catch(() => undefined);
  }, 10 * 60_000);
  timer.unref();
  const refused = (used: string) => {
    // Another caller may have replaced it already: then the cached one is the fresh one.
    if (cached?.token === used) cached = undefined;
    return true;
  };
  return { token, close: () => clearInterval(timer), refused };
}

/** POSTs the App's JWT for an installation token; resolves GitHub's 2xx answer. */
async function exchange(url: string, signed: string): Promise<Response> {
  let response: Response;
  try {
    response = await fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${signed}`, accept: 'application/vnd.github+json', 'user-agent': 'codefleet' },
      signal: githubSignal(),
    });
  } catch (error) {
    throw new CodefleetError('network', `GitHub App token exchange failed: ${noAnswerReason(error)}`, {
      verdict: 'transient',
      cause: error,
    });
  }
  if (!response.ok) {
    const text = (await response.text()).slice(0, 300);
    throw new CodefleetError(
      response.status >= 500 ? 'forge_unavailable' : 'forge_rejected',
      `GitHub App token exchange: ${response.status} ${text}`,
      { verdict: response.status >= 500 || response.status === 429 ? 'transient' : 'permanent' },
    );
  }
  return response;
}
