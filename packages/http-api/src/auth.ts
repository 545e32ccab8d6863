import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * True when the `Authorization` header is `Bearer <token>`. Both sides are hashed first so
 * the comparison is constant-time whatever the lengths: neither the token's length nor a
 * matching prefix shows in how long a refusal takes.
 */
export function bearerMatches(header: string | undefined, token: string): boolean {
  if (header === undefined || token === '') return false;
  const match = /^Bearer +(\S+)\s*$/i.exec(header);
  if (match === null) return false;
  const digest = (value: string) => createHash('sha256').update(value).digest();
  return timingSafeEqual(digest(match[1] ?? ''), digest(token));
}
