import { describe, expect, it } from '@jest/globals';
import { resolveLogFormat, silentLogger } from '../src/index.js';
import { capture, onlyRecord } from './capture.js';
import { TOKEN_KINDS } from './tokens.js';

const SECRET = 'configured-secret-value-42';

describe('createLogger: masking every part of a line', () => {
  it.each(TOKEN_KINDS)('never writes a $kind token', ({ token, masked }) => {
    const { log, lines } = capture({ secrets: [SECRET] });
    const child = log.child({ job_id: 'job-1', binding: `bound ${token}` });
    child.error(
      {
        event: 'agent.failed',
        attempt: 2,
        nested: { deeper: { value: token, list: ['ok', token] } },
        err: new Error(`agent said ${token}`),
      },
      'run failed with %s',
      token,
    );
    const line = lines.join('');
    expect(line).not.toContain(token);
    const record = onlyRecord(lines);
    expect(record).toMatchObject({
      level: 'error',
      job_id: 'job-1',
      binding: `bound ${masked}`,
      event: 'agent.failed',
      attempt: 2,
      nested: { deeper: { value: masked, list: ['ok', masked] } },
      msg: `run failed with ${masked}`,
    });
    const err = record.err as { message: string; stack: string; type: string };
    expect(err).toMatchObject({ type: 'Error', message: `agent said ${masked}` });
    expect(err.stack).toContain(`Error: agent said ${masked}\n    at `);
  });

  it('masks configured values in messages, fields, bindings and errors', () => {
    const { log, lines } = capture({ secrets: [SECRET, 'with "quotes" and \\ slash'] });
    log
      .child({ env: { TOKEN: SECRET } })
      .warn({ note: 'with "quotes" and \\ slash', err: new Error(`bad ${SECRET}`) }, `msg ${SECRET}`);
    expect(lines.join('')).not.toContain(SECRET);
    expect(lines.join('')).not.toContain('quotes');
    expect(onlyRecord(lines)).toMatchObject({
      env: { TOKEN: '***' },
      note: '***',
      msg: 'msg ***',
      err: { message: 'bad ***' },
    });
  });

  it('masks credentials in URLs and authorization headers in request logs', () => {
    const { log, lines } = capture();
    log.info({
      event: 'git.pushed',
      remote: 'https://x-access-token:abcdefghijklmnop@github.com/o/r.git',
      request: { headers: { authorization: 'token 0123456789abcdef0123456789abcdef01234567', accept: 'json' } },
    });
    expect(onlyRecord(lines)).toMatchObject({
      remote: 'https://***@github.com/o/r.git',
      request: { headers: { authorization: '***', accept: 'json' } },
    });
  });

  it('writes JSON with an ISO time, the level as a label and the given base fields', () => {
    const { log, lines } = capture({ name: 'worker', base: { worker_id: 'mini-01' }, level: 'debug' });
    log.debug({ event: 'job.claimed', job_id: 'j1' }, 'claimed');
    log.trace('not written');
    const record = onlyRecord(lines);
    expect(record).toMatchObject({
      level: 'debug',
      name: 'worker',
      worker_id: 'mini-01',
      event: 'job.claimed',
      msg: 'claimed',
    });
    expect(record.time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(typeof record.pid).toBe('number');
    expect(lines[0]?.endsWith('\n')).toBe(true);
  });
});

describe('createLogger: pretty format', () => {
  it('prints time, level, message and fields, masked', () => {
    const { log, lines } = capture({ format: 'pretty', secrets: [SECRET], name: 'cli' });
    log.info({ event: 'pr.ensured', url: 'https://github.com/o/r/pull/7', title: `fix ${SECRET}`, n: 3 }, 'PR ready');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^\d{4}-\d\d-\d\dT[\d:.]+Z INFO {2}\[cli\] PR ready event=pr\.ensured url=https:\/\/github\.com\/o\/r\/pull\/7 title="fix \*\*\*" n=3\n$/,
    );
  });

  it('prints error stacks on the following lines, masked', () => {
    const { log, lines } = capture({ format: 'pretty', secrets: [SECRET] });
    log.error({ err: new Error(`boom ${SECRET}`) }, 'failed');
    const text = lines.join('');
    expect(text).not.toContain(SECRET);
    expect(text).toContain('ERROR failed err="boom ***"\n    Error: boom ***\n        at ');
  });
});

describe('silentLogger', () => {
  it('accepts calls and writes nothing', () => {
    const log = silentLogger();
    expect(log.isLevelEnabled('fatal')).toBe(false);
    expect(() => log.child({ a: 1 }).error({ err: new Error('x') }, 'ignored')).not.toThrow();
  });
});

describe('pretty lines are inert on a terminal', () => {
  it('writes control characters from messages, fields and stacks as escapes', () => {
    const { log, lines } = capture({ format: 'pretty' });
    const err = new Error('bad\x1b[2Jthing');
    log.warn(
      { output: 'x\x1b]0;owned\x07y', raw: '\x9b31m', [`k\x1b`]: 1, err },
      'agent said \x1b[31mred\x1b[0m\nFAKE line',
    );
    const text = lines.join('');
    // eslint-disable-next-line no-control-regex
    expect(text).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
    expect(text).toContain('agent said \\x1b[31mred\\x1b[0m\\nFAKE line');
    expect(text.split('\n').filter((line) => line.startsWith('FAKE'))).toEqual([]);
  });
});

describe('resolveLogFormat', () => {
  it('auto is pretty on a TTY and JSON elsewhere; an explicit format wins', () => {
    expect(resolveLogFormat('auto', { isTTY: true })).toBe('pretty');
    expect(resolveLogFormat('auto', { isTTY: false })).toBe('json');
    expect(resolveLogFormat('auto', {})).toBe('json');
    expect(resolveLogFormat('json', { isTTY: true })).toBe('json');
    expect(resolveLogFormat('pretty', {})).toBe('pretty');
  });
});
