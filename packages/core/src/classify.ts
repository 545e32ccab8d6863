import type { ErrorCode, Verdict } from './errors.js';
import { isErrorCode, isVerdict, verdictOf } from './errors.js';
import { truncateHead } from './text.js';

/** What the worker needs to know about any thrown value. */
export interface Classified {
  code: ErrorCode;
  verdict: Verdict;
  message: string;
  /** Earliest sensible retry in ms from now, when the failing side told us. */
  retryAfterMs?: number;
}

/** Inputs `classify` cannot compute itself without breaking purity. */
export interface ClassifyOptions {
  /** Current time in epoch ms; needed to turn `x-ratelimit-reset` into a delay. */
  now?: number;
}

const maxMessageChars = 1000;
// How far to follow `cause` / `errors` chains: fetch wraps the socket error in a
// TypeError("fetch failed"), and Node's happy-eyeballs connect wraps several in an
// AggregateError. A bound keeps self-referencing causes from looping.
const maxDepth = 4;

const networkErrnos = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ETIMEDOUT',
  'EAI_AGAIN',
  'ENOTFOUND',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ECONNABORTED',
]);

type Bag = Record<string, unknown>;

function isBag(value: unknown): value is Bag {
  return (typeof value === 'object' || typeof value === 'function') && value !== null;
}

/** Reads a property without letting a throwing getter or proxy trap escape. */
function get(value: unknown, key: string): unknown {
  if (!isBag(value)) return undefined;
  try {
    return value[key];
  } catch {
    return undefined;
  }
}

function str(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

function messageOf(err: unknown, fallback: string): string {
  let text: string | undefined;
  try {
    if (typeof err === 'string') text = err;
    else if (isBag(err)) text = str(get(err, 'message'));
    else if (err !== null && err !== undefined) text = String(err);
  } catch {
    text = undefined;
  }
  return truncateHead(text === undefined || text === '' ? fallback : text, maxMessageChars);
}

function result(code: ErrorCode, message: string, retryAfterMs?: number, verdict?: Verdict): Classified {
  const classified: Classified = { code, verdict: verdict ?? verdictOf(code), message };
  if (retryAfterMs !== undefined) classified.retryAfterMs = retryAfterMs;
  return classified;
}

/** Header lookup over a plain object (Octokit), a `Headers` instance (fetch) or nothing. */
function header(headers: unknown, name: string): string | undefined {
  if (!isBag(headers)) return undefined;
  const getter = get(headers, 'get');
  if (typeof getter === 'function') {
    try {
      const value: unknown = getter.call(headers, name);
      return typeof value === 'string' ? value : undefined;
    } catch {
      return undefined;
    }
  }
  const value = get(headers, name) ?? get(headers, name.toLowerCase());
  if (typeof value === 'number') return String(value);
  return str(value);
}

function nonNegativeMs(value: number): number | undefined {
  return Number.isFinite(value) ? Math.max(0, Math.ceil(value)) : undefined;
}

/**
 * Delay asked for by `retry-after` (seconds or HTTP date) or `x-ratelimit-reset` (epoch s), from
 * a `Headers` instance or a plain object; `now` (epoch ms) is needed for the date forms.
 */
export function rateLimitDelay(headers: unknown, now: number | undefined): number | undefined {
  const retryAfter = header(headers, 'retry-after')?.trim();
  if (retryAfter !== undefined && retryAfter !== '') {
    if (/^\d+(\.\d+)?$/.test(retryAfter)) return nonNegativeMs(Number(retryAfter) * 1000);
    const at = Date.parse(retryAfter);
    if (now !== undefined && !Number.isNaN(at)) return nonNegativeMs(at - now);
  }
  const reset = header(headers, 'x-ratelimit-reset')?.trim();
  if (reset !== undefined && now !== undefined && /^\d+$/.test(reset)) return nonNegativeMs(Number(reset) * 1000 - now);
  return undefined;
}

function classifyHttp(err: unknown, status: number, options: ClassifyOptions): Classified {
  const headers = get(get(err, 'response'), 'headers') ?? get(err, 'headers');
  const message = messageOf(err, `HTTP ${status}`);
  if (status === 429) return result('rate_limited', message, rateLimitDelay(headers, options.now));
  if (status === 403) {
    // GitHub signals its secondary rate limit only in the message text, so this is the
    // one place we look at text; the primary limit has a header.
    const exhausted = header(headers, 'x-ratelimit-remaining')?.trim() === '0';
    if (exhausted || /secondary rate limit/i.test(message)) {
      return result('rate_limited', message, rateLimitDelay(headers, options.now));
    }
  }
  if (status === 408) return result('network', message);
  if (status >= 500 && status <= 599) return result('forge_unavailable', message);
  if (status === 404) return result('forge_not_found', message);
  if (status >= 400 && status <= 499) return result('forge_rejected', message);
  return result('unknown', message);
}

function httpStatus(err: unknown): number | undefined {
  for (const candidate of [get(err, 'status'), get(err, 'statusCode'), get(get(err, 'response'), 'status')]) {
    if (typeof candidate === 'number' && Number.isInteger(candidate) && candidate >= 100 && candidate <= 599)
      return candidate;
  }
  return undefined;
}

/** Our own errors, including those thrown by another loaded copy of this package. */
function classifyOwn(err: unknown): Classified | undefined {
  const code = get(err, 'code');
  if (!isErrorCode(code)) return undefined;
  const verdict = get(err, 'verdict');
  const retryAfter = get(err, 'retryAfterMs');
  const retryAfterMs = typeof retryAfter === 'number' ? nonNegativeMs(retryAfter) : undefined;
  return result(code, messageOf(err, code), retryAfterMs, isVerdict(verdict) ? verdict : undefined);
}

/** SQLITE_BUSY and SQLITE_LOCKED, the primary result codes of a database another connection holds. */
const sqliteBusyOrLocked = new Set([5, 6]);

/** Errors identified by `code` or `name` alone, searched through `cause` and `errors`. */
function classifyByIdentity(err: unknown, depth: number): Classified | undefined {
  if (!isBag(err) || depth > maxDepth) return undefined;
  const code = str(get(err, 'code'));
  const name = str(get(err, 'name'));
  const message = messageOf(err, code ?? name ?? 'error');
  if (name === 'AbortError' || code === 'ABORT_ERR') return result('cancelled', message);
  if (name === 'TimeoutError') return result('network', message);
  if (code !== undefined) {
    if (networkErrnos.has(code) || code.startsWith('UND_ERR_')) return result('network', message);
    if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) return result('queue_unavailable', message);
    // node:sqlite: one code for every SQLite error, the primary result code in `errcode`.
    if (code === 'ERR_SQLITE_ERROR' && sqliteBusyOrLocked.has(Number(get(err, 'errcode')) & 0xff))
      return result('queue_unavailable', message);
  }
  if (name === 'ZodError') return result('invalid_job', message);
  const nested = [get(err, 'cause')];
  const errors = get(err, 'errors');
  if (Array.isArray(errors)) nested.push(...errors.slice(0, 8));
  for (const inner of nested) {
    if (inner === err) continue;
    const found = classifyByIdentity(inner, depth + 1);
    // Keep the outer message: it usually says what we were doing when it failed.
    if (found !== undefined) return { ...found, message };
  }
  return undefined;
}

/**
 * Maps anything that was thrown to a code, a verdict and a message. Recognises our own
 * errors by their `code` (not `instanceof`, since two copies of this package may be
 * loaded), Node errno and undici codes, aborts, HTTP errors with a `status` (Octokit's
 * RequestError), SQLite busy/locked and zod errors; everything else is `unknown`
 * (transient). Never throws, whatever it is given.
 */
export function classify(err: unknown, options: ClassifyOptions = {}): Classified {
  try {
    const own = classifyOwn(err);
    if (own !== undefined) return own;
    const byIdentity = classifyByIdentity(err, 0);
    if (byIdentity !== undefined) return byIdentity;
    const status = httpStatus(err);
    if (status !== undefined) return classifyHttp(err, status, options);
    return result('unknown', messageOf(err, err === null ? 'null was thrown' : `${typeof err} was thrown`));
  } catch {
    return result('unknown', 'unclassifiable error');
  }
}
