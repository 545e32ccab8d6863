import { describe, expect, it } from '@jest/globals';
import { InvalidJobError } from '../src/errors.js';
import type { JobInput } from '../src/job.js';
import { createJob, defaultIdempotencyKey, parseJob, parseJobJson } from '../src/job.js';

const minimal = {
  id: 'job-1',
  idempotency_key: 'octo/repo#issue-7',
  repo: 'octo/repo',
  source: { kind: 'issue', number: 7 },
  title: 'Add a health endpoint',
  requested_by: 'alice',
  created_at: '2024-05-01T10:00:00Z',
} satisfies JobInput;

function errorOf(fn: () => unknown): InvalidJobError {
  try {
    fn();
  } catch (err) {
    if (err instanceof InvalidJobError) return err;
    throw err;
  }
  throw new Error('expected an InvalidJobError');
}

describe('parseJob', () => {
  it('accepts a minimal job and fills defaults', () => {
    const job = parseJob(minimal);
    expect(job).toEqual({ ...minimal, v: 1, body: '', type: 'feature', priority: 'normal', mode: 'change' });
  });

  it('takes a follow-up branch only when it is a codefleet branch', () => {
    expect(parseJob({ ...minimal, branch: 'ai/fix-login-1a2b3c4d' }).branch).toBe('ai/fix-login-1a2b3c4d');
    expect(() => parseJob({ ...minimal, branch: 'main' })).toThrow(/branch.*codefleet branch/);
    expect(() => parseJob({ ...minimal, branch: 'ai/../x' })).toThrow(/branch/);
  });

  it('records a route decision and refuses an unknown route', () => {
    const route = { name: 'PLAN', source: 'rule', confidence: 0.8, reason: 'matched /plan/' };
    expect(parseJob({ ...minimal, mode: 'answer', route }).route).toEqual(route);
    expect(() => parseJob({ ...minimal, route: { ...route, name: 'DEPLOY' } })).toThrow(/route\.name/);
    expect(() => parseJob({ ...minimal, source: { kind: 'api', callback_url: 'file:///etc/passwd' } })).toThrow(
      /callback_url/,
    );
  });

  it('names a bad field with its path and value', () => {
    const err = errorOf(() => parseJob({ ...minimal, title: 42 }));
    expect(err.code).toBe('invalid_job');
    expect(err.verdict).toBe('permanent');
    expect(err.message).toBe('invalid job: title: expected string, got 42');
    expect(err.issues).toEqual([{ path: 'title', message: 'expected string, got 42', value: 42 }]);
  });

  it('reports every bad field at once', () => {
    const err = errorOf(() =>
      parseJob({
        ...minimal,
        title: 42,
        source: { kind: 'issue', number: -3 },
        type: 'chore',
        priority: undefined,
        id: 'has space',
      }),
    );
    expect(err.message).toContain('title: expected string, got 42');
    expect(err.message).toContain('source.number: expected positive integer, got -3');
    expect(err.message).toContain('type: expected one of "feature", "bug", "refactor", got "chore"');
    expect(err.message).toContain('id: expected 1..128 characters of [A-Za-z0-9._:-], got "has space"');
    expect(err.issues.map((issue) => issue.path)).toEqual(['id', 'source.number', 'title', 'type']);
  });

  it('says which required fields are missing', () => {
    const err = errorOf(() => parseJob({ repo: 'octo/repo' }));
    for (const key of ['id', 'idempotency_key', 'source', 'title', 'requested_by', 'created_at']) {
      expect(err.message).toContain(`${key}: required`);
    }
  });

  it('explains a wrong source kind', () => {
    const err = errorOf(() => parseJob({ ...minimal, source: { kind: 'email' } }));
    expect(err.message).toBe(
      'invalid job: source.kind: expected one of "issue", "chat", "cli", "ci", "eval", "record", "api", got "email"',
    );
  });

  it('rejects a non-object job', () => {
    expect(errorOf(() => parseJob(42)).message).toBe('invalid job: (root): expected object, got 42');
    expect(errorOf(() => parseJob(null)).message).toBe('invalid job: (root): expected object, got null');
  });

  it('truncates a huge bad value in the message', () => {
    const body = 'x'.repeat(1024 * 1024);
    const err = errorOf(() => parseJob({ ...minimal, body }));
    expect(err.message.length).toBeLessThan(300);
    expect(err.message).toContain('body: expected at most 65536 characters, got "xxxx');
    expect(err.issues[0]?.value).toBeUndefined();
    expect(JSON.stringify(err).length).toBeLessThan(400);
  });

  it('strips unknown keys, also nested ones', () => {
    const job = parseJob({ ...minimal, future_field: true, source: { kind: 'issue', number: 7, extra: 1 } });
    expect(job).not.toHaveProperty('future_field');
    expect(job.source).toEqual({ kind: 'issue', number: 7 });
  });

  it('trims the title and refuses a blank one', () => {
    expect(parseJob({ ...minimal, title: '  Fix it  ' }).title).toBe('Fix it');
    expect(errorOf(() => parseJob({ ...minimal, title: '   ' })).message).toContain('title: expected non-empty string');
  });

  it('normalizes DoD commands to argv arrays without shell parsing', () => {
    const job = parseJob({
      ...minimal,
      dod: ['  npm   test ', ['pnpm', 'run', 'lint --fix'], 'echo "a b"', "node -e 'process.exit(1)'"],
    });
    expect(job.dod).toEqual([
      ['npm', 'test'],
      ['pnpm', 'run', 'lint --fix'],
      ['echo', 'a b'],
      ['node', '-e', 'process.exit(1)'],
    ]);
    // Shell syntax in a string is refused, not passed on as literal arguments.
    const shell = errorOf(() => parseJob({ ...minimal, dod: ['echo hi > /tmp/x', "sh -c 'exit 1' && true"] }));
    expect(shell.message).toContain('dod[0]: `>` is shell syntax, and commands run without a shell');
    expect(shell.message).toContain('dod[1]: `&` is shell syntax');
  });

  it('refuses empty or malformed DoD commands with their index', () => {
    const err = errorOf(() => parseJob({ ...minimal, dod: ['  ', ['npm', ''], 5] }));
    expect(err.message).toContain('dod[0]: expected a non-empty command, got "  "');
    expect(err.message).toContain('dod[1][1]: expected non-empty argument, got ""');
    expect(err.message).toContain('dod[2]: expected a command string or an argv array of strings, got 5');
    expect(errorOf(() => parseJob({ ...minimal, dod: Array(33).fill('make') })).message).toContain(
      'dod: expected at most 32 items',
    );
  });

  it('checks agent names, patch size, datetime and version', () => {
    const err = errorOf(() =>
      parseJob({ ...minimal, agent: 'Claude Code', patch: 'é'.repeat(600_000), created_at: 'yesterday', v: 2 }),
    );
    expect(err.message).toContain('agent: expected a configured agent name');
    expect(err.message).toContain('patch: expected at most 1048576 bytes');
    expect(err.message).toContain('created_at: expected ISO-8601 datetime');
    expect(err.message).toContain('v: expected 1, got 2');
    expect(parseJob({ ...minimal, agent: 'claude-code', patch: 'é'.repeat(500_000) }).agent).toBe('claude-code');
  });

  it.each([
    ['octo/repo', true],
    ['octo-org/my.repo_1', true],
    ['/srv/repos/app', true],
    ['https://github.com/octo/repo.git', true],
    ['ssh://git@github.com/octo/repo.git', true],
    ['git://example.org/repo.git', true],
    ['file:///srv/repos/app', true],
    ['git@github.com:octo/repo.git', true],
    ['-octo/repo', false],
    ['octo/..', false],
    ['relative/path/to', false],
    ['../repo', false],
    ['/srv/../etc', false],
    ['ftp://example.org/repo', false],
    ['octo/repo name', false],
    ['-oProxyCommand=x@host:path', false],
  ])('repo %s valid: %s', (repo, valid) => {
    const parse = (): unknown => parseJob({ ...minimal, repo });
    if (valid) expect(parse).not.toThrow();
    else expect(errorOf(parse).issues[0]?.path).toBe('repo');
  });

  it('refuses credentials in the repo URL without logging them', () => {
    for (const repo of [
      'https://x-access-token:ghp_SECRET123@github.com/octo/repo.git',
      'https://ghp_SECRET123@github.com/o/r',
    ]) {
      const err = errorOf(() => parseJob({ ...minimal, repo }));
      expect(err.message).toContain('credentials go through the git credential helper, never the URL');
      expect(JSON.stringify({ message: err.message, issues: err.issues, details: err.details })).not.toContain(
        'SECRET',
      );
    }
  });

  it.each([
    ['main', true],
    ['release/1.2', true],
    ['feature/x-y_z', true],
    ['has space', false],
    ['a..b', false],
    ['-main', false],
    ['a~1', false],
    ['a^', false],
    ['a:b', false],
    ['what?', false],
    ['a*', false],
    ['a[b', false],
    ['a\\b', false],
    ['a\u0007b', false],
    ['topic.lock', false],
    ['topic/', false],
    ['a@{1}', false],
    ['.hidden', false],
  ])('base_branch %j valid: %s', (branch, valid) => {
    const parse = (): unknown => parseJob({ ...minimal, base_branch: branch });
    if (valid) expect(parse).not.toThrow();
    else expect(errorOf(parse).issues[0]?.path).toBe('base_branch');
  });

  it.each([
    ['a'.repeat(40), true],
    ['0123456789abcdef'.repeat(4), true],
    ['A'.repeat(40), false],
    ['a'.repeat(39), false],
    ['a'.repeat(41), false],
    ['main', false],
    ['HEAD~1', false],
    ['-a'.repeat(20), false],
  ])('base_commit %j valid: %s', (sha, valid) => {
    const parse = (): unknown => parseJob({ ...minimal, base_commit: sha });
    if (valid) expect(parse).not.toThrow();
    else expect(errorOf(parse).issues[0]?.path).toBe('base_commit');
  });

  it('accepts chat, cli and api sources', () => {
    const chat = { kind: 'chat', platform: 'slack', channel: 'C1', thread_id: '171.2', message_id: 'm1' } as const;
    expect(parseJob({ ...minimal, source: chat }).source).toEqual(chat);
    expect(parseJob({ ...minimal, source: { kind: 'cli' } }).source).toEqual({ kind: 'cli' });
    expect(parseJob({ ...minimal, source: { kind: 'api', request_id: 'r-1' } }).source).toEqual({
      kind: 'api',
      request_id: 'r-1',
    });
  });

  it('turns throwing getters into an InvalidJobError', () => {
    const hostile = Object.defineProperty({ ...minimal }, 'title', {
      enumerable: true,
      get() {
        throw new Error('boom');
      },
    });
    expect(errorOf(() => parseJob(hostile)).message).toContain('could not read input: boom');
  });
});

describe('parseJobJson', () => {
  it('parses valid JSON text', () => {
    expect(parseJobJson(JSON.stringify(minimal)).id).toBe('job-1');
  });

  it.each([
    ['{"id": "a",}', "expected property name in double quotes, got '}' at position 11 (line 1, column 12)"],
    ['{\n  "id": tru\n}', "unexpected character 't' at position 10 (line 2, column 9)"],
    ['', 'unexpected end of input at position 0 (line 1, column 1)'],
    ['{"a": "b"', 'unexpected end of input at position 9 (line 1, column 10)'],
    ['{"a": 1} x', "unexpected 'x' after the JSON value at position 9 (line 1, column 10)"],
    ['{"a": "line\nbreak"}', 'unescaped control character U+000a in string at position 11 (line 1, column 12)'],
  ])('reports where %j stops being JSON', (text, where) => {
    const err = errorOf(() => parseJobJson(text));
    expect(err.message).toBe(`invalid job: not valid JSON: ${where}`);
  });

  it('validates the parsed value like parseJob', () => {
    expect(errorOf(() => parseJobJson('{"title": 42}')).message).toContain('title: expected string, got 42');
  });
});

describe('createJob and idempotency keys', () => {
  const deps = { id: 'job-9', now: new Date('2024-05-01T10:00:00.000Z') };
  const base = { repo: 'octo/repo', title: 'Fix it', requested_by: 'alice' };

  it('fills id, created_at and the issue key', () => {
    const job = createJob({ ...base, source: { kind: 'issue', number: 12 } }, deps);
    expect(job.id).toBe('job-9');
    expect(job.created_at).toBe('2024-05-01T10:00:00.000Z');
    expect(job.idempotency_key).toBe('octo/repo#issue-12');
  });

  it('derives the chat key from the thread and message', () => {
    const source = { kind: 'chat', platform: 'slack', channel: 'C1', thread_id: 't1' } as const;
    expect(createJob({ ...base, source }, deps).idempotency_key).toBe('chat:slack:C1:t1:');
    expect(createJob({ ...base, source: { ...source, message_id: 'm2' } }, deps).idempotency_key).toBe(
      'chat:slack:C1:t1:m2',
    );
  });

  it('makes every cli and api enqueue new work', () => {
    expect(createJob({ ...base, source: { kind: 'cli' } }, deps).idempotency_key).toBe('job-9');
    expect(createJob({ ...base, source: { kind: 'api' } }, { ...deps, id: 'job-10' }).idempotency_key).toBe('job-10');
    expect(defaultIdempotencyKey('octo/repo', { kind: 'cli' }, 'x')).toBe('x');
  });

  it('keys an evaluation task by suite, instance, configuration and trial, so a re-run converges', () => {
    const source = { kind: 'eval', suite: 'c'.repeat(64), instance: 'acme__w-1', config: 'oracle', trial: 2 } as const;
    const job = createJob({ ...base, source }, deps);
    expect(job.idempotency_key).toBe(`eval:${'c'.repeat(64)}:acme__w-1:oracle:2`);
    expect(() => createJob({ ...base, source: { ...source, suite: 'short' } }, deps)).toThrow(
      'source.suite: expected the SHA-256 of the suite file (64 lower-case hex digits)',
    );
    expect(() => createJob({ ...base, source: { ...source, config: 'Has Space' } }, deps)).toThrow('source.config');
  });

  it('carries hidden tests: a patch, and the names that must pass, bounded', () => {
    const hidden = { patch: '--- a/t\n+++ b/t\n', tests: ['t > passes'] };
    expect(createJob({ ...base, source: { kind: 'cli' }, hidden_tests: hidden }, deps).hidden_tests).toEqual(hidden);
    expect(() => createJob({ ...base, source: { kind: 'cli' }, hidden_tests: { patch: '' } }, deps)).toThrow(
      'hidden_tests.patch',
    );
    expect(() =>
      createJob({ ...base, source: { kind: 'cli' }, hidden_tests: { patch: 'x', tests: ['x'.repeat(501)] } }, deps),
    ).toThrow('hidden_tests.tests[0]: expected at most 500 characters');
    expect(() =>
      createJob({ ...base, source: { kind: 'cli' }, hidden_tests: { patch: 'x', extra: 1 } as never }, deps),
    ).toThrow('hidden_tests');
  });

  it('keeps explicit id, key and timestamp', () => {
    const job = createJob(
      { ...base, source: { kind: 'cli' }, id: 'mine', idempotency_key: 'k', created_at: '2020-01-01T00:00:00Z' },
      deps,
    );
    expect([job.id, job.idempotency_key, job.created_at]).toEqual(['mine', 'k', '2020-01-01T00:00:00Z']);
  });

  it('validates what it builds', () => {
    expect(() => createJob({ ...base, title: '', source: { kind: 'issue', number: 0 } }, deps)).toThrow(
      InvalidJobError,
    );
  });
});
