import { describe, expect, it } from '@jest/globals';
import { parse, problems, yaml } from './helpers.js';

// The router, Slack, LINE and HTTP API sections: secrets only from variables (and masked),
// every route's agent a real agent or profile, each enabled producer's secrets present.
describe('chat and HTTP producer config', () => {
  it('reads each producer secret from the variable its *_env names, and masks it', () => {
    const env = {
      SLACK_BOT_TOKEN: 'xoxb-1111-2222-abcdefabcdef',
      SLACK_APP_TOKEN: 'xapp-1-A111-2222-abcdef',
      LINE_CHANNEL_SECRET: 'line-secret-123456',
      MY_LINE_TOKEN: 'line-token-abcdef',
      CODEFLEET_API_TOKEN: 'api-token-abcdef',
    };
    const loaded = parse(
      yaml(
        'slack:',
        '  enabled: true',
        'line:',
        '  enabled: true',
        '  channel_access_token_env: MY_LINE_TOKEN',
        'http_api:',
        '  enabled: true',
      ),
      env,
    );
    expect(loaded.config.slack).toMatchObject({ bot_token: env.SLACK_BOT_TOKEN, app_token: env.SLACK_APP_TOKEN });
    expect(loaded.config.line).toMatchObject({
      channel_secret: env.LINE_CHANNEL_SECRET,
      channel_access_token: env.MY_LINE_TOKEN,
    });
    expect(loaded.config.http_api.token).toBe(env.CODEFLEET_API_TOKEN);
    // MY_LINE_TOKEN is secret by its name; a variable named otherwise is masked because config names it.
    for (const value of Object.values(env)) expect(loaded.secrets).toContain(value);
    const named = parse(yaml('http_api:', '  token_env: API_BEARER'), { API_BEARER: 'bearer-value-123' });
    expect(named.secrets).toContain('bearer-value-123');
  });

  it('refuses an enabled producer without its secrets, naming the variable', () => {
    expect(problems(yaml('slack:', '  enabled: true')).map((p) => p.path)).toEqual([
      'slack.bot_token_env',
      'slack.app_token_env',
    ]);
    expect(
      problems(yaml('slack:', '  enabled: true', '  mode: http'), { SLACK_BOT_TOKEN: 'xoxb-123456' }).map(
        (p) => p.path,
      ),
    ).toEqual(['slack.signing_secret_env']);
    expect(problems(yaml('line:', '  enabled: true')).map((p) => p.path)).toEqual([
      'line.channel_secret_env',
      'line.channel_access_token_env',
    ]);
    expect(problems(yaml('http_api:', '  enabled: true'))).toEqual([
      {
        path: 'http_api.token_env',
        message: 'environment variable CODEFLEET_API_TOKEN is not set (http_api is enabled)',
      },
    ]);
    // Not enabled: nothing is required (a worker only reports to Slack when it has a token).
    expect(() => parse(yaml('slack:', '  mode: http'))).not.toThrow();
  });

  it("routes name a real agent or profile; rules' patterns must compile", () => {
    expect(problems(yaml('router:', '  routes:', '    CODE3:', '      agent: strongest'))).toEqual([
      {
        path: 'router.routes.CODE3.agent',
        message: 'names no agent, agents.profiles entry or escalation chain: "strongest"',
      },
    ]);
    expect(() =>
      parse(
        yaml(
          'agents:',
          '  profiles:',
          '    strongest: { agent: claude, model: claude-opus-4 }',
          'router:',
          '  routes:',
          '    CODE3: { agent: strongest }',
        ),
      ),
    ).not.toThrow();
    expect(problems(yaml('agents:', '  profiles:', '    aider: { agent: claude }')).map((p) => p.path)).toEqual([
      'agents.profiles.aider',
    ]);
    expect(
      problems(yaml('router:', '  rules:', '    - { pattern: "(unclosed", route: CODE }')).map((p) => p.path),
    ).toEqual(['router.rules[0].pattern']);
    expect(problems(yaml('router:', '  rules:', '    - { pattern: "fix", route: DEPLOY }')).map((p) => p.path)).toEqual(
      ['router.rules[0].route'],
    );
  });

  it("the local models default to the built-in agent's Ollama; an openai provider needs a host", () => {
    const { config } = parse('', { OLLAMA_HOST: '10.0.0.5:11434' });
    expect(config.router.classifier).toMatchObject({
      provider: 'ollama',
      host: 'http://10.0.0.5:11434',
      model: 'qwen2.5-coder:1.5b',
      min_confidence: 0.7,
    });
    expect(config.router.chat.host).toBe('http://10.0.0.5:11434');
    expect(problems(yaml('router:', '  chat:', '    provider: openai'))).toEqual([
      { path: 'router.chat.host', message: 'required when the provider is openai (a local OpenAI-compatible server)' },
    ]);
  });
});
