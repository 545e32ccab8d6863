import { afterEach, describe, expect, it } from '@jest/globals';
import { waitFor } from '@codefleet/testkit';
import { ids, openHarness, type Harness } from './support/harness.js';

// A mention in the thread of a job still running is kept (the producer's defer hook, the
// follow-up processor in `codefleet serve`), and its status message edited when it starts.
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const bots = (h: Harness, channel: string, root: string) =>
  h.slack.thread(channel, root).filter((m) => m.bot_id !== undefined);

describe('Slack producer: follow-ups to a running job', () => {
  it('says the request is kept, hands it to defer, and edits the status message when it is queued later', async () => {
    h = await openHarness('socket', { keepFollowUps: true });
    const root = h.slack.mention({
      channel: ids.repoChannel,
      user: ids.alice,
      text: `<@${h.slack.botUserId}> fix the flaky parser test`,
    });
    await h.slack.socket.deliverEvent(root.body);
    await waitFor(() => h!.jobs().length === 1, { what: "the thread's job" });
    await h.producer.idle();
    h.running.set(root.ts, h.jobs()[0]!.id);

    const reply = h.slack.mention({
      channel: ids.repoChannel,
      user: ids.alice,
      text: `<@${h.slack.botUserId}> also document it`,
      thread_ts: root.ts,
    });
    await h.slack.socket.deliverEvent(reply.body, { retries: 1 });
    const jobId = h.jobs()[0]!.id;
    const status = await waitFor(
      () => bots(h!, ids.repoChannel, root.ts).find((m) => m.text.includes('I kept your request')),
      { what: 'the kept status' },
    );
    await h.producer.idle();
    expect(status.text).toContain(`follow-up on the same branch when job ${jobId} ends`);
    expect(h.jobs()).toHaveLength(1);
    expect(h.deferred).toHaveLength(1);
    expect(h.deferred[0]).toMatchObject({
      message: {
        messageId: reply.ts,
        thread: root.ts,
        text: 'also document it',
        statusMessageId: status.ts,
        deferFollowUp: true,
      },
      outcome: { kind: 'deferred', jobId, repo: 'acme/widgets' },
    });

    // The job ended: the processor hands the message in again and tells the producer.
    h.running.delete(root.ts);
    const outcome = await h.chat.handle(h.deferred[0]!.message);
    await h.producer.tell(h.deferred[0]!.message, outcome);
    expect(h.slack.message(ids.repoChannel, status.ts)?.text).toContain(`Queued as job ${h.jobs()[1]!.id}`);
  });

  it('without a defer hook the message is not marked deferrable and no follow-up is kept', async () => {
    h = await openHarness('socket');
    h.running.set('1790000000.000001', 'job-running');
    const { body } = h.slack.mention({
      channel: ids.repoChannel,
      user: ids.alice,
      text: `<@${h.slack.botUserId}> also document it`,
      thread_ts: '1790000000.000001',
    });
    await h.slack.socket.deliverEvent(body);
    await waitFor(() => h!.chat.handled.length === 1, { what: 'the message handled' });
    await h.producer.idle();
    expect(h.chat.handled[0]?.deferFollowUp).toBeUndefined();
    expect(h.deferred).toEqual([]);
  });

  it('says so plainly when the follow-up could not be kept', async () => {
    h = await openHarness('socket', { keepFollowUps: 'failing' });
    h.running.set('1790000000.000001', 'job-running');
    const { body } = h.slack.mention({
      channel: ids.repoChannel,
      user: ids.alice,
      text: `<@${h.slack.botUserId}> also document it`,
      thread_ts: '1790000000.000001',
    });
    await h.slack.socket.deliverEvent(body);
    const status = await waitFor(
      () => bots(h!, ids.repoChannel, '1790000000.000001').find((m) => m.text.includes("couldn't keep")),
      { what: 'the failure status' },
    );
    expect(status.text).toContain('Job job-running of this thread is still running');
    expect(h.logs.some((l) => l.event === 'slack.defer_failed')).toBe(true);
  });
});
