import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { newRun } from '@codefleet/core';
import { createTempRepo, startOllamaStandIn, type OllamaStandIn } from '@codefleet/testkit';
import type { PermissionCheck } from '../src/index.js';
import { threadKey } from '../src/request-keys.js';
import { messageOf, openHarness, type Harness } from './helpers.js';

describe('chat service: work', () => {
  let ollama: OllamaStandIn;
  let h: Harness;
  const roles: Record<string, string> = { alice: 'write', bob: 'read' };
  const asked: string[] = [];
  const permission: PermissionCheck = async (repo, login) => {
    asked.push(`${repo}:${login}`);
    if (login === 'flaky') throw new Error('GitHub is down');
    return roles[login] ?? 'none';
  };
  beforeAll(async () => {
    ollama = await startOllamaStandIn({ models: ['qwen2.5-coder:1.5b'] });
  });
  afterAll(async () => {
    await ollama.close();
  });
  beforeEach(async () => {
    asked.length = 0;
    h = await openHarness(ollama.url, permission);
  });
  afterEach(async () => {
    await h.close();
  });

  const profiles = {
    agents: {
      profiles: {
        implementer: { agent: 'aider', model: 'ollama_chat/qwen2.5-coder:7b' },
        strongest: { agent: 'claude' },
      },
    },
  };

  it("/code2 makes a change job with the route, the route's agent profile and the message snapshot, and reports it queued", async () => {
    const service = h.service({ ...profiles, router: { routes: { CODE2: { agent: 'implementer' } } } });
    const text = '/code2 Add a --verbose flag repo=acme/api\nIt should print each step.';
    const outcome = await service.handle(messageOf(text, { statusMessageId: '1700000000.000200' }));
    expect(outcome).toEqual({
      kind: 'enqueued',
      jobId: 'job-1',
      route: { name: 'CODE2', source: 'command', confidence: 1, reason: 'explicit /code2' },
      deduplicated: false,
      repo: 'acme/api',
    });
    const job = await h.take();
    expect(job).toMatchObject({
      id: 'job-1',
      repo: 'acme/api',
      mode: 'change',
      agent: 'implementer',
      title: 'Add a --verbose flag',
      body: text,
      requested_by: 'alice',
      route: { name: 'CODE2', source: 'command' },
      source: {
        kind: 'chat',
        platform: 'slack',
        channel: 'C1',
        thread_id: '1700000000.000100',
        message_id: '1700000000.000100',
        status_message_id: '1700000000.000200',
      },
    });
    expect(job?.branch).toBeUndefined();
    expect(h.requester.reports.map((r) => [r.kind, r.job.id])).toEqual([['queued', 'job-1']]);
    expect(asked).toEqual(['acme/api:alice']);
    expect(h.events()).toContainEqual(
      expect.objectContaining({ event: 'router.decided', route: 'CODE2', source: 'command', confidence: 1 }),
    );
  });

  it('a route without an agent uses agents.default', async () => {
    await h.service({ agents: { default: 'codex' } }).handle(messageOf('/code fix it repo=acme/api'));
    expect(await h.take()).toMatchObject({ agent: 'codex', title: 'fix it' });
  });

  it('a change route may name an escalation chain; one naming nothing runs agents.escalation when it has tiers', async () => {
    const chains = {
      agents: {
        ...profiles.agents,
        escalation: ['implementer', 'strongest'],
        chains: { 'cheap-first': ['implementer', 'claude'] },
      },
    };
    const service = h.service({ ...chains, router: { routes: { CODE2: { agent: 'cheap-first' } } } });
    await service.handle(messageOf('/code2 fix it repo=acme/api', { messageId: 'm-chain-1' }));
    expect(await h.take()).toMatchObject({ agent: 'cheap-first', route: { name: 'CODE2' } });
    await service.handle(
      messageOf('/code fix that too repo=acme/api', { messageId: 'm-chain-2', thread: 't-chain-2' }),
    );
    expect(await h.take()).toMatchObject({ agent: 'escalation', route: { name: 'CODE' } });
  });

  it('the same message delivered three times (even at once) makes one job', async () => {
    const service = h.service();
    const message = messageOf('/code fix the login page repo=acme/api');
    const outcomes = await Promise.all([service.handle(message), service.handle(message)]);
    outcomes.push(await service.handle(message));
    expect(outcomes.map((o) => o.kind === 'enqueued' && o.jobId)).toEqual(['job-1', 'job-1', 'job-1']);
    expect(outcomes.filter((o) => o.kind === 'enqueued' && o.deduplicated)).toHaveLength(2);
    expect((await h.queue.stats()).depth).toBe(1);
    expect(h.requester.reports).toHaveLength(1);
  });

  it("a redelivery is answered from the first delivery's job without routing again (the classifier is not asked twice)", async () => {
    ollama.reply('{"route":"CODE","confidence":0.9,"reason":"a fix"}');
    const service = h.service({ router: { classifier: { host: ollama.url, enabled: true } } });
    const message = messageOf('the login page is broken repo=acme/api');
    const first = await service.handle(message);
    expect(first).toMatchObject({
      kind: 'enqueued',
      jobId: 'job-1',
      deduplicated: false,
      route: { name: 'CODE', source: 'classifier' },
    });
    const asked = ollama.requests.length;
    // Nothing scripted now: routing again would fall back to CHAT and answer a second time.
    expect(await service.handle(message)).toEqual({ ...first, deduplicated: true });
    expect(ollama.requests.length).toBe(asked);
  });

  it('a delivery whose enqueue failed leaves the message free: the next delivery makes the job', async () => {
    let failures = 1;
    const queue = new Proxy(h.queue, {
      get: (target, prop, receiver) =>
        prop === 'enqueue'
          ? async (job: Parameters<typeof target.enqueue>[0]) => {
              if (failures-- > 0) throw new Error('queue down');
              return target.enqueue(job);
            }
          : Reflect.get(target, prop, receiver),
    });
    const service = h.service({}, { queue });
    const message = messageOf('/code fix it repo=acme/api');
    await expect(service.handle(message)).rejects.toThrow('queue down');
    expect(await service.handle(message)).toMatchObject({ kind: 'enqueued', jobId: 'job-2', deduplicated: false });
    expect(await service.handle(message)).toMatchObject({ kind: 'enqueued', jobId: 'job-2', deduplicated: true });
    expect((await h.queue.stats()).depth).toBe(1);
  });

  it('a message the job format cannot hold is answered, not thrown', async () => {
    const outcome = await h.service().handle(messageOf('/code fix it repo=acme/api', { channel: 'C'.repeat(101) }));
    expect(outcome).toMatchObject({
      kind: 'reply',
      text: expect.stringMatching(
        /^I couldn.t make a job of that message: invalid job: .*source.channel: expected at most 100 characters/,
      ),
    });
    expect((await h.queue.stats()).depth).toBe(0);
  });

  it('a follow-up in the thread of a finished job continues its branch; while it runs, the message is turned back', async () => {
    const service = h.service();
    const first = await service.handle(messageOf('/code add a flag repo=acme/api'));
    expect(first).toMatchObject({ kind: 'enqueued', jobId: 'job-1' });
    // Queued, not yet picked up: a second message in the thread waits.
    const busy = await service.handle(messageOf('/code also document it', { messageId: '1700000000.000300' }));
    expect(busy).toMatchObject({
      kind: 'reply',
      text: expect.stringContaining('job-1 of this thread is still queued or running'),
    });
    const job = (await h.take())!;
    const now = new Date('2026-11-24T08:05:00Z');
    const started = newRun(job, { runId: job.id, now });
    await h.store.save({ ...started, stage: 'implementing' });
    expect(await service.handle(messageOf('/code also document it', { messageId: '1700000000.000301' }))).toMatchObject(
      { kind: 'reply' },
    );
    const doneAt = '2026-11-24T08:10:00.000Z';
    await h.store.save({
      ...started,
      stage: 'done',
      outcome: 'succeeded',
      branch: 'ai/chat-job-1',
      stages: [...started.stages, { stage: 'done', at: doneAt, attempt: 0 }],
      updated_at: doneAt,
    });
    // Done: the follow-up continues the branch, on the thread's repository (not the channel's hint).
    const follow = await service.handle(
      messageOf('/code also document it', { messageId: '1700000000.000400', repoHints: ['acme/web'] }),
    );
    expect(follow).toMatchObject({ kind: 'enqueued', jobId: 'job-2', deduplicated: false });
    const next = await h.take();
    expect(next).toMatchObject({ branch: 'ai/chat-job-1', title: 'also document it' });
    expect(next?.body).toMatch(/^Follow-up in the same chat thread to job job-1: continue on branch ai\/chat-job-1/);
    expect(next?.body).toContain('/code also document it');
    // In the same thread, another repository is new work, not a follow-up (nor held back by one).
    await h.store.setRequest(
      threadKey({ platform: 'slack', channel: 'C1', thread: '1700000000.000100' }),
      'job-2',
      60_000,
    );
    expect(
      await service.handle(messageOf('/code fix the footer repo=acme/web', { messageId: '1700000000.000500' })),
    ).toMatchObject({ kind: 'enqueued', repo: 'acme/web' });
    expect((await h.take())?.branch).toBeUndefined();
    // Another thread is not a follow-up.
    await service.handle(
      messageOf('/code another thing repo=acme/api', { thread: '1700000001.000100', messageId: '1700000001.000100' }),
    );
    expect((await h.take())?.branch).toBeUndefined();
  });

  it('an unmapped sender, a login without write permission, and a failed check are refused politely; nothing is queued', async () => {
    const service = h.service();
    const unmapped = await service.handle(messageOf('/code fix it repo=acme/api', { access: { allowedLocal: false } }));
    expect(unmapped).toMatchObject({ kind: 'refused', text: expect.stringContaining('linked to a GitHub login') });
    const reader = await service.handle(
      messageOf('/code fix it repo=acme/api', { access: { login: 'bob', allowedLocal: true } }),
    );
    expect(reader).toMatchObject({
      kind: 'refused',
      text: expect.stringContaining('@bob needs write access to acme/api'),
    });
    const flaky = await service.handle(
      messageOf('/code fix it repo=acme/api', { access: { login: 'flaky', allowedLocal: false } }),
    );
    expect(flaky).toMatchObject({ kind: 'refused', text: expect.stringContaining('try again') });
    // No permission check at all (no GitHub forge): refused, not waved through.
    const unchecked = await h.service({}, { permission: undefined }).handle(messageOf('/code fix it repo=acme/api'));
    expect(unchecked).toMatchObject({ kind: 'refused' });
    expect((await h.queue.stats()).depth).toBe(0);
    expect(h.requester.reports).toEqual([]);
  });

  it('local repositories need the allow-list, not a GitHub login', async () => {
    const repo = await createTempRepo();
    try {
      const service = h.service();
      const outsider = await service.handle(
        messageOf(`/code fix it repo=${repo.path}`, { access: { login: 'alice', allowedLocal: false } }),
      );
      expect(outsider).toMatchObject({ kind: 'refused', text: expect.stringContaining('local repositories') });
      const listed = await service.handle(
        messageOf(`/code fix it repo=${repo.path}`, { access: { allowedLocal: true } }),
      );
      expect(listed).toMatchObject({ kind: 'enqueued', repo: repo.path });
      expect(await h.take()).toMatchObject({ repo: repo.path, requested_by: 'U1' });
      expect(asked).toEqual([]);
    } finally {
      await repo.dispose();
    }
  });

  it("the repository: repo= in the text, else the rule's, else the hints in order, else ask", async () => {
    const rules = [{ pattern: 'billing', route: 'CODE', repo: 'acme/billing' }];
    const service = h.service({ router: { rules }, slack: { channels: { C9: { repo: 'acme/web' } } } });
    const m = (text: string, id: string, hints: string[] = []) =>
      messageOf(text, { messageId: id, thread: id, repoHints: hints });
    expect(await service.handle(m('fix billing repo=acme/api', '1'))).toMatchObject({
      kind: 'enqueued',
      repo: 'acme/api',
    });
    expect(await service.handle(m('fix billing', '2', ['acme/web']))).toMatchObject({
      kind: 'enqueued',
      repo: 'acme/billing',
    });
    expect(await service.handle(m('/code fix it', '3', ['not a repo', 'acme/web', 'acme/api']))).toMatchObject({
      kind: 'enqueued',
      repo: 'acme/web',
    });
    // A repository named outside the text (codefleet chat --repo) beats rules and hints; repo= in the text beats it.
    expect(await service.handle({ ...m('fix billing', '6', ['acme/web']), repo: 'acme/cli' })).toMatchObject({
      kind: 'enqueued',
      repo: 'acme/cli',
    });
    expect(await service.handle({ ...m('fix billing repo=acme/api', '7'), repo: 'acme/cli' })).toMatchObject({
      kind: 'enqueued',
      repo: 'acme/api',
    });
    expect(await service.handle(m('/code fix it', '4'))).toEqual({
      kind: 'ask_repo',
      choices: ['acme/billing', 'acme/web'],
      route: expect.objectContaining({ name: 'CODE' }),
    });
    const bad = await service.handle(m('/code fix it repo=https://user:tok@example.com/r.git', '5', ['acme/web']));
    expect(bad).toMatchObject({
      kind: 'reply',
      text: expect.stringContaining('credentials in the repository URL are refused'),
    });
    expect((await h.queue.stats()).depth).toBe(5);
  });

  it('a command with no task asks for one', async () => {
    expect(await h.service().handle(messageOf('/code repo=acme/api'))).toMatchObject({
      kind: 'reply',
      text: expect.stringContaining('Tell me what to do'),
    });
    expect((await h.queue.stats()).depth).toBe(0);
  });

  it('PLAN, ANALYZE and RESEARCH make read-only jobs with a local agent and refuse plainly with a cloud one', async () => {
    const tree = {
      ...profiles,
      agents: { ...profiles.agents, ollama: { host: 'http://127.0.0.1:11434' } },
      router: {
        routes: { PLAN: { agent: 'implementer' }, ANALYZE: { agent: 'strongest' }, RESEARCH: { agent: 'ollama' } },
      },
    };
    const service = h.service(tree);
    const plan = await service.handle(messageOf('/plan split the billing module repo=acme/api', { messageId: 'p' }));
    expect(plan).toMatchObject({ kind: 'enqueued', route: { name: 'PLAN' } });
    expect(await h.take()).toMatchObject({ mode: 'answer', agent: 'implementer', title: 'split the billing module' });
    const analyze = await service.handle(messageOf('/analyze why is login slow repo=acme/api', { messageId: 'a' }));
    expect(analyze).toMatchObject({
      kind: 'reply',
      text: expect.stringMatching(
        /ANALYZE runs only on a local model, and the strongest agent \(claude\) runs on a cloud model/,
      ),
    });
    // A cloud default agent is refused too (default is claude here), and before any access check.
    const research = await h
      .service({ agents: { default: 'claude' } })
      .handle(messageOf('/research compare ORMs repo=acme/api', { messageId: 'r', access: { allowedLocal: false } }));
    expect(research).toMatchObject({ kind: 'reply', text: expect.stringContaining('runs only on a local model') });
    expect((await h.queue.stats()).depth).toBe(0);
    // An answer job does not become the thread's job (no branch to continue).
    expect(
      await h.store.lookupRequest(threadKey({ platform: 'slack', channel: 'C1', thread: '1700000000.000100' })),
    ).toBeUndefined();
  });
});
