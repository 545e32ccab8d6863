import { describe, expect, it } from '@jest/globals';
import { createJob } from '@codefleet/core';
import { waitFor } from '@codefleet/testkit';
import { jobReporter, reportSafely, type JobReporterOptions, type Report } from '../src/index.js';

// One try per report under a deadline (the platform's client is the one retry layer), and a
// job's progress sent in the background, latest wins, with only the final report awaited.
describe('reportSafely', () => {
  const job = createJob(
    { repo: 'acme/widgets', source: { kind: 'cli' }, title: 't', requested_by: 'me' },
    { id: 'j-1', now: new Date() },
  );
  const quiet = { warn: () => {} } as unknown as Parameters<typeof reportSafely>[2];
  const flaky = (failures: { code: string }[]) => {
    const tries: string[] = [];
    return {
      tries,
      requester: {
        kind: 'flaky',
        handles: () => true,
        report: async (r: { kind: string }) => {
          tries.push(r.kind);
          const failure = failures.shift();
          if (failure) throw Object.assign(new Error(failure.code), failure);
        },
      },
    };
  };

  it('tries each report once: the platform client is the one retry layer', async () => {
    const blip = flaky([{ code: 'network' }]);
    expect(await reportSafely(blip.requester, { kind: 'cancelled', job, by: 'me' }, quiet)).toBe(false);
    expect(blip.tries).toHaveLength(1);
    expect(await reportSafely(blip.requester, { kind: 'cancelled', job, by: 'me' }, quiet)).toBe(true);
  });

  it('hands a given-up final report to onGiveUp with its error; never a delivered or progress one', async () => {
    const given: unknown[] = [];
    const onGiveUp = async (error: unknown) => {
      given.push(error);
    };
    const outage = flaky([{ code: 'forge_unavailable' }]);
    expect(
      await reportSafely(outage.requester, { kind: 'cancelled', job, by: 'me' }, quiet, undefined, { onGiveUp }),
    ).toBe(false);
    expect(given).toEqual([expect.objectContaining({ code: 'forge_unavailable' })]);
    await reportSafely(flaky([]).requester, { kind: 'cancelled', job, by: 'me' }, quiet, undefined, { onGiveUp });
    await reportSafely(
      flaky([{ code: 'forge_rejected' }]).requester,
      { kind: 'started', job, attempt: 1 },
      quiet,
      undefined,
      {
        onGiveUp,
      },
    );
    expect(given).toHaveLength(1);
    // Recording it failing is logged, not thrown.
    const failing = async () => {
      throw new Error('store down');
    };
    expect(
      await reportSafely(
        flaky([{ code: 'forge_rejected' }]).requester,
        { kind: 'cancelled', job, by: 'me' },
        quiet,
        undefined,
        {
          onGiveUp: failing,
        },
      ),
    ).toBe(false);
  });

  it('gives up a report nobody answers at its deadline, and the deadline reaches the adapter', async () => {
    const seen: AbortSignal[] = [];
    const silent = {
      kind: 'silent',
      handles: () => true,
      report: (_r: unknown, signal?: AbortSignal) => {
        if (signal !== undefined) seen.push(signal);
        return new Promise<void>(() => {});
      },
    };
    const given: unknown[] = [];
    const delivered = await reportSafely(silent, { kind: 'cancelled', job, by: 'me' }, quiet, undefined, {
      deadlineMs: 20,
      onGiveUp: async (error) => void given.push(error),
    });
    expect(delivered).toBe(false);
    expect(given).toEqual([expect.objectContaining({ code: 'network' })]);
    expect(seen.map((s) => s.aborted)).toEqual([true]);
  });
});

describe('jobReporter', () => {
  const job = createJob(
    { repo: 'acme/widgets', source: { kind: 'cli' }, title: 't', requested_by: 'me' },
    { id: 'j-2', now: new Date() },
  );
  const quiet = { warn: () => {} } as unknown as JobReporterOptions['log'];
  /** A requester whose every report waits until the test answers it. */
  const gated = () => {
    const sent: { report: Report; answer: () => void }[] = [];
    const requester = {
      kind: 'gated',
      handles: () => true,
      report: (report: Report) => new Promise<void>((resolve) => void sent.push({ report, answer: resolve })),
    };
    return { sent, requester };
  };
  const stageOf = (r: Report) => (r.kind === 'progress' ? r.stage : r.kind);

  it('never makes the job wait for progress: one in flight, the newest waiting replaces older ones', async () => {
    const { sent, requester } = gated();
    const reporter = jobReporter(requester, { log: quiet, progressGapMs: 0 });
    await reporter.tell({ kind: 'started', job, attempt: 1 });
    await reporter.tell({ kind: 'progress', job, stage: 'planning' });
    await reporter.tell({ kind: 'progress', job, stage: 'implementing' });
    expect(sent.map((s) => stageOf(s.report))).toEqual(['started']);
    sent[0]!.answer();
    await waitFor(() => sent.length === 2, { what: 'the newest progress sent' });
    expect(sent.map((s) => stageOf(s.report))).toEqual(['started', 'implementing']);
  });

  it('sends the final report after the edit in flight, dropping progress still waiting', async () => {
    const { sent, requester } = gated();
    const reporter = jobReporter(requester, { log: quiet, progressGapMs: 0 });
    await reporter.tell({ kind: 'progress', job, stage: 'planning' });
    await reporter.tell({ kind: 'progress', job, stage: 'testing' });
    const final = reporter.tell({ kind: 'cancelled', job, by: 'me' });
    await Promise.resolve();
    expect(sent).toHaveLength(1);
    sent[0]!.answer();
    await waitFor(() => sent.length === 2, { what: 'the final report sent' });
    sent[1]!.answer();
    await final;
    expect(sent.map((s) => stageOf(s.report))).toEqual(['planning', 'cancelled']);
  });

  it('journals a final report that misses its deadline, the silent edit before it included', async () => {
    const { sent, requester } = gated();
    const given: string[] = [];
    const reporter = jobReporter(requester, {
      log: quiet,
      deadlineMs: 30,
      onGiveUp: async (report) => void given.push(report.kind),
    });
    await reporter.tell({ kind: 'progress', job, stage: 'planning' });
    await reporter.tell({ kind: 'cancelled', job, by: 'me' });
    expect(given).toEqual(['cancelled']);
    expect(sent.map((s) => stageOf(s.report))).toEqual(['planning', 'cancelled']);
  });

  it('sends no progress within the gap after the last one; the final report does not wait for the gap', async () => {
    const { sent, requester } = gated();
    const reporter = jobReporter(requester, { log: quiet, progressGapMs: 60_000 });
    await reporter.tell({ kind: 'started', job, attempt: 1 });
    sent[0]!.answer();
    await reporter.tell({ kind: 'progress', job, stage: 'planning' });
    await reporter.tell({ kind: 'progress', job, stage: 'testing' });
    await new Promise((resolve) => setImmediate(resolve));
    expect(sent.map((s) => stageOf(s.report))).toEqual(['started']);
    const final = reporter.tell({ kind: 'cancelled', job, by: 'me' });
    await waitFor(() => sent.length === 2, { what: 'the final report sent' });
    sent[1]!.answer();
    await final;
    await reporter.tell({ kind: 'progress', job, stage: 'publishing' });
    expect(sent.map((s) => stageOf(s.report))).toEqual(['started', 'cancelled']);
  });
});
