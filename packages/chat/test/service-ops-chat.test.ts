import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { newRun } from '@codefleet/core';
import { closedPort, startOllamaStandIn, type OllamaStandIn } from '@codefleet/testkit';
import { opsHelp, type ChatMessage, type PermissionCheck } from '../src/index.js';
import { messageOf, openHarness, type Harness } from './helpers.js';

describe('chat service: OPS, CHAT and platform policy', () => {
  let ollama: OllamaStandIn;
  let h: Harness;
  const permission: PermissionCheck = async (_repo, login) => (login === 'carol' ? 'maintain' : 'read');
  beforeAll(async () => {
    ollama = await startOllamaStandIn({ models: ['qwen2.5-coder:1.5b'] });
  });
  afterAll(async () => {
    await ollama.close();
  });
  beforeEach(async () => {
    h = await openHarness(ollama.url, async (repo, login) => (login === 'alice' ? 'write' : permission(repo, login)));
  });
  afterEach(async () => {
    await h.close();
  });

  const reply = async (message: ChatMessage, tree?: Record<string, unknown>) => {
    const outcome = await h.service(tree).handle(message);
    expect(outcome.kind).toBe('reply');
    return outcome.kind === 'reply' ? outcome.text : '';
  };
  const queueJob = async (id: string, extra: Partial<ChatMessage> = {}) =>
    h
      .service({}, { id: () => id })
      .handle(messageOf(`/code task ${id} repo=acme/api`, { messageId: id, thread: id, ...extra }));

  it('CHAT answers from the local model, bounded by router.chat.max_tokens, in plain text', async () => {
    ollama.reply('  Hello! Ask me with /code to change code.  ');
    const outcome = await h
      .service({ router: { chat: { host: ollama.url, max_tokens: 128 } } })
      .handle(messageOf('/chat hi there', { access: { allowedLocal: false } }));
    expect(outcome).toEqual({
      kind: 'reply',
      text: 'Hello! Ask me with /code to change code.',
      route: { name: 'CHAT', source: 'command', confidence: 1, reason: 'explicit /chat' },
    });
    const request = ollama.requests.at(-1)!;
    expect(request).toMatchObject({ api: 'ollama', model: 'qwen2.5-coder:1.5b', options: { num_predict: 128 } });
    expect(request.messages.at(-1)).toEqual({ role: 'user', content: 'hi there' });
    expect((await h.queue.stats()).depth).toBe(0);
  });

  it('CHAT cuts a long answer between characters, never through an emoji', async () => {
    const thumb = '\u{1F44D}\u{1F3FD}'; // 👍🏽: an emoji and its skin tone, 4 UTF-16 units
    ollama.reply(`${'a'.repeat(2_997)}${thumb} and more`);
    const text = await reply(messageOf('/chat say a lot'), { router: { chat: { host: ollama.url } } });
    expect(text).toBe(`${'a'.repeat(2_997)}…`);
  });

  it('CHAT through an OpenAI-compatible local server too; the fallback route answers the same way', async () => {
    ollama.reply('Fine, thanks.');
    const text = await reply(messageOf('how are you?'), {
      router: { chat: { provider: 'openai', host: ollama.openAiBase } },
    });
    expect(text).toBe('Fine, thanks.');
    expect(ollama.requests.at(-1)).toMatchObject({ api: 'openai', options: { max_tokens: 512 } });
  });

  it('CHAT without a reachable local model, or with a cloud one configured, says so plainly and calls nothing remote', async () => {
    const closed = `http://127.0.0.1:${await closedPort()}`;
    expect(await reply(messageOf('/chat hi'), { router: { chat: { host: closed } } })).toMatch(
      /^The local chat model \(qwen2.5-coder:1.5b at http:\/\/127.0.0.1:\d+\) is not reachable right now/,
    );
    const asked = ollama.requests.length;
    const cloud = await reply(messageOf('/chat hi'), {
      router: { chat: { provider: 'openai', host: 'https://api.openai.com/v1' } },
    });
    expect(cloud).toContain('I only chat through a local model');
    expect(ollama.requests.length).toBe(asked);
    expect(
      await reply(messageOf('/chat hi'), { router: { chat: { host: ollama.url, model: 'missing:1b' } } }),
    ).toContain('does not have the chat model missing:1b');
  });

  it('LINE forces CHAT: a /code message is answered, not queued; allow_code lets it through', async () => {
    ollama.reply('I can only chat here.');
    const line = (text: string, policy: ChatMessage['policy']) =>
      messageOf(text, {
        platform: 'line',
        channel: 'Uabc',
        thread: 'Uabc',
        messageId: `m-${text.length}-${String(policy?.allowExplicitCode)}`,
        policy,
      });
    const forced = await h.service().handle(line('/code fix it repo=acme/api', { forceRoute: 'CHAT' }));
    expect(forced).toMatchObject({
      kind: 'reply',
      text: 'I can only chat here.',
      route: { name: 'CHAT', source: 'forced' },
    });
    expect((await h.queue.stats()).depth).toBe(0);
    const allowed = await h
      .service()
      .handle(line('/code fix it repo=acme/api', { forceRoute: 'CHAT', allowExplicitCode: true }));
    expect(allowed).toMatchObject({ kind: 'enqueued', route: { name: 'CODE', source: 'command' } });
    expect(await h.take()).toMatchObject({ source: { kind: 'chat', platform: 'line', channel: 'Uabc' } });
  });

  it('OPS queue reports depth, in flight and dead letters', async () => {
    await queueJob('q1');
    await queueJob('q2');
    await queueJob('q3');
    const lease = await h.queue.claim({ workerId: 'w' });
    await lease!.deadLetter('gave up');
    await h.queue.claim({ workerId: 'w' });
    expect(await reply(messageOf('/ops queue', { access: { allowedLocal: false } }))).toBe(
      'Queue: 1 waiting (1 ready, 0 delayed), 1 in flight, 1 dead-lettered.',
    );
  });

  it("OPS status lists the sender's own recent jobs", async () => {
    await queueJob('mine-1');
    await queueJob('theirs', { access: { login: 'carol', allowedLocal: false }, user: 'U2' });
    for (let i = 0; i < 2; i += 1) {
      const job = (await h.take())!;
      await h.store.save({
        ...newRun(job, { runId: job.id, now: new Date('2026-11-24T08:00:00Z') }),
        stage: 'done',
        outcome: 'succeeded',
      });
    }
    const text = await reply(messageOf('/ops status'));
    expect(text).toContain('mine-1  acme/api  done, succeeded');
    expect(text).not.toContain('theirs');
    // Titles are the users' own words: not quoted back.
    expect(text).not.toContain('task mine-1');
    expect(await reply(messageOf('/ops status', { access: { allowedLocal: false }, user: 'U9' }))).toContain(
      'You have no recent jobs',
    );
  });

  it('OPS cancel: the requester or a maintainer may cancel a queued job; others may not', async () => {
    await queueJob('c1');
    const refused = await reply(
      messageOf('/ops cancel c1', { user: 'U7', access: { login: 'mallory', allowedLocal: false } }),
    );
    expect(refused).toContain('Only the person who asked for job c1');
    expect(await h.store.cancelRequested('chat:slack:C1:c1:c1')).toBeUndefined();
    expect(await reply(messageOf('/ops cancel c1'))).toContain('Cancel requested for job c1');
    expect(await h.store.cancelRequested('chat:slack:C1:c1:c1')).toMatchObject({ by: 'alice' });
    // A maintainer of the repository may cancel someone else's job.
    await queueJob('c2');
    expect(
      await reply(messageOf('/ops cancel c2', { user: 'U3', access: { login: 'carol', allowedLocal: false } })),
    ).toContain('Cancel requested');
    expect(await h.store.cancelRequested('chat:slack:C1:c2:c2')).toMatchObject({ by: 'carol' });
    expect(await reply(messageOf('/ops cancel nope'))).toBe('I know no job nope.');
    expect(await reply(messageOf('/ops cancel'))).toBe('Usage: /ops cancel <job id>');
    // Each cancel that happened is in the journal, with who asked and from where; the refused one is not.
    expect(await h.store.journal()).toEqual([
      {
        kind: 'action',
        action: 'cancel',
        jobId: 'c2',
        taskKey: 'chat:slack:C1:c2:c2',
        by: 'carol',
        via: 'chat',
        at: expect.any(String),
      },
      {
        kind: 'action',
        action: 'cancel',
        jobId: 'c1',
        taskKey: 'chat:slack:C1:c1:c1',
        by: 'alice',
        via: 'chat',
        at: expect.any(String),
      },
    ]);
  });

  it('OPS cancel of a job that has ended says so', async () => {
    await queueJob('e1');
    const job = (await h.take())!;
    await h.store.save({
      ...newRun(job, { runId: job.id, now: new Date('2026-11-24T08:00:00Z') }),
      stage: 'failed',
      outcome: 'failed',
    });
    expect(await reply(messageOf('/ops cancel e1'))).toBe('Job e1 has already ended (failed); nothing to cancel.');
  });

  it('OPS retry redrives a dead-lettered job for its requester only', async () => {
    await queueJob('r1');
    const lease = await h.queue.claim({ workerId: 'w' });
    await lease!.deadLetter('agent failed');
    expect(
      await reply(messageOf('/ops retry r1', { user: 'U7', access: { login: 'mallory', allowedLocal: false } })),
    ).toContain('may retry it');
    expect((await h.queue.stats()).deadLetter).toBe(1);
    expect(await reply(messageOf('/ops retry r1'))).toBe('Job r1 is back on the queue.');
    expect(await h.queue.stats()).toMatchObject({ ready: 1, deadLetter: 0 });
    expect(await reply(messageOf('/ops retry r1'))).toBe(
      'Job r1 is not in the dead-letter queue: only a job that gave up can be retried.',
    );
    expect(await h.store.journal()).toEqual([
      { kind: 'action', action: 'retry', jobId: 'r1', by: 'alice', via: 'chat', at: expect.any(String) },
    ]);
  });

  it('anything else under OPS gets the help text', async () => {
    expect(await reply(messageOf('/ops'))).toBe(opsHelp);
    expect(await reply(messageOf('/ops reboot the fleet'))).toBe(opsHelp);
  });
});
