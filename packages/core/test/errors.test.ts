import { describe, expect, it } from '@jest/globals';
import { ZodError, z } from 'zod';
import { classify } from '../src/classify.js';
import {
  CodefleetError,
  InvalidJobError,
  InvalidTransitionError,
  LeaseLostError,
  RateLimitedError,
  errorCodes,
  isErrorCode,
  verdictOf,
} from '../src/errors.js';

function httpError(status: number, headers: Record<string, string> = {}, message = `HTTP ${status}`): Error {
  // Shaped like Octokit's RequestError: status on the error, headers on the response.
  return Object.assign(new Error(message), {
    name: 'HttpError',
    status,
    response: { status, headers, url: 'x', data: {} },
  });
}

function errno(code: string): Error {
  return Object.assign(new Error(`connect ${code} 10.0.0.1:443`), { code, errno: -1, syscall: 'connect' });
}

describe('verdict table', () => {
  it('has a verdict for every code', () => {
    for (const code of errorCodes) expect(['transient', 'agent_fixable', 'permanent']).toContain(verdictOf(code));
  });

  it.each([
    ['agent_timeout', 'transient'],
    ['network', 'transient'],
    ['rate_limited', 'transient'],
    ['forge_unavailable', 'transient'],
    ['queue_unavailable', 'transient'],
    ['store_unavailable', 'transient'],
    ['lease_lost', 'transient'],
    ['agent_crashed', 'transient'],
    ['unknown', 'transient'],
    ['build_failed', 'agent_fixable'],
    ['test_failed', 'agent_fixable'],
    ['no_changes', 'agent_fixable'],
    ['agent_failed', 'agent_fixable'],
    ['invalid_job', 'permanent'],
    ['fix_attempts_exhausted', 'permanent'],
    ['forge_rejected', 'permanent'],
    ['git_conflict', 'permanent'],
    ['secret_in_diff', 'permanent'],
    ['cancelled', 'permanent'],
  ] as const)('%s is %s', (code, verdict) => {
    expect(verdictOf(code)).toBe(verdict);
  });

  it('recognises codes without trusting prototype keys', () => {
    expect(isErrorCode('network')).toBe(true);
    expect(isErrorCode('toString')).toBe(false);
    expect(isErrorCode('ECONNRESET')).toBe(false);
  });
});

describe('CodefleetError', () => {
  it('carries code, verdict, details and cause', () => {
    const cause = new Error('root');
    const err = new CodefleetError('git_failed', 'push failed', {
      details: { remote: 'origin' },
      cause,
      retryAfterMs: 5,
    });
    expect(err).toBeInstanceOf(Error);
    expect(err.name).toBe('CodefleetError');
    expect(err.verdict).toBe('transient');
    expect(err.cause).toBe(cause);
    expect(err.retryAfterMs).toBe(5);
    expect(JSON.parse(JSON.stringify(err))).toEqual({
      code: 'git_failed',
      verdict: 'transient',
      message: 'push failed',
      details: { remote: 'origin' },
    });
  });

  it('lets the verdict be overridden', () => {
    expect(new CodefleetError('forge_rejected', 'x', { verdict: 'transient' }).verdict).toBe('transient');
  });

  it('has subclasses that keep their data', () => {
    const invalid = new InvalidJobError('bad', [{ path: 'title', message: 'expected string' }]);
    expect([invalid.name, invalid.code, invalid.issues.length]).toEqual(['InvalidJobError', 'invalid_job', 1]);
    const transition = new InvalidTransitionError('done', 'queued');
    expect([transition.from, transition.to, transition.message]).toEqual([
      'done',
      'queued',
      'invalid stage transition: done -> queued',
    ]);
    const limited = new RateLimitedError('slow down', 30_000);
    expect([limited.code, limited.verdict, limited.retryAfterMs]).toEqual(['rate_limited', 'transient', 30_000]);
    const lost = new LeaseLostError('job-1');
    expect([lost.code, lost.jobId, lost.details]).toEqual(['lease_lost', 'job-1', { job_id: 'job-1' }]);
  });
});

describe('classify', () => {
  it('keeps our own errors, including copies from another package instance', () => {
    expect(classify(new RateLimitedError('slow', 1500))).toEqual({
      code: 'rate_limited',
      verdict: 'transient',
      message: 'slow',
      retryAfterMs: 1500,
    });
    const foreignCopy = { name: 'CodefleetError', code: 'build_failed', verdict: 'permanent', message: 'tsc failed' };
    expect(classify(foreignCopy)).toEqual({ code: 'build_failed', verdict: 'permanent', message: 'tsc failed' });
    const badVerdict = { code: 'build_failed', verdict: 'maybe', message: 'm' };
    expect(classify(badVerdict).verdict).toBe('agent_fixable');
  });

  it.each([
    'ECONNRESET',
    'ECONNREFUSED',
    'ETIMEDOUT',
    'EAI_AGAIN',
    'ENOTFOUND',
    'EPIPE',
    'EHOSTUNREACH',
    'ENETUNREACH',
    'ECONNABORTED',
    'UND_ERR_SOCKET',
    'UND_ERR_CONNECT_TIMEOUT',
  ])('maps %s to network', (code) => {
    expect(classify(errno(code))).toMatchObject({ code: 'network', verdict: 'transient' });
  });

  it('finds a network error in the cause chain of fetch', () => {
    const fetchFailed = new TypeError('fetch failed', { cause: errno('ECONNREFUSED') });
    expect(classify(fetchFailed)).toEqual({ code: 'network', verdict: 'transient', message: 'fetch failed' });
    const aggregate = new AggregateError([errno('ECONNREFUSED'), errno('ETIMEDOUT')], 'all failed');
    expect(classify(aggregate).code).toBe('network');
  });

  it('survives a self-referencing cause', () => {
    const err = new Error('loop') as Error & { cause?: unknown };
    err.cause = err;
    expect(classify(err).code).toBe('unknown');
  });

  it('maps aborts to cancelled and timeouts to network', () => {
    const abort = new Error('aborted');
    abort.name = 'AbortError';
    expect(classify(abort)).toMatchObject({ code: 'cancelled', verdict: 'permanent' });
    expect(classify({ code: 'ABORT_ERR', message: 'x' }).code).toBe('cancelled');
    expect(classify(Object.assign(new Error('aborted'), { name: 'AbortError', code: 'UND_ERR_ABORTED' })).code).toBe(
      'cancelled',
    );
    expect(classify(new DOMException('timed out', 'TimeoutError')).code).toBe('network');
  });

  it('maps 429 and honours retry-after seconds', () => {
    expect(classify(httpError(429, { 'retry-after': '30' }))).toEqual({
      code: 'rate_limited',
      verdict: 'transient',
      message: 'HTTP 429',
      retryAfterMs: 30_000,
    });
  });

  it('uses x-ratelimit-reset only when it knows the time', () => {
    const err = httpError(429, { 'x-ratelimit-reset': '1700000060' });
    expect(classify(err, { now: 1_700_000_000_000 }).retryAfterMs).toBe(60_000);
    expect(classify(err).retryAfterMs).toBeUndefined();
    expect(
      classify(httpError(429, { 'x-ratelimit-reset': '1600000000' }), { now: 1_700_000_000_000 }).retryAfterMs,
    ).toBe(0);
  });

  it('reads an HTTP-date retry-after and fetch Headers', () => {
    const now = Date.parse('2024-05-01T10:00:00Z');
    const err = Object.assign(new Error('busy'), {
      status: 429,
      headers: new Headers({ 'Retry-After': 'Wed, 01 May 2024 10:00:05 GMT' }),
    });
    expect(classify(err, { now }).retryAfterMs).toBe(5000);
  });

  it('treats exhausted or secondary 403s as rate limits and other 403s as rejections', () => {
    expect(
      classify(httpError(403, { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '100' }), { now: 90_000 }),
    ).toMatchObject({
      code: 'rate_limited',
      retryAfterMs: 10_000,
    });
    expect(classify(httpError(403, {}, 'You have exceeded a secondary rate limit')).code).toBe('rate_limited');
    expect(
      classify(httpError(403, { 'x-ratelimit-remaining': '12' }, 'Resource not accessible by integration')),
    ).toMatchObject({
      code: 'forge_rejected',
      verdict: 'permanent',
    });
  });

  it.each([
    [408, 'network', 'transient'],
    [500, 'forge_unavailable', 'transient'],
    [502, 'forge_unavailable', 'transient'],
    [503, 'forge_unavailable', 'transient'],
    [404, 'forge_not_found', 'permanent'],
    [422, 'forge_rejected', 'permanent'],
    [401, 'forge_rejected', 'permanent'],
  ])('maps HTTP %i to %s', (status, code, verdict) => {
    expect(classify(httpError(status))).toMatchObject({ code, verdict });
  });

  it('maps SQLite busy and locked to queue_unavailable', () => {
    for (const code of ['SQLITE_BUSY', 'SQLITE_BUSY_SNAPSHOT', 'SQLITE_LOCKED']) {
      expect(classify(Object.assign(new Error('database is locked'), { code }))).toMatchObject({
        code: 'queue_unavailable',
        verdict: 'transient',
      });
    }
    // node:sqlite reports every SQLite error as ERR_SQLITE_ERROR with the result code apart.
    for (const errcode of [5, 517, 6]) {
      expect(
        classify(Object.assign(new Error('database is locked'), { code: 'ERR_SQLITE_ERROR', errcode })),
      ).toMatchObject({ code: 'queue_unavailable' });
    }
    expect(classify(Object.assign(new Error('no such table'), { code: 'ERR_SQLITE_ERROR', errcode: 1 })).code).not.toBe(
      'queue_unavailable',
    );
  });

  it('maps zod errors to invalid_job', () => {
    const result = z.object({ a: z.string() }).safeParse({});
    expect(result.error).toBeInstanceOf(ZodError);
    expect(classify(result.error)).toMatchObject({ code: 'invalid_job', verdict: 'permanent' });
  });

  it('classifies strings and plain errors as unknown (transient)', () => {
    expect(classify('boom')).toEqual({ code: 'unknown', verdict: 'transient', message: 'boom' });
    expect(classify(new Error('odd'))).toEqual({ code: 'unknown', verdict: 'transient', message: 'odd' });
  });

  it('never throws on hostile input', () => {
    const throwingGetter = Object.defineProperty({}, 'code', {
      get() {
        throw new Error('getter');
      },
    });
    const throwingProxy = new Proxy(
      {},
      {
        get() {
          throw new Error('trap');
        },
        has() {
          throw new Error('trap');
        },
      },
    );
    const badToString = {
      [Symbol.toPrimitive]() {
        throw new Error('no');
      },
    };
    const inputs: unknown[] = [
      null,
      undefined,
      0,
      42,
      NaN,
      true,
      Symbol('s'),
      10n,
      () => 1,
      [],
      {},
      throwingGetter,
      throwingProxy,
      badToString,
      Object.create(null),
    ];
    for (const input of inputs) {
      const result = classify(input);
      expect(result.code).toBe('unknown');
      expect(result.verdict).toBe('transient');
      expect(typeof result.message).toBe('string');
    }
    expect(classify(null).message).toBe('null was thrown');
  });

  it('bounds the message length', () => {
    expect(classify(new Error('x'.repeat(100_000))).message.length).toBeLessThanOrEqual(1000);
  });
});
