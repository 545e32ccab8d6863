import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * True when `signature` (the `x-line-signature` header) is the base64 HMAC-SHA256 of the raw
 * request body keyed with the channel secret. The comparison is on the decoded bytes and
 * timing-safe, so a forger learns nothing from how long a refusal took; the body must be the
 * bytes as received, since re-serialised JSON would not match.
 */
export function verifyLineSignature(channelSecret: string, rawBody: Buffer, signature: string | undefined): boolean {
  if (signature === undefined || signature === '' || channelSecret === '') return false;
  const expected = createHmac('sha256', channelSecret).update(rawBody).digest();
  const given = Buffer.from(signature, 'base64');
  return given.length === expected.length && timingSafeEqual(given, expected);
}
