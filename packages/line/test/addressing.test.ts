import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { silentLogger } from '@codefleet/log';
import { startLineStandIn, type LineStandIn } from '@codefleet/testkit';
import { createLineWebhook, type LineWebhook } from '../src/index.js';
import { lineConfig, openBackends, recordingChat } from './helpers.js';

// In a group or room people talk to each other: the bot answers only when addressed.
let line: LineStandIn;
let backends: Awaited<ReturnType<typeof openBackends>>;
let webhook: LineWebhook | undefined;
let chat: ReturnType<typeof recordingChat>;

beforeEach(async () => {
  line = await startLineStandIn();
  backends = await openBackends();
  chat = recordingChat(backends.queue);
});
afterEach(async () => {
  await webhook?.close();
  webhook = undefined;
  await line.close();
  await backends.dispose();
});

async function start(section: Record<string, unknown> = {}): Promise<LineWebhook> {
  webhook = createLineWebhook({
    config: lineConfig(line, section),
    chat,
    store: backends.store,
    inbox: backends.inbox,
    log: silentLogger(),
  });
  await webhook.listen();
  return webhook;
}

const group = `C${'c'.repeat(32)}`;
const room = `R${'d'.repeat(32)}`;

describe('LINE groups and rooms', () => {
  it('answers in a group only a message that mentions the bot, with the mention taken off the text', async () => {
    const w = await start();
    const chatter = line.textEvent({ text: 'lunch at noon?', groupId: group });
    const otherMention = line.textEvent({
      text: '@bob can you look?',
      groupId: group,
      mentions: [{ index: 0, length: 4, isSelf: false }],
    });
    const forBot = line.textEvent({
      text: 'hey @codefleet 🧪 what does the parser do?',
      groupId: group,
      mentions: [{ index: 4, length: 10, isSelf: true }],
    });
    expect((await line.deliver(w.url, [chatter, otherMention, forBot])).status).toBe(200);
    await w.idle();
    expect(chat.seen.map((m) => m.text)).toEqual(['hey 🧪 what does the parser do?']);
    expect(line.replies.map((r) => r.to)).toEqual([group]);
  });

  it('answers in a room a message that starts with the configured prefix, and nothing else', async () => {
    const w = await start({ group_prefix: 'codefleet' });
    const events = [
      line.textEvent({ text: 'codefleetish is a word?', roomId: room }),
      line.textEvent({ text: 'Codefleet: explain the retry policy', roomId: room }),
      line.textEvent({ text: 'what did codefleet say?', roomId: room }),
    ];
    expect((await line.deliver(w.url, events)).status).toBe(200);
    await w.idle();
    expect(chat.seen.map((m) => m.text)).toEqual(['explain the retry policy']);
    expect(line.replies.map((r) => r.to)).toEqual([room]);
  });

  it('answers every message of a one-to-one chat, prefix or not', async () => {
    const w = await start({ group_prefix: 'codefleet' });
    expect((await line.deliver(w.url, [line.textEvent({ text: 'hello there' })])).status).toBe(200);
    await w.idle();
    expect(chat.seen.map((m) => m.text)).toEqual(['hello there']);
    expect(line.replies).toHaveLength(1);
  });
});
