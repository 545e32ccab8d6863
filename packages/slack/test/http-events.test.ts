import { afterEach, describe, expect, it } from '@jest/globals';
import { waitFor } from '@codefleet/testkit';
import { ids, openHarness, type Harness } from './support/harness.js';

// The real Bolt app's HTTP receiver (signature verification by Bolt) against signed
// deliveries from the Slack stand-in.
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('Slack producer over HTTP events', () => {
  it.each([
    ['on a port of its own', false],
    ["mounted on another server (serve's one port)", true],
  ])('turns a mention into one job even when Slack retries the delivery three times, %s', async (_where, mounted) => {
    h = await openHarness('http', { mounted });
    const url = h.eventsUrl!;
    const { ts, body } = h.slack.mention({
      channel: ids.repoChannel,
      user: ids.alice,
      text: `<@${h.slack.botUserId}> fix the flaky parser test`,
    });
    expect((await h.slack.postEvent(url, body)).status).toBe(200);
    for (const retryNum of [1, 2, 3])
      expect((await h.slack.postEvent(url, body, { retryNum, retryReason: 'http_timeout' })).status).toBe(200);
    // Each 200 came after the record; the retries are the same record, or stop at the message claim.
    expect(h.logs.filter((l) => l.event === 'chat.inbox_recorded')).toHaveLength(4);
    await h.producer.idle();
    expect(h.chat.handled).toHaveLength(1);
    expect((await h.queue.stats()).ready).toBe(1);
    const replies = h.slack.thread(ids.repoChannel, ts).filter((m) => m.bot_id !== undefined);
    expect(replies.map((m) => m.text)).toEqual([expect.stringContaining('Queued as job')]);
  });

  it('acknowledges at once and does the work afterwards, however slow the chat service is', async () => {
    let open!: () => void;
    h = await openHarness('http', {
      gate: new Promise<void>((resolve) => {
        open = resolve;
      }),
    });
    const { ts, body } = h.slack.mention({
      channel: ids.repoChannel,
      user: ids.alice,
      text: `<@${h.slack.botUserId}> fix the flaky parser test`,
    });
    expect((await h.slack.postEvent(h.eventsUrl!, body)).status).toBe(200);
    // Acknowledged while the chat service has the message and has not answered.
    await waitFor(() => h!.chat.handled.length === 1, { what: 'the chat service to have the message' });
    expect(h.jobs()).toEqual([]);
    expect(
      h.slack
        .thread(ids.repoChannel, ts)
        .filter((m) => m.bot_id !== undefined)
        .map((m) => m.text),
    ).toEqual([expect.stringContaining('Looking at your request')]);
    open();
    await waitFor(() => h!.jobs().length === 1, { what: 'the job' });
  });

  it("answers Slack's URL verification challenge (set-up of the Request URL)", async () => {
    h = await openHarness('http');
    const reply = await h.slack.postEvent(h.eventsUrl!, {
      token: 'legacy',
      challenge: 'c-3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P',
      type: 'url_verification',
    });
    expect(reply.status).toBe(200);
    expect(reply.body).toContain('c-3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P');
  });

  it('answers 401 to a forged signature or a replayed old request, and queues nothing', async () => {
    h = await openHarness('http');
    const url = h.eventsUrl!;
    const forged = h.slack.mention({
      channel: ids.repoChannel,
      user: ids.alice,
      text: `<@${h.slack.botUserId}> repo=acme/widgets delete everything`,
    });
    expect((await h.slack.postEvent(url, forged.body, { forge: 'not-the-signing-secret' })).status).toBe(401);
    // Signed with the right secret but six minutes old: outside Bolt's 5-minute window.
    const replayed = h.slack.mention({
      channel: ids.repoChannel,
      user: ids.alice,
      text: `<@${h.slack.botUserId}> repo=acme/widgets again`,
    });
    expect(
      (await h.slack.postEvent(url, replayed.body, { timestamp: Math.floor(Date.now() / 1000) - 360 })).status,
    ).toBe(401);
    // A genuine delivery afterwards goes through: the refusals above were about the signatures.
    const genuine = h.slack.mention({
      channel: ids.repoChannel,
      user: ids.alice,
      text: `<@${h.slack.botUserId}> a genuine one`,
    });
    expect((await h.slack.postEvent(url, genuine.body)).status).toBe(200);
    await waitFor(() => h!.chat.handled.length === 1, { what: 'the genuine request' });
    await h.producer.idle();
    expect(h.chat.handled.map((m) => m.messageId)).toEqual([genuine.ts]);
    expect((await h.queue.stats()).ready).toBe(1);
    expect(h.slack.thread(ids.repoChannel, forged.ts)).toHaveLength(1);
  });

  it('refuses an unmapped user politely, in the thread, and queues nothing', async () => {
    h = await openHarness('http');
    const { ts, body } = h.slack.mention({
      channel: ids.repoChannel,
      user: ids.nobody,
      text: `<@${h.slack.botUserId}> rewrite the billing module`,
    });
    expect((await h.slack.postEvent(h.eventsUrl!, body)).status).toBe(200);
    const status = await waitFor(
      () => h!.slack.thread(ids.repoChannel, ts).find((m) => m.bot_id !== undefined && m.text.includes('Sorry')),
      { what: 'the refusal' },
    );
    expect(h.chat.handled[0]?.access).toEqual({ allowedLocal: false });
    expect(status.text).toContain('GitHub login');
    expect((await h.queue.stats()).ready).toBe(0);
  });

  it('asks in words when the message is too long to keep for the buttons', async () => {
    h = await openHarness('http');
    const { ts, body } = h.slack.mention({
      channel: ids.otherChannel,
      user: ids.alice,
      text: `<@${h.slack.botUserId}> ${'add a health check. '.repeat(300)}`,
    });
    await h.slack.postEvent(h.eventsUrl!, body);
    const status = await waitFor(
      () =>
        h!.slack.thread(ids.otherChannel, ts).find((m) => m.bot_id !== undefined && m.text.includes('repo=owner/name')),
      { what: 'the question in words' },
    );
    expect(status.blocks).toBeUndefined();
  });

  it("asks for the repository with buttons, and the asker's click queues the original request there", async () => {
    h = await openHarness('http');
    const url = h.eventsUrl!;
    const s = h.slack;
    const { ts, body } = s.mention({
      channel: ids.otherChannel,
      user: ids.alice,
      text: `<@${s.botUserId}> add a health check`,
    });
    await s.postEvent(url, body);
    const question = await waitFor(
      () => s.thread(ids.otherChannel, ts).find((m) => m.bot_id !== undefined && m.blocks !== undefined),
      { what: 'the question' },
    );
    const buttons =
      (question.blocks as { type: string; elements?: { action_id: string; value: string }[] }[]).find(
        (b) => b.type === 'actions',
      )?.elements ?? [];
    expect(buttons.map((b) => b.value)).toEqual(['acme/widgets', 'acme/gadgets']);
    const gadgets = buttons[1]!;
    await h.producer.idle();
    // Someone else's click, and a value that was never offered, are ignored.
    const click = (user: string, value: string) =>
      s.postEvent(
        url,
        s.buttonClick({ channel: ids.otherChannel, messageTs: question.ts, user, actionId: gadgets.action_id, value }),
        { interactive: true },
      );
    expect((await click(ids.mallory, 'acme/gadgets')).status).toBe(200);
    expect((await click(ids.alice, 'evil/repo')).status).toBe(200);
    await waitFor(() => h!.logs.filter((l) => l.event === 'slack.choice_ignored').length === 2, {
      what: 'two ignored clicks',
    });
    expect((await click(ids.alice, 'acme/gadgets')).status).toBe(200);
    expect((await click(ids.alice, 'acme/gadgets')).status).toBe(200);
    await waitFor(() => h!.jobs().length === 1, { what: 'the job' });
    await h.producer.idle();
    const job = h.jobs()[0]!;
    expect(job.repo).toBe('acme/gadgets');
    expect(job.source).toMatchObject({
      channel: ids.otherChannel,
      thread_id: ts,
      message_id: ts,
      status_message_id: question.ts,
    });
    expect(h.chat.handled.map((m) => m.text)).toEqual(['add a health check', 'add a health check repo=acme/gadgets']);
    const status = s.message(ids.otherChannel, question.ts)!;
    expect(status.text).toContain('Queued as job');
    expect(status.blocks).toBeUndefined();
  });
});
