import { describe, expect, it } from '@jest/globals';
import { agentLocality, isLocalEndpoint } from '../src/index.js';
import { configOf } from './helpers.js';

describe('isLocalEndpoint', () => {
  it.each([
    'http://127.0.0.1:11434',
    'http://127.8.9.1',
    'http://localhost:11434',
    'http://LOCALHOST.',
    'http://box.localhost',
    'http://[::1]:11434',
    'http://10.1.2.3:8000/v1',
    'http://172.16.0.1',
    'http://172.31.255.255',
    'http://192.168.1.20:11434',
    'http://169.254.10.1',
    'http://[fd12:3456::1]:11434',
    'http://[fc00::1]',
    'http://[fe80::1]',
    'http://mac-mini.local:11434',
    'http://0.0.0.0:11434',
    'http://[::ffff:192.168.0.5]',
    'http://2130706433:11434',
  ])('%s is local', (url) => {
    expect(isLocalEndpoint(url)).toBe(true);
  });

  it.each([
    'https://api.openai.com/v1',
    'http://8.8.8.8',
    'http://172.32.0.1',
    'http://172.15.0.1',
    'http://192.169.0.1',
    'http://[2001:db8::1]',
    'http://[::ffff:8.8.8.8]',
    'http://ollama.example.com',
    'http://localhost.example.com',
    'http://10.0.0.1.nip.io',
    'not a url',
    'ftp://127.0.0.1',
    'http://local',
    'http://x.locals',
  ])('%s is not local', (url) => {
    expect(isLocalEndpoint(url)).toBe(false);
  });

  it('a host in router.local_hosts is local, by name or name:port', () => {
    expect(isLocalEndpoint('http://gpu-box.lan:11434', ['gpu-box.lan'])).toBe(true);
    expect(isLocalEndpoint('http://GPU-box.lan:8000', ['gpu-box.lan:8000'])).toBe(true);
    expect(isLocalEndpoint('http://gpu-box.lan:9000', ['gpu-box.lan:8000'])).toBe(false);
    expect(isLocalEndpoint('http://other.lan', ['gpu-box.lan'])).toBe(false);
  });
});

describe('agentLocality', () => {
  const config = (tree: Record<string, unknown>) => configOf({ router: { local_hosts: ['gpu.lan'] }, ...tree });

  it('the built-in agent on a local host, script, and aider on a local Ollama are local', () => {
    expect(agentLocality('ollama', config({ agents: { ollama: { host: 'http://127.0.0.1:11434' } } }))).toMatchObject({
      local: true,
      agent: 'ollama',
    });
    expect(agentLocality('ollama', config({ agents: { ollama: { host: 'http://gpu.lan:11434' } } }))).toMatchObject({
      local: true,
    });
    expect(agentLocality('script', config({}))).toEqual({ local: true, agent: 'script' });
    expect(
      agentLocality('aider', config({ agents: { aider: { model: 'ollama_chat/qwen2.5-coder:7b' } } })),
    ).toMatchObject({ local: true, agent: 'aider' });
    expect(
      agentLocality('aider', config({ agents: { aider: { model: 'ollama/qwen2.5-coder:7b' } } }), {
        OLLAMA_API_BASE: 'http://192.168.0.9:11434',
      }),
    ).toMatchObject({ local: true });
  });

  it('cloud agents, a remote model server and an unknown command are not', () => {
    expect(
      agentLocality(
        'ollama',
        config({ agents: { ollama: { provider: 'openai', host: 'https://api.deepseek.com/v1' } } }),
      ),
    ).toMatchObject({ local: false, reason: expect.stringContaining('not a local host') });
    expect(agentLocality('aider', config({ agents: { aider: { model: 'gpt-4o' } } }))).toMatchObject({
      local: false,
      reason: expect.stringContaining('not an Ollama model'),
    });
    expect(agentLocality('aider', config({}), { OLLAMA_API_BASE: 'https://ollama.example.com' })).toMatchObject({
      local: false,
    });
    for (const cloud of ['claude', 'codex', 'gemini'])
      expect(agentLocality(cloud, config({}))).toMatchObject({
        local: false,
        reason: expect.stringContaining('cloud'),
      });
    expect(agentLocality('command', config({}))).toMatchObject({ local: false });
    expect(agentLocality('nobody', config({}))).toMatchObject({ local: false });
  });

  it('a profile is judged by its agent and its own model', () => {
    const tree = {
      agents: {
        profiles: {
          local_coder: { agent: 'aider', model: 'ollama_chat/qwen2.5-coder:7b' },
          strongest: { agent: 'claude' },
          cloudy: { agent: 'aider', model: 'claude-3-5-sonnet' },
        },
      },
    };
    expect(agentLocality('local_coder', config(tree))).toMatchObject({
      local: true,
      agent: 'aider',
      model: 'ollama_chat/qwen2.5-coder:7b',
    });
    expect(agentLocality('strongest', config(tree))).toMatchObject({ local: false, agent: 'claude' });
    expect(agentLocality('cloudy', config(tree))).toMatchObject({ local: false, agent: 'aider' });
  });
});
