import { afterEach, describe, expect, it } from '@jest/globals';
import { waitFor } from '@codefleet/testkit';
import { ids, openHarness, type Harness } from './support/harness.js';

// The real Bolt app in Socket Mode against the Slack stand-in: apps.connections.open with the
// app token, the WebSocket, envelopes and acks.
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const bots = (h: Harness, channel: string, root: string) =>
  h.slack.thread(channel, root).filter((m) => m.bot_id !== undefined);

describe('Slack producer over Socket Mode', () => {
  it('turns a mention into one job, one status message and one reaction, however often Slack redelivers it', async () => {
    h = await openHarness('socket');
    const { ts, body } = h.slack.mention({
      channel: ids.repoChannel,
      user: ids.alice,
      text: `<@${h.slack.botUserId}> fix the flaky parser test`,
    });
    // The original and three redeliveries (retry_attempt 1..3), as Slack sends when an ack is late.
    const envelopes = await h.slack.socket.deliverEvent(body, { retries: 3 });
    expect(envelopes.map((e) => [e.retry_attempt, e.acked])).toEqual([
      [0, true],
      [1, true],
      [2, true],
      [3, true],
    ]);
    // Every delivery was acked only once recorded; the redeliveries are the same record, or stop at the message claim.
    expect(h.logs.filter((l) => l.event === 'chat.inbox_recorded')).toHaveLength(4);
    await h.producer.idle();
    const status = await waitFor(() => bots(h!, ids.repoChannel, ts).find((m) => m.text.includes('Queued as job')), {
      what: 'the status message to say queued',
    });
    expect(h.chat.handled).toHaveLength(1);
    expect(h.chat.handled[0]).toMatchObject({
      platform: 'slack',
      channel: ids.repoChannel,
      thread: ts,
      messageId: ts,
      user: ids.alice,
      text: 'fix the flaky parser test',
      access: { login: 'alice-gh', allowedLocal: false },
      repoHints: ['acme/widgets'],
      statusMessageId: status.ts,
    });
    expect((await h.queue.stats()).ready).toBe(1);
    expect(bots(h, ids.repoChannel, ts)).toHaveLength(1);
    expect(h.slack.message(ids.repoChannel, ts)?.reactions).toEqual({ eyes: [h.slack.botUserId] });
    expect(h.jobs()[0]?.source).toMatchObject({
      kind: 'chat',
      platform: 'slack',
      channel: ids.repoChannel,
      thread_id: ts,
      message_id: ts,
      status_message_id: status.ts,
    });
  });

  it('reconnects when Slack asks it to, and keeps taking requests', async () => {
    h = await openHarness('socket');
    h.slack.socket.disconnect('refresh_requested');
    await waitFor(() => h!.slack.socket.opened === 2 && h!.slack.socket.connections === 1, {
      what: 'a second Socket Mode connection',
    });
    expect(
      h.slack.calls.filter((c) => c.method === 'apps.connections.open').every((c) => c.token === h!.slack.appToken),
    ).toBe(true);
    const { body } = h.slack.mention({
      channel: ids.repoChannel,
      user: ids.alice,
      text: `<@${h.slack.botUserId}> add a changelog entry`,
    });
    await h.slack.socket.deliverEvent(body);
    await waitFor(() => h!.jobs().length === 1, { what: 'a job' });
  });

  it('starts work from a direct message', async () => {
    h = await openHarness('socket');
    const { ts, body } = h.slack.directMessage({
      channel: ids.aliceDm,
      user: ids.alice,
      text: 'repo=acme/gadgets bump the lockfile',
    });
    await h.slack.socket.deliverEvent(body);
    await waitFor(() => h!.jobs().length === 1, { what: 'a job' });
    await h.producer.idle();
    expect(h.jobs().map((j) => j.repo)).toEqual(['acme/gadgets']);
    expect(bots(h, ids.aliceDm, ts)[0]?.text).toContain('Queued as job');
  });

  it('edits the status message into an immediate reply, as text, and passes the allow-list on', async () => {
    h = await openHarness('socket');
    const { ts, body } = h.slack.mention({
      channel: ids.otherChannel,
      user: ids.local,
      text: `<@${h.slack.botUserId}> /chat hello <!channel> <https://evil.example|docs> &lt;!here&gt;`,
    });
    await h.slack.socket.deliverEvent(body);
    const status = await waitFor(() => bots(h!, ids.otherChannel, ts).find((m) => m.text.startsWith('You said')), {
      what: 'the reply',
    });
    // Read as the user wrote it, and said back as text: neither the broadcast nor the typed `<!here>` is live.
    expect(h.chat.handled[0]?.text).toBe('/chat hello @channel docs (https://evil.example) <!here>');
    expect(status.text).toBe('You said: hello @channel docs (https://evil.example) &lt;!here&gt;');
    expect(h.chat.handled[0]?.access).toEqual({ allowedLocal: true });
    expect(h.chat.handled[0]?.repoHints).toEqual([]);
    expect(h.jobs()).toEqual([]);
  });

  it('ignores bot messages, edits, other subtypes and its own messages', async () => {
    h = await openHarness('socket');
    const s = h.slack;
    const events = [
      {
        type: 'message',
        subtype: 'bot_message',
        bot_id: 'B0OTHER',
        text: 'repo=acme/widgets deploy',
        ts: '1790000100.000001',
        channel: ids.aliceDm,
        channel_type: 'im',
      },
      {
        type: 'message',
        subtype: 'message_changed',
        hidden: true,
        channel: ids.aliceDm,
        channel_type: 'im',
        ts: '1790000100.000002',
        message: { type: 'message', user: ids.alice, text: 'repo=acme/widgets edited', ts: '1790000100.000003' },
      },
      {
        type: 'message',
        subtype: 'channel_join',
        user: ids.alice,
        text: 'joined',
        ts: '1790000100.000004',
        channel: ids.aliceDm,
        channel_type: 'im',
      },
      {
        type: 'message',
        user: s.botUserId,
        text: 'repo=acme/widgets my own words',
        ts: '1790000100.000005',
        channel: ids.aliceDm,
        channel_type: 'im',
      },
      {
        type: 'app_mention',
        bot_id: 'B0OTHER',
        user: 'U0OTHERBOT',
        text: `<@${s.botUserId}> repo=acme/widgets go`,
        ts: '1790000100.000006',
        channel: ids.repoChannel,
      },
      // A plain channel message (no mention, not a DM) is not for us either.
      {
        type: 'message',
        user: ids.alice,
        text: 'repo=acme/widgets chatter',
        ts: '1790000100.000007',
        channel: ids.repoChannel,
        channel_type: 'channel',
      },
    ];
    for (const event of events) await s.socket.deliverEvent(s.eventBody(event));
    // A DM after them is taken: the ones before were seen and dropped, not still on their way.
    const { body } = s.directMessage({
      channel: ids.aliceDm,
      user: ids.alice,
      text: 'repo=acme/widgets a real request',
    });
    await s.socket.deliverEvent(body);
    await waitFor(() => h!.chat.handled.length > 0, { what: 'the DM to be handled' });
    await h.producer.idle();
    expect(h.chat.handled.map((m) => m.text)).toEqual(['repo=acme/widgets a real request']);
    expect(s.socket.sent.every((e) => e.acked)).toBe(true);
  });
});
