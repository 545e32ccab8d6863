import { describe, expect, it } from '@jest/globals';
import { parseJob } from '@codefleet/core';
import { inboxEntryOf, inboxJob } from '../src/index.js';

describe('chat inbox records', () => {
  it('are record jobs, and one queued as an api job before kind record reads back the same', () => {
    const job = inboxJob('line', 'ev-1', { text: 'hi' }, new Date('2026-01-01T00:00:00Z'));
    expect(job.source).toEqual({ kind: 'record', of: 'chat-inbox' });
    const legacy = parseJob({ ...job, source: { kind: 'api', request_id: `chat-inbox:${job.id.slice(6)}` } });
    expect(inboxEntryOf(legacy)).toEqual(inboxEntryOf(job));
    expect(inboxEntryOf(job)).toMatchObject({ platform: 'line', key: 'ev-1', event: { text: 'hi' } });
  });
});
