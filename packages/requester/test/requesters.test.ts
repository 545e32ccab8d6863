import { describe, expect, it } from '@jest/globals';
import { createJob, type Job } from '@codefleet/core';
import { cliRequester, requesterFor } from '../src/index.js';

describe('requesterFor', () => {
  it('routes each job to the first adapter that handles it; an unhandled one is logged, not thrown', async () => {
    const seen: string[] = [];
    const warnings: unknown[] = [];
    const log = { warn: (obj: unknown) => warnings.push(obj) } as unknown as Parameters<typeof requesterFor>[1];
    const slackish = {
      kind: 'slack',
      handles: (job: Job) => job.source.kind === 'chat' && job.source.platform === 'slack',
      report: async (r: { kind: string }) => {
        seen.push(r.kind);
      },
    };
    const requester = requesterFor([cliRequester, slackish], log);
    const chat = (platform: string) =>
      createJob(
        {
          repo: 'acme/widgets',
          source: { kind: 'chat', platform, channel: 'C1', thread_id: '1.2' },
          title: 't',
          requested_by: 'U1',
        },
        { id: `c-${platform}`, now: new Date() },
      );
    await requester.report({ kind: 'queued', job: chat('slack') });
    await requester.report({ kind: 'queued', job: chat('line') });
    expect(seen).toEqual(['queued']);
    expect(warnings).toHaveLength(1);
    expect(requester.handles(chat('line'))).toBe(false);
  });
});
