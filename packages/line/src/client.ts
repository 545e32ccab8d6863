import { createHash } from 'node:crypto';
import { CodefleetError, graphemePrefix, RateLimitedError } from '@codefleet/core';
import { checkedLineOutbound, lineRequestSignal } from './outbound.js';

/**
 * The two Messaging API calls codefleet makes, written here instead of taken from
 * `@line/bot-sdk`: its releases from 11.0.1 on require Node 22 (codefleet supports 20.19)
 * and 11.0.0 lacks a path-traversal fix, while two JSON POSTs need no SDK.
 */
export interface LineClient {
  /** Answers a webhook event with its reply token (single use, valid about a minute; free of quota). */
  reply(replyToken: string, texts: string[]): Promise<void>;
  /**
   * Sends to a user, group or room at any time; counts against the channel's monthly
   * message quota. `retryKey` (a UUID) makes a retried push a no-op once one was accepted:
   * LINE's 409 for an accepted key resolves like a 200.
   */
  push(to: string, texts: string[], retryKey: string, signal?: AbortSignal): Promise<void>;
}

/** Options of {@link createLineClient}. */
export interface LineClientOptions {
  /** Messaging API base URL (`line.api_url`). */
  apiUrl: string;
  accessToken: string;
  fetch?: typeof fetch;
  /** Per request; default LINE's outbound policy (outbound.ts). */
  timeoutMs?: number;
}

/** LINE's limit on one text message, in characters. */
export const maxLineTextChars = 5_000;
/** Messages in one reply or push. */
export const maxLineMessages = 5;

/**
 * The retry key of one push: a UUID derived from `parts` (job id and report kind), so the
 * same report pushed again, from any worker, carries the same key and LINE sends it once.
 */
export function retryKeyOf(...parts: string[]): string {
  const hex = createHash('sha256').update(parts.join('\u0000')).digest('hex');
  // Shaped as a name-based UUID (version 5 bits, RFC 4122 variant): LINE wants a UUID.
  const variant = ((parseInt(hex.slice(16, 17), 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** True for the error of a push refused because the channel's monthly quota is used up. */
export function isQuotaExhausted(error: unknown): boolean {
  const e = error as { code?: unknown; details?: { quota?: unknown } } | undefined;
  return e?.code === 'forge_rejected' && e.details?.quota === true;
}

/** Maps a Messaging API answer to a CodefleetError, in one place. */
function failure(call: string, status: number, message: string, retryAfter: string | null): CodefleetError {
  const details = { call, status };
  const what = `LINE ${call} answered ${status}: ${message.slice(0, 300)}`;
  if (status === 429 && /monthly limit/i.test(message)) {
    // Waiting does not help until the month turns (or the plan changes): permanent.
    return new CodefleetError('forge_rejected', `${what} (the channel's monthly push quota is used up)`, {
      verdict: 'permanent',
      details: { ...details, quota: true },
    });
  }
  if (status === 429) {
    const seconds = Number(retryAfter);
    return new RateLimitedError(what, Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : undefined, {
      details,
    });
  }
  if (status >= 500) return new CodefleetError('forge_unavailable', what, { details });
  return new CodefleetError('forge_rejected', what, { details });
}

/** A {@link LineClient} over `fetch`. */
export function createLineClient(options: LineClientOptions): LineClient {
  const doFetch = options.fetch ?? fetch;
  const policy = checkedLineOutbound(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs });
  const base = options.apiUrl.replace(/\/+$/, '');
  const post = async (
    call: 'reply' | 'push',
    body: unknown,
    headers: Record<string, string> = {},
    signal?: AbortSignal,
  ): Promise<Response> => {
    try {
      return await doFetch(`${base}/v2/bot/message/${call}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${options.accessToken}`, ...headers },
        body: JSON.stringify(body),
        redirect: 'error',
        signal: lineRequestSignal(policy, signal),
      });
    } catch (cause) {
      throw new CodefleetError(
        'network',
        `LINE ${call} failed: ${cause instanceof Error ? cause.message : String(cause)}`,
        { cause, details: { call } },
      );
    }
  };
  const check = async (call: string, response: Response, accepted: number[] = []) => {
    if (response.ok || accepted.includes(response.status)) {
      await response.body?.cancel();
      return;
    }
    const text = await response.text().catch(() => '');
    let message = text;
    try {
      message = String((JSON.parse(text) as { message?: unknown }).message ?? text);
    } catch {
      // not JSON: keep the text
    }
    throw failure(call, response.status, message, response.headers.get('retry-after'));
  };
  const messages = (texts: string[]) =>
    texts.slice(0, maxLineMessages).map((text) => ({ type: 'text', text: graphemePrefix(text, maxLineTextChars) }));
  return {
    async reply(replyToken, texts) {
      await check('reply', await post('reply', { replyToken, messages: messages(texts) }));
    },
    async push(to, texts, retryKey, signal) {
      // 409: this key was accepted before; the message went out then.
      await check(
        'push',
        await post('push', { to, messages: messages(texts) }, { 'x-line-retry-key': retryKey }, signal),
        [409],
      );
    },
  };
}
