import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** Name of the session cookie the login form sets. */
export const sessionCookie = 'codefleet_dashboard';

/**
 * True when `given` is the token. Both sides are hashed first, so the comparison takes the
 * same time whatever the lengths and however long a matching prefix is.
 */
export function tokenMatches(given: string | undefined, token: string): boolean {
  if (given === undefined || given === '' || token === '') return false;
  const digest = (value: string) => createHash('sha256').update(value).digest();
  return timingSafeEqual(digest(given), digest(token));
}

/** The token of an `Authorization: Bearer <token>` header. */
export function bearerOf(header: string | undefined): string | undefined {
  const match = header === undefined ? null : /^Bearer +(\S+)\s*$/i.exec(header);
  return match?.[1];
}

/**
 * A value derived from the token for one `purpose` (the session cookie, the form token):
 * neither reveals the token, both change when it does, and a restart with the same token
 * keeps sessions without any state kept on the server.
 */
export function derive(token: string, purpose: 'session' | 'csrf'): string {
  return createHmac('sha256', token).update(`codefleet-dashboard:${purpose}`).digest('base64url');
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

/** A fresh token for a dashboard started without one configured: 192 random bits. */
export function generateToken(): string {
  return randomBytes(24).toString('base64url');
}
