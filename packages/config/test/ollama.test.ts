import { describe, expect, it } from '@jest/globals';
import { ollamaHostFromEnv } from '../src/index.js';
import { parse, problems, yaml } from './helpers.js';

describe('agents.ollama', () => {
  it('defaults: ollama provider on $OLLAMA_HOST, else the local server; 8192-token context, no budget', () => {
    expect(parse('').config.agents.ollama).toEqual({
      provider: 'ollama',
      host: 'http://127.0.0.1:11434',
      model: 'qwen2.5-coder:7b',
      model_reason: 'auto: host hardware not probed',
      context_tokens: 8192,
      timeout_seconds: 600,
      request_timeout_seconds: 300,
      request_retries: 2,
    });
    expect(parse('', { OLLAMA_HOST: 'gpu-box:11500' }).config.agents.ollama.host).toBe('http://gpu-box:11500');
    expect(
      parse(yaml('agents:', '  ollama:', '    host: http://10.0.0.5:11434'), { OLLAMA_HOST: 'ignored:1' }).config.agents
        .ollama.host,
    ).toBe('http://10.0.0.5:11434');
  });

  it('reads OLLAMA_HOST the way Ollama does', () => {
    expect(ollamaHostFromEnv({})).toBeUndefined();
    expect(ollamaHostFromEnv({ OLLAMA_HOST: '0.0.0.0' })).toBe('http://0.0.0.0:11434');
    expect(ollamaHostFromEnv({ OLLAMA_HOST: ':8080' })).toBe('http://127.0.0.1:8080');
    expect(ollamaHostFromEnv({ OLLAMA_HOST: 'https://ollama.internal/' })).toBe('https://ollama.internal');
    expect(ollamaHostFromEnv({ OLLAMA_HOST: 'http://[::1' })).toBeNull();
  });

  it("the model requests' timeout and retries: set, or a bad value named with its key path", () => {
    expect(
      parse(yaml('agents:', '  ollama:', '    request_timeout_seconds: 90', '    request_retries: 0')).config.agents
        .ollama,
    ).toMatchObject({ request_timeout_seconds: 90, request_retries: 0 });
    expect(
      problems(yaml('agents:', '  ollama:', '    request_timeout_seconds: 0', '    request_retries: -1')).map(
        (p) => p.path,
      ),
    ).toEqual(['agents.ollama.request_timeout_seconds', 'agents.ollama.request_retries']);
  });

  it('the openai provider needs its API base; a bad OLLAMA_HOST is named', () => {
    expect(problems(yaml('agents:', '  ollama:', '    provider: openai'))).toEqual([
      expect.objectContaining({
        path: 'agents.ollama.host',
        message: expect.stringMatching(/required when agents.ollama.provider is openai/),
      }),
    ]);
    expect(problems(yaml('agents:', '  default: ollama'), { OLLAMA_HOST: 'http://[::1' })).toEqual([
      expect.objectContaining({
        path: 'agents.ollama.host',
        message: expect.stringMatching(/OLLAMA_HOST is not an address/),
      }),
    ]);
    // Unused, it stops nothing: another default agent, or a host written in the config.
    expect(parse('', { OLLAMA_HOST: 'http://[::1' }).config.agents.default).toBe('script');
    expect(
      parse(yaml('agents:', '  default: ollama', '  ollama:', '    host: http://gpu-box:11434'), {
        OLLAMA_HOST: 'http://[::1',
      }).config.agents.ollama.host,
    ).toBe('http://gpu-box:11434');
    expect(
      parse(
        yaml(
          'agents:',
          '  ollama:',
          '    provider: openai',
          '    host: https://api.openai.com/v1',
          '    token_budget: 100000',
        ),
      ).config.agents.ollama,
    ).toMatchObject({ provider: 'openai', host: 'https://api.openai.com/v1', token_budget: 100000 });
  });

  it('the anthropic provider defaults to the Anthropic API and its usual key variable; both can be set', () => {
    expect(
      parse(yaml('agents:', '  ollama:', '    provider: anthropic', '    model: claude-sonnet-4-6'), {
        OLLAMA_HOST: 'ignored:1',
      }).config.agents.ollama,
    ).toMatchObject({
      provider: 'anthropic',
      host: 'https://api.anthropic.com',
      api_key_env: 'ANTHROPIC_API_KEY',
      model: 'claude-sonnet-4-6',
    });
    expect(
      parse(
        yaml(
          'agents:',
          '  ollama:',
          '    provider: anthropic',
          '    model: claude-x',
          '    host: https://gateway.internal',
          '    api_key_env: GATEWAY_KEY',
        ),
      ).config.agents.ollama,
    ).toMatchObject({ provider: 'anthropic', host: 'https://gateway.internal', api_key_env: 'GATEWAY_KEY' });
    expect(
      parse(yaml('agents:', '  default: ollama', '  ollama:', '    provider: anthropic', '    model: claude-x')).config
        .agents.default,
    ).toBe('ollama');
  });

  it('the anthropic provider needs a named model: auto would send a local Qwen model name to Anthropic', () => {
    expect(() => parse(yaml('agents:', '  ollama:', '    provider: anthropic'))).toThrow(
      /agents\.ollama\.model: must name a Claude model/,
    );
    expect(() => parse(yaml('agents:', '  ollama:', '    provider: anthropic', '    model: auto'))).toThrow(
      /must name a Claude model/,
    );
  });
});
