import { CodefleetError } from './errors.js';
import { redactUrlCredentials } from './text.js';

/**
 * Redis error replies that no reconnect cures, by the code that starts them: the server
 * wants a password the URL lacks, refuses the one given, or the ACL user lacks a command
 * or key. ioredis would otherwise reconnect forever, and a caller would see only a timeout
 * ("not reachable") or nothing at all.
 */
const refusals = {
  NOAUTH: 'wants a password and the URL has none: put the user and password in',
  WRONGPASS: 'refused the user or password: check the user and password in',
  NOPERM:
    'refused a command to this user: give the ACL user the commands and keys codefleet needs (see docs/operations.md), or fix the user in',
} as const;

/** The Redis reply code of an error from ioredis, when it is one of the refusals above. */
export function redisRefusalCode(error: unknown): keyof typeof refusals | undefined {
  const message = error instanceof Error ? error.message : undefined;
  // ioredis reports a failed ready check as "Ready check failed: NOAUTH …".
  const code = message?.replace(/^Ready check failed: /, '').split(' ', 1)[0];
  return code !== undefined && Object.hasOwn(refusals, code) ? (code as keyof typeof refusals) : undefined;
}

/**
 * A refusal as a permanent `queue_unavailable` or `store_unavailable` error naming the
 * setting to fix; `undefined` for any other error. `where` is `host:port`, never the URL.
 */
export function redisRefusalError(
  error: unknown,
  options: { code: 'queue_unavailable' | 'store_unavailable'; where: string; setting: string },
): CodefleetError | undefined {
  const refusal = redisRefusalCode(error);
  if (refusal === undefined) return undefined;
  // No cause: ioredis keeps the AUTH command, password included, on the error.
  return new CodefleetError(
    options.code,
    `Redis at ${options.where} ${refusals[refusal]} ${options.setting} (${refusal})`,
    { verdict: 'permanent' },
  );
}

/** `host:port` of a Redis URL for messages: never its credentials. */
export function redisWhere(url: string): string {
  try {
    const { hostname, port } = new URL(url);
    return `${hostname}:${port === '' ? '6379' : port}`;
  } catch {
    return redactUrlCredentials(url);
  }
}
