import { createHmac, timingSafeEqual } from 'node:crypto';

/** The signature header of a completion webhook: `sha256=` and the hex HMAC-SHA256 of `<timestamp>.<body>`. */
export function signCallback(secret: string, timestamp: number, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

/** Options of {@link verifyCallback}. */
export interface VerifyCallbackOptions {
  secret: string;
  /** The raw request body, exactly as received. */
  body: string;
  /** `X-Codefleet-Timestamp`: seconds since the epoch. */
  timestamp: string | undefined;
  /** `X-Codefleet-Signature`. */
  signature: string | undefined;
  /** Seconds since the epoch now; default the clock. */
  nowSeconds?: number;
  /** Oldest accepted timestamp, in seconds before now; default 300. */
  toleranceSeconds?: number;
}

/**
 * What a receiver does with a completion webhook (exported for receivers written in
 * TypeScript and for the tests): recompute the HMAC over `<timestamp>.<body>`, compare in
 * constant time, and refuse a timestamp outside the window so a captured request cannot be
 * replayed later. Dedupe on `X-Codefleet-Event-Id` besides: a retry after a lost answer
 * carries the same event id.
 */
export function verifyCallback(options: VerifyCallbackOptions): boolean {
  const { secret, body, timestamp, signature } = options;
  if (timestamp === undefined || signature === undefined || !/^\d{1,12}$/.test(timestamp)) return false;
  const now = options.nowSeconds ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - Number(timestamp)) > (options.toleranceSeconds ?? 300)) return false;
  const expected = Buffer.from(signCallback(secret, Number(timestamp), body));
  const given = Buffer.from(signature);
  return given.length === expected.length && timingSafeEqual(given, expected);
}
