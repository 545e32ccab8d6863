/**
 * The requester conformance suite. Every adapter runs the same tests against its real client
 * code and a stand-in of its service on loopback (GitHub, Slack, LINE, an HTTP receiver):
 *
 *   requesterConformance({ name: 'slack', open: async () => ({ ... }) });
 *
 * Imported from `@codefleet/requester/conformance` inside a jest test file. It is test code:
 * it lives outside src/, never reaches dist/, and that subpath points at this TypeScript
 * file, which only jest (through ts-jest) and the type checker read.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import {
  advance,
  classify,
  CodefleetError,
  finish,
  newRun,
  startAttempt,
  type Job,
  type RunRecord,
} from '@codefleet/core';
import { scanForSecrets } from '@codefleet/log';
import type { Requester } from '../../src/port.js';

/** What the recipient sees of one job. */
export interface Observed {
  /** Every message sent for the job, oldest first, each as it reads now (after edits). */
  messages: string[];
  /** Marks on the request (labels on the issue, reactions on the message), sorted. */
  marks: string[];
}

/** One adapter opened against a fresh stand-in. */
export interface OpenedRequester {
  requester: Requester;
  /** A job this adapter reports for; `title` overrides the default title. */
  job(options?: { id?: string; title?: string }): Job;
  /** A job of a source this adapter must leave alone. */
  foreignJob: Job;
  /** Reads what the service now shows for `job`. */
  observe(job: Job): Promise<Observed>;
  /** A secret value the adapter was given to mask; it must never reach the service. */
  secret: string;
  /**
   * Fragments of the answer in the conformance test that would be live syntax on this
   * service (a Slack broadcast, a link); they must not reach it as written.
   */
  activeSyntax: string[];
  /** The marks each state leaves, when the service has marks (labels, reactions). */
  marks?: { running: string; done: string; failed: string };
  dispose(): Promise<void>;
}

/** How the suite reaches one adapter. */
export interface RequesterHarness {
  name: string;
  open(): Promise<OpenedRequester>;
}

const now = () => new Date('2026-11-24T08:00:00Z');

function runOf(job: Job): RunRecord {
  return startAttempt(newRun(job, { runId: job.id, now: now() }), { workerId: 'w1', now: now() });
}

/** A run that went all the way to publishing, ready to finish as succeeded. */
function publishedRun(job: Job): RunRecord {
  const stages = ['preparing', 'planning', 'implementing', 'testing', 'validating', 'publishing'] as const;
  return stages.reduce((run, stage) => advance(run, stage, { now: now() }), runOf(job));
}

export function requesterConformance(harness: RequesterHarness): void {
  describe(`requester conformance: ${harness.name}`, () => {
    let opened: OpenedRequester | undefined;
    const open = async () => (opened = await harness.open());
    afterEach(async () => {
      await opened?.dispose();
      opened = undefined;
    });

    it('handles its own jobs and leaves other sources alone', async () => {
      const o = await open();
      expect(o.requester.handles(o.job())).toBe(true);
      expect(o.requester.handles(o.foreignJob)).toBe(false);
    });

    it('reports a finished job with its pull request link, once, however often it is told', async () => {
      const o = await open();
      const job = o.job();
      await o.requester.report({ kind: 'queued', job });
      await o.requester.report({ kind: 'started', job, attempt: 1 });
      await o.requester.report({ kind: 'progress', job, stage: 'testing' });
      const run = finish(publishedRun(job), 'succeeded', { now: now(), dodResult: 'passed' });
      const pullRequest = { number: 42, url: 'https://forge.example/acme/widgets/pull/42', draft: false };
      await o.requester.report({ kind: 'finished', job, run, pullRequest });
      const first = await o.observe(job);
      expect(first.messages.some((m) => m.includes(pullRequest.url))).toBe(true);
      // One status message edited in place, plus at most an acknowledgement and a final reply.
      expect(first.messages.length).toBeLessThanOrEqual(3);
      // A redelivered job reports again: nothing new appears.
      await o.requester.report({ kind: 'finished', job, run, pullRequest });
      expect(await o.observe(job)).toEqual(first);
      if (o.marks) {
        expect(first.marks).toContain(o.marks.done);
        expect(first.marks).not.toContain(o.marks.running);
      }
    });

    it('reports a failure with its reason and how to retry, secrets masked', async () => {
      const o = await open();
      const job = o.job();
      await o.requester.report({ kind: 'started', job, attempt: 1 });
      const error = classify(
        new CodefleetError('test_failed', `tests failed; token ${o.secret} leaked`, { verdict: 'permanent' }),
      );
      const run = finish(runOf(job), 'failed', { now: now(), error });
      await o.requester.report({
        kind: 'failed',
        job,
        run,
        error,
        reason: `tests failed with ${o.secret} in the output`,
      });
      await o.requester.report({
        kind: 'failed',
        job,
        run,
        error,
        reason: `tests failed with ${o.secret} in the output`,
      });
      const seen = await o.observe(job);
      const all = seen.messages.join('\n');
      expect(all).toContain('test_failed');
      expect(all.toLowerCase()).toContain('retry');
      expect(all).not.toContain(o.secret);
      if (o.marks) {
        expect(seen.marks).toContain(o.marks.failed);
        expect(seen.marks).not.toContain(o.marks.running);
      }
    });

    it('a secret value reaches the service in no form: not in the title, nor encoded in the reason', async () => {
      const o = await open();
      const failing = o.job({ title: `Rotate ${o.secret} please` });
      // As an agent could print it into the output a reason quotes: hex as `xxd -p` wraps it, and base64.
      const dump = Buffer.from(`token=${o.secret}`)
        .toString('hex')
        .replace(/(.{60})/g, '$1\n');
      const encoded = Buffer.from(`key: ${o.secret}`).toString('base64');
      const error = classify(new CodefleetError('test_failed', 'tests failed', { verdict: 'permanent' }));
      const reason = `tests failed; output:\n${dump}\nconfig: ${encoded}`;
      await o.requester.report({
        kind: 'failed',
        job: failing,
        run: finish(runOf(failing), 'failed', { now: now(), error }),
        error,
        reason,
      });
      // Read now: an adapter may report every job of one issue in the same status comment.
      const seen = (await o.observe(failing)).messages;
      const finished = o.job({ title: `Use ${Buffer.from(o.secret).toString('hex').toUpperCase()} as key` });
      const pullRequest = { number: 7, url: 'https://forge.example/acme/widgets/pull/7', draft: false };
      await o.requester.report({
        kind: 'finished',
        job: finished,
        run: finish(publishedRun(finished), 'succeeded', { now: now(), dodResult: 'passed' }),
        pullRequest,
      });
      const all = [...seen, ...(await o.observe(finished)).messages].join('\n');
      expect(all).toContain('test_failed');
      expect(all).toContain(pullRequest.url);
      expect(scanForSecrets([{ file: 'sent', added: all }], [o.secret])).toEqual([]);
    });

    it('a job reported only after it ends (a dead letter) still gets its final report', async () => {
      const o = await open();
      const job = o.job();
      const error = classify(
        new CodefleetError('lease_lost', 'the job was dead-lettered without finishing', { verdict: 'permanent' }),
      );
      const run = finish(runOf(job), 'failed', { now: now(), error });
      await o.requester.report({ kind: 'failed', job, run, error, reason: 'dead-lettered after 4 attempts' });
      expect((await o.observe(job)).messages.join('\n')).toContain('lease_lost');
    });

    it('reports a cancel with who asked', async () => {
      const o = await open();
      const job = o.job();
      await o.requester.report({ kind: 'started', job, attempt: 1 });
      await o.requester.report({ kind: 'cancelled', job, by: 'carol' });
      const all = (await o.observe(job)).messages.join('\n');
      expect(all).toContain('carol');
      expect(all.toLowerCase()).toContain('cancel');
    });

    it('posts an answer as text: no mentions, links or code-block break-outs of its own', async () => {
      const o = await open();
      const job = o.job({ title: 'Explain <!channel> @everyone [x](https://evil.example)' });
      const run = finish(publishedRun(job), 'succeeded', { now: now() });
      const answer =
        'The parser lives in src/parse.ts.\n```\n<!channel> @everyone [click](https://evil.example) <https://evil.example|here>';
      await o.requester.report({ kind: 'answered', job, run, answer });
      const all = (await o.observe(job)).messages.join('\n');
      expect(all).toContain('src/parse.ts');
      for (const fragment of o.activeSyntax) expect(all).not.toContain(fragment);
    });
  });
}
