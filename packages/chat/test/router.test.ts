import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { closedPort, startOllamaStandIn, type OllamaStandIn } from '@codefleet/testkit';
import { defaultModelFactory, route, type ModelFactory, type RouteOptions } from '../src/index.js';
import { capturingLogger, configOf } from './helpers.js';

describe('router', () => {
  let ollama: OllamaStandIn;
  beforeAll(async () => {
    ollama = await startOllamaStandIn({ models: ['qwen2.5-coder:1.5b'] });
  });
  afterAll(async () => {
    await ollama.close();
  });

  const routerOf = (router: Record<string, unknown> = {}) =>
    configOf({ router: { classifier: { host: ollama.url }, chat: { host: ollama.url }, ...router } }).router;
  const options = (router?: Record<string, unknown>, extra: Partial<RouteOptions> = {}): RouteOptions => ({
    router: routerOf(router),
    ...extra,
  });

  it.each([
    ['/code add a flag', 'CODE'],
    ['/code1 add a flag', 'CODE1'],
    ['/code2 add a flag', 'CODE2'],
    ['/code3 add a flag', 'CODE3'],
    ['/plan add a flag', 'PLAN'],
    ['/analyze add a flag', 'ANALYZE'],
    ['/ops add a flag', 'OPS'],
    ['/research add a flag', 'RESEARCH'],
    ['/chat add a flag', 'CHAT'],
    ['  /CODE2   add a flag', 'CODE2'],
  ])('the explicit command of %j routes to %s with confidence 1, the command taken off', async (text, name) => {
    const asked = ollama.requests.length;
    const routed = await route(text, options());
    expect(routed.route).toMatchObject({ name, source: 'command', confidence: 1 });
    expect(routed.text).toBe('add a flag');
    expect(ollama.requests.length).toBe(asked);
  });

  it('a command must be a whole word at the start: /codex and a later /code are not commands', async () => {
    ollama.reply(
      '{"route":"CHAT","confidence":0.9,"reason":"talk"}',
      '{"route":"CHAT","confidence":0.9,"reason":"talk"}',
    );
    expect((await route('/codex please', options())).route.source).toBe('classifier');
    expect((await route('please /code this', options())).route.source).toBe('classifier');
  });

  it('a command beats a rule; the first matching rule wins; a rule beats the classifier', async () => {
    const rules = [
      { pattern: 'deploy|リリース', route: 'OPS', confidence: 0.8 },
      { pattern: 'fix', route: 'CODE2', confidence: 0.95, repo: 'acme/api' },
      { pattern: 'fix the deploy', route: 'PLAN' },
    ];
    expect((await route('/chat fix the deploy', options({ rules }))).route).toMatchObject({
      name: 'CHAT',
      source: 'command',
    });
    expect((await route('Please FIX the deploy', options({ rules }))).route).toMatchObject({
      name: 'OPS',
      source: 'rule',
      confidence: 0.8,
      reason: 'router.rules[0] matched',
    });
    const fix = await route('fix the login page', options({ rules }));
    expect(fix).toMatchObject({
      route: { name: 'CODE2', source: 'rule', confidence: 0.95 },
      repo: 'acme/api',
      text: 'fix the login page',
    });
    // Unicode, case-insensitive.
    expect((await route('次のリリースはいつ', options({ rules }))).route.name).toBe('OPS');
    const asked = ollama.requests.length;
    await route('fix it', options({ rules }));
    expect(ollama.requests.length).toBe(asked);
  });

  it('a rule that backtracks forever on the text is skipped, not a hung producer', async () => {
    const { log, events } = capturingLogger();
    const rules = [
      { pattern: '^(a+)+$', route: 'OPS' },
      { pattern: 'a', route: 'CODE' },
    ];
    const routed = await route(`${'a'.repeat(40)}!`, options({ rules }, { log }));
    expect(routed.route).toMatchObject({ name: 'CODE', source: 'rule', reason: 'router.rules[1] matched' });
    expect(events().some((e) => e.event === 'router.rule_timed_out' && e.rule === 0)).toBe(true);
  });

  it('the classifier is accepted at min_confidence and above, with its reason', async () => {
    ollama.reply(
      '{"route":"PLAN","confidence":0.7,"reason":"asks for a plan"}',
      '```json\n{"route":"CODE","confidence":0.93,"reason":"a bug fix"}\n```',
    );
    const { log, events } = capturingLogger();
    const plan = await route('how would we split the monolith?', options({}, { log }));
    expect(plan).toMatchObject({
      route: { name: 'PLAN', source: 'classifier', confidence: 0.7, reason: 'asks for a plan' },
      text: 'how would we split the monolith?',
    });
    expect(events()).toContainEqual(
      expect.objectContaining({
        event: 'router.decided',
        route: 'PLAN',
        source: 'classifier',
        confidence: 0.7,
        reason: 'asks for a plan',
      }),
    );
    expect((await route('the login button is broken', options())).route).toMatchObject({
      name: 'CODE',
      source: 'classifier',
      confidence: 0.93,
    });
    // The local model was asked with the message as data and a short reply budget.
    const request = ollama.requests.at(-1)!;
    expect(request.model).toBe('qwen2.5-coder:1.5b');
    expect(request.messages.at(-1)!.content).toContain('the login button is broken');
    expect(request.options.num_predict).toBe(200);
  });

  it('below min_confidence the classifier is ignored: CHAT', async () => {
    ollama.reply('{"route":"CODE","confidence":0.69,"reason":"maybe"}', '{"route":"CODE","confidence":0.85}');
    expect((await route('hmm', options())).route).toMatchObject({
      name: 'CHAT',
      source: 'fallback',
      reason: expect.stringContaining('below 0.7'),
    });
    // An operator's own threshold.
    expect(
      (await route('hmm', options({ classifier: { host: ollama.url, min_confidence: 0.9 } }))).route,
    ).toMatchObject({ name: 'CHAT', source: 'fallback' });
  });

  it.each([
    ['prose', 'I think this is CODE'],
    ['an unknown route', '{"route":"DEPLOY","confidence":0.99}'],
    ['a confidence above 1', '{"route":"CODE","confidence":1.5}'],
    ['a confidence as text', '{"route":"CODE","confidence":"high"}'],
    ['no route', '{"confidence":0.9}'],
    ['a JSON array', '[{"route":"CODE","confidence":0.9}]'],
  ])('a malformed classifier reply (%s) falls back to CHAT', async (_what, reply) => {
    ollama.reply(reply);
    const routed = await route('do the thing', options());
    expect(routed.route).toMatchObject({
      name: 'CHAT',
      source: 'fallback',
      reason: expect.stringContaining('malformed'),
    });
  });

  it('an unreachable classifier, or one that does not answer in time, falls back to CHAT', async () => {
    const closed = `http://127.0.0.1:${await closedPort()}`;
    expect((await route('do the thing', options({ classifier: { host: closed } }))).route).toMatchObject({
      name: 'CHAT',
      source: 'fallback',
      reason: expect.stringContaining('unavailable'),
    });
    ollama.reply({ hang: true });
    const slow = await route('do the thing', options({ classifier: { host: ollama.url, timeout_seconds: 1 } }));
    expect(slow.route).toMatchObject({
      name: 'CHAT',
      source: 'fallback',
      reason: expect.stringContaining('no answer within 1000 ms'),
    });
  });

  it('a classifier whose host is not local is never called', async () => {
    const made: string[] = [];
    const models: ModelFactory = (spec) => {
      made.push(spec.host);
      return defaultModelFactory(spec);
    };
    for (const host of ['https://api.openai.com/v1', 'http://203.0.113.7:11434', 'http://ollama.example.com:11434']) {
      const routed = await route('do the thing', options({ classifier: { provider: 'openai', host } }, { models }));
      expect(routed.route).toMatchObject({
        name: 'CHAT',
        source: 'fallback',
        reason: expect.stringContaining('not local'),
      });
    }
    expect(made).toEqual([]);
    // A name the operator listed in router.local_hosts is asked (here it does not resolve: unavailable).
    const routed = await route(
      'queue?',
      options(
        { classifier: { host: 'http://model-box.invalid:11434' }, local_hosts: ['model-box.invalid'] },
        { models },
      ),
    );
    expect(made).toEqual(['http://model-box.invalid:11434']);
    expect(routed.route).toMatchObject({
      name: 'CHAT',
      source: 'fallback',
      reason: expect.stringContaining('unavailable'),
    });
  });

  it('the classifier switched off: CHAT without asking', async () => {
    const asked = ollama.requests.length;
    expect(
      (await route('do the thing', options({ classifier: { host: ollama.url, enabled: false } }))).route,
    ).toMatchObject({ name: 'CHAT', source: 'fallback' });
    expect(ollama.requests.length).toBe(asked);
  });

  it('a forced route (LINE) wins over commands, rules and the classifier; allow_code lets an explicit /code through', async () => {
    const asked = ollama.requests.length;
    const rules = [{ pattern: 'fix', route: 'CODE' }];
    const line = { forceRoute: 'CHAT' as const };
    for (const text of ['/code fix it', '/plan fix it', 'fix it', 'hello']) {
      expect((await route(text, options({ rules }, { policy: line }))).route).toMatchObject({
        name: 'CHAT',
        source: 'forced',
        confidence: 1,
      });
    }
    const allowCode = { forceRoute: 'CHAT' as const, allowExplicitCode: true };
    expect((await route('/code3 fix it', options({ rules }, { policy: allowCode }))).route).toMatchObject({
      name: 'CODE3',
      source: 'command',
    });
    // Only the code commands: other commands and rules stay forced.
    expect((await route('/ops cancel x', options({ rules }, { policy: allowCode }))).route).toMatchObject({
      name: 'CHAT',
      source: 'forced',
    });
    expect((await route('fix it', options({ rules }, { policy: allowCode }))).route).toMatchObject({
      name: 'CHAT',
      source: 'forced',
    });
    expect(ollama.requests.length).toBe(asked);
  });
});
