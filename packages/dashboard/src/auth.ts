import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** Name of the session cookie the login form sets. */
export const sessionCookie = 'codefleet_dashboard';

/**
 * True when `given` is the token. Both sides are hashed first, so the comparison takes the
 * same time whatever the lengths and however long a matching prefix is.
 */
export function tokenMatches(given: string | undefined, token: string): boolean {
  if (given === undefined || given === '' || token === '') return false;
  return timingSafeEqual(sha256(given), sha256(token));
}

/** SHA-256 of `text`. */
export function sha256(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/** The token of an `Authorization: Bearer <token>` header. */
export function bearerOf(header: string | undefined): string | undefined {
  const match = header === undefined ? null : /^Bearer +(\S+)\s*$/i.exec(header);
  return match?.[1];
}

/** The value of cookie `name` in a `Cookie` header. */
export function cookieOf(header: string | undefined, name: string): string | undefined {
  if (header === undefined) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** `bytes` random bytes in base64url: 32 (256 bits) for session ids and form tokens. */
export function randomSecret(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

/** A fresh token for a dashboard started without one configured: 192 random bits. */
export function generateToken(): string {
  return randomSecret(24);
}
