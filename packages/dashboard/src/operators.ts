import { CodefleetError } from '@codefleet/core';
import { tokenMatches } from './auth.js';

/** Shortest token accepted: a generated one has 32 characters. */
const minTokenLength = 16;

/**
 * The operators who may use the dashboard, each known by a token of their own, so what one
 * does is recorded under their name. No token may belong to two of them: the journal could
 * not say who acted.
 */
export class Operators {
  private readonly entries: readonly { name: string; token: string }[];

  /** `tokens`: operator name → token. Throws `invalid_config` for a short or shared token. */
  constructor(tokens: Readonly<Record<string, string>>) {
    this.entries = Object.entries(tokens).map(([name, token]) => ({ name, token }));
    const seen = new Set<string>();
    for (const { name, token } of this.entries) {
      checkToken(name, token);
      if (seen.has(token)) throw invalidConfig(`two dashboard operators have the same token (one is ${name})`);
      seen.add(token);
    }
  }

  /** How many there are. */
  get size(): number {
    return this.entries.length;
  }

  /**
   * The operator whose token `given` is. Every token is compared, whichever matches, so the
   * time taken does not say which operator a guess came close to.
   */
  byToken(given: string | undefined): string | undefined {
    let found: string | undefined;
    for (const { name, token } of this.entries) if (tokenMatches(given, token)) found ??= name;
    return found;
  }
}

// No Host check: a proxy on the same host may pass its own Host on. A page of another site
// that rebinds its name to 127.0.0.1 is same-origin to this server, but it never has the
// session cookie (host-only) and can only guess tokens through the login form, so a token
// must be too long to guess.
function checkToken(name: string, token: string): void {
  if (token.length < minTokenLength) {
    throw invalidConfig(
      `the dashboard token of operator ${name} must be at least ${minTokenLength} characters (a web page can try tokens against a loopback dashboard); use e.g. \`openssl rand -base64 24\``,
    );
  }
}

function invalidConfig(message: string): CodefleetError {
  return new CodefleetError('invalid_config', message, { verdict: 'permanent' });
}
