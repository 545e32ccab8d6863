import { afterEach, describe, expect, it } from '@jest/globals';
import { inboxJob } from '@codefleet/chat';
import { defaultWaitMs, waitFor } from '@codefleet/testkit';
import { messageKey } from '../src/request-keys.js';
import { ids, openHarness, type Harness } from './support/harness.js';

// The producer records a Slack event before the ack and works from the record.
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const bots = (h: Harness, channel: string, root: string) =>
  h.slack.thread(channel, root).filter((m) => m.bot_id !== undefined);

describe('Slack inbox', () => {
  it('answers 500 when the event cannot be recorded, and the retry Slack then sends is handled once', async () => {
    h = await openHarness('http');
    const { ts, body } = h.slack.mention({
      channel: ids.repoChannel,
      user: ids.alice,
      text: `<@${h.slack.botUserId}> fix the parser`,
    });
    const enqueue = h.inbox.enqueue.bind(h.inbox);
    h.inbox.enqueue = async () => {
      throw new Error('the disk is full');
    };
    expect((await h.slack.postEvent(h.eventsUrl!, body)).status).toBe(500);
    h.inbox.enqueue = enqueue;
    expect((await h.slack.postEvent(h.eventsUrl!, body, { retryNum: 1, retryReason: 'http_error' })).status).toBe(200);
    await waitFor(() => h!.jobs().length === 1, { what: 'the job' });
    await h.producer.idle();
    expect(h.chat.handled).toHaveLength(1);
    expect(bots(h, ids.repoChannel, ts).map((m) => m.text)).toEqual([expect.stringContaining('Queued as job')]);
  });

  it("does not ack a Socket Mode envelope it could not record: Slack's redelivery is handled once", async () => {
    h = await openHarness('socket');
    const { ts, body } = h.slack.mention({
      channel: ids.repoChannel,
      user: ids.alice,
      text: `<@${h.slack.botUserId}> fix the parser`,
    });
    const enqueue = h.inbox.enqueue.bind(h.inbox);
    let refused = 0;
    h.inbox.enqueue = async (job) => {
      if (refused === 0) {
        refused += 1;
        throw new Error('the disk is full');
      }
      return enqueue(job);
    };
    // The refused envelope is left unacked for a second, then redelivered; the redelivery's
    // ack must come, and a loaded machine can take longer than that to send it (a late ack
    // would draw a third delivery).
    const envelopes = await h.slack.socket.deliverEvent(body, {
      ackTimeoutMs: (attempt) => (attempt === 0 ? 1_000 : defaultWaitMs()),
    });
    expect(envelopes.map((e) => [e.retry_attempt, e.acked])).toEqual([
      [0, false],
      [1, true],
    ]);
    await waitFor(() => h!.jobs().length === 1, { what: 'the job' });
    await h.producer.idle();
    expect(bots(h, ids.repoChannel, ts)).toHaveLength(1);
  });

  it('finishes a recorded mention whose first handling died after queuing its job, editing the status message it posted', async () => {
    h = await openHarness('socket');
    const s = h.slack;
    const { ts } = s.mention({ channel: ids.repoChannel, user: ids.alice, text: `<@${s.botUserId}> fix the parser` });
    // What a process killed mid-way leaves: its claim with the status message it posted, and its record handed out once.
    const posted = await fetch(`${s.apiUrl}chat.postMessage`, {
      method: 'POST',
      headers: { authorization: `Bearer ${s.botToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ channel: ids.repoChannel, thread_ts: ts, text: ':eyes: Looking at your request…' }),
    }).then((r) => r.json() as Promise<{ ts: string }>);
    await h.store.bindRequest(messageKey(ids.repoChannel, ts), posted.ts, 60_000);
    // It had even queued the job, and died before editing the status message to say so.
    await h.chat.handle({
      platform: 'slack',
      channel: ids.repoChannel,
      thread: ts,
      messageId: ts,
      user: ids.alice,
      text: 'fix the parser',
      access: { login: 'alice-gh', allowedLocal: false },
      repoHints: ['acme/widgets'],
      statusMessageId: posted.ts,
    });
    const record = {
      kind: 'message',
      channel: ids.repoChannel,
      ts,
      user: ids.alice,
      text: `<@${s.botUserId}> fix the parser`,
      botUserId: s.botUserId,
      files: 0,
    };
    await h.producer.stop();
    await h.inbox.enqueue(inboxJob('slack', `msg:${ids.repoChannel}:${ts}`, record, new Date()));
    const first = await h.inbox.claim({ workerId: 'killed', waitMs: 0 });
    await first!.retry({ delayMs: 0, reason: 'the process died' });
    await h.producer.start();
    await waitFor(() => bots(h!, ids.repoChannel, ts)[0]?.text.includes('job'), { what: 'the status message edited' });
    await h.producer.idle();
    const status = bots(h, ids.repoChannel, ts);
    expect(status.map((m) => m.ts)).toEqual([posted.ts]);
    expect(status[0]?.text).toContain('Queued as job');
    expect(h.chat.handled.map((m) => m.text)).toEqual(['fix the parser', 'fix the parser']);
    expect(h.jobs()).toHaveLength(1);
  });

  it('reads the text as the user typed it: entities decoded, a linked repository as its URL', async () => {
    h = await openHarness('socket');
    const { body } = h.slack.directMessage({
      channel: ids.aliceDm,
      user: ids.alice,
      text: 'repo=<https://github.com/acme/gadgets> make a &lt; b &amp;&amp; c &gt; d hold',
    });
    await h.slack.socket.deliverEvent(body);
    await waitFor(() => h!.chat.handled.length === 1, { what: 'the message' });
    await h.producer.idle();
    expect(h.chat.handled[0]?.text).toBe('repo=https://github.com/acme/gadgets make a < b && c > d hold');
  });

  it('answers a DM that is only a file, saying files are not read, and queues nothing', async () => {
    h = await openHarness('socket');
    const s = h.slack;
    const file = { id: 'F0LOG', name: 'build.log', mimetype: 'text/plain' };
    const dm = (text: string, ts: string) =>
      s.eventBody({
        type: 'message',
        subtype: 'file_share',
        user: ids.alice,
        text,
        files: [file],
        ts,
        channel: ids.aliceDm,
        channel_type: 'im',
      });
    const root = s.directMessage({ channel: ids.aliceDm, user: ids.alice, text: '' });
    await s.socket.deliverEvent(dm('', root.ts));
    const answer = await waitFor(() => bots(h!, ids.aliceDm, root.ts).find((m) => m.text.includes('files')), {
      what: 'the answer about files',
    });
    expect(answer.text).toContain('only read the text');
    expect(h.chat.handled).toEqual([]);
    // With text beside the file, the text is the request, and the status message says the file was not read.
    const withText = s.directMessage({
      channel: ids.aliceDm,
      user: ids.alice,
      text: 'repo=acme/widgets fix what this log shows',
    });
    await s.socket.deliverEvent(dm('repo=acme/widgets fix what this log shows', withText.ts));
    await waitFor(() => h!.jobs().length === 1, { what: 'the job' });
    await h.producer.idle();
    expect(s.message(ids.aliceDm, bots(h, ids.aliceDm, withText.ts)[0]!.ts)?.edits[0]).toContain('not attached files');
  });
});
