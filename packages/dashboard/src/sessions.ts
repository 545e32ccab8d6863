import { randomSecret, sha256 } from './auth.js';

/** A login: who, the form token its pages carry, and when it ends. */
export interface Session {
  operator: string;
  csrf: string;
  /** Epoch ms; the session is gone from then on, whatever it does meanwhile. */
  expiresAt: number;
  /** Names the session without being its id (live streams are counted per session). */
  key: string;
}

/** Options of {@link Sessions}. */
export interface SessionOptions {
  /** How long a login lasts from the moment it was made. */
  ttlMs: number;
  /** Sessions kept at once; the oldest goes first when a login would pass it. */
  max: number;
  now: () => number;
}

/**
 * Logins, kept in this process: a random id of 256 bits in the cookie, nothing derived from
 * a token, so logging out ends a session for good and a stolen cookie dies with its expiry.
 * The map is keyed by the id's hash, so not even this process's memory holds a usable id.
 * A restart ends every session (the operators log in again).
 */
export class Sessions {
  private readonly byKey = new Map<string, Session>();

  constructor(private readonly options: SessionOptions) {}

  /** A new session for `operator`; its id goes in the cookie, and only there. */
  open(operator: string): { id: string; session: Session } {
    const now = this.options.now();
    this.sweep(now);
    // Map order is insertion order: the first key is the oldest login.
    while (this.byKey.size >= this.options.max) this.byKey.delete(this.byKey.keys().next().value as string);
    const id = randomSecret();
    const session = { operator, csrf: randomSecret(), expiresAt: now + this.options.ttlMs, key: keyOf(id) };
    this.byKey.set(session.key, session);
    return { id, session };
  }

  /** The live session of cookie value `id`, if any. */
  find(id: string | undefined): Session | undefined {
    if (id === undefined || id === '') return undefined;
    const key = keyOf(id);
    const session = this.byKey.get(key);
    if (session === undefined) return undefined;
    if (session.expiresAt > this.options.now()) return session;
    this.byKey.delete(key);
    return undefined;
  }

  /** Ends the session of cookie value `id`. */
  close(id: string | undefined): void {
    if (id !== undefined) this.byKey.delete(keyOf(id));
  }

  private sweep(now: number): void {
    for (const [key, session] of this.byKey) if (session.expiresAt <= now) this.byKey.delete(key);
  }
}

function keyOf(id: string): string {
  return sha256(id).toString('base64url');
}
