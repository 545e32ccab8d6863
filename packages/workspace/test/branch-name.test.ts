import { describe, expect, it } from '@jest/globals';
import { branchNameProblem, type Job } from '@codefleet/core';
import { branchName, slugify } from '../src/index.js';

type Named = Pick<Job, 'id' | 'title' | 'source'>;

describe('branchName', () => {
  it('is ai/issue-<N> for issues, whatever the title or job id', () => {
    const a: Named = { id: 'job-1', title: 'Fix it', source: { kind: 'issue', number: 42 } };
    expect(branchName(a)).toBe('ai/issue-42');
    expect(branchName({ ...a, id: 'job-2', title: 'Fix it, again (retry 3)' })).toBe('ai/issue-42');
  });

  it('is ai/<slug>-<8 hex> otherwise, deterministic and without attempt numbers', () => {
    const job: Named = { id: 'cli-7f3a', title: 'Add a --verbose flag to the CLI', source: { kind: 'cli' } };
    const name = branchName(job);
    expect(name).toMatch(/^ai\/add-a-verbose-flag-to-the-cli-[0-9a-f]{8}$/);
    expect(branchName({ ...job })).toBe(name);
    expect(branchName({ ...job, id: 'cli-other' })).not.toBe(name);
  });

  it('hashes the chat thread, so a redelivery with a new job id converges', () => {
    const source = { kind: 'chat', platform: 'slack', channel: 'C1', thread_id: 'T1', message_id: 'M1' } as const;
    const first = branchName({ id: 'job-1', title: 'Rename the config key', source });
    expect(branchName({ id: 'job-2', title: 'Rename the config key', source })).toBe(first);
    expect(
      branchName({ id: 'job-1', title: 'Rename the config key', source: { ...source, thread_id: 'T2' } }),
    ).not.toBe(first);
  });

  it('slugs titles to at most 40 [a-z0-9-] characters, with a fallback', () => {
    expect(slugify('Crème brûlée: ÜBER fix!!')).toBe('creme-brulee-uber-fix');
    expect(slugify('日本語のタイトル')).toBe('task');
    expect(slugify('---')).toBe('task');
    const long = slugify('a'.repeat(39) + ' bbbbbbbbbb');
    expect(long.length).toBeLessThanOrEqual(40);
    expect(long.endsWith('-')).toBe(false);
  });

  it('is always a valid git branch name', () => {
    const titles = [
      'refs/heads/../../x',
      '.hidden.lock',
      'a..b',
      'x@{1}',
      'ends with dot.',
      'back\\slash',
      'tab\there',
      '-leading dash',
      'emoji 🚀 rocket',
      ' ',
      '~^:?*[',
      'x'.repeat(300),
      'foo.lock/bar.lock',
      'HEAD',
    ];
    for (const title of titles) {
      for (const source of [{ kind: 'cli' }, { kind: 'api' }, { kind: 'issue', number: 1 }] as const) {
        const name = branchName({ id: 'job:1.x', title, source });
        expect({ title, problem: branchNameProblem(name) }).toEqual({ title, problem: undefined });
      }
    }
  });
});
