import { describe, expect, it } from '@jest/globals';
import { AGENT_NAMES, parseConfig, type AgentsConfig } from '@codefleet/config';
import { createAgent } from '../src/index.js';

const agentsFrom = (yaml: string): AgentsConfig =>
  parseConfig(yaml, { env: {}, baseDir: '/srv/codefleet', hostname: 'test-host' }).config.agents;

describe('createAgent', () => {
  it('builds the command agent from agents.command, with its timeout and API key name', () => {
    const agents = agentsFrom(
      'agents:\n  timeout_seconds: 120\n  command:\n    argv: [my-agent, --file, "{prompt_file}"]\n    api_key_env: MY_AGENT_KEY\n',
    );
    expect(createAgent('command', agents)).toMatchObject({
      name: 'command',
      timeoutMs: 120_000,
      allowEnv: ['MY_AGENT_KEY'],
    });
  });

  it('builds the script agent from agents.script, its module resolved by the config loader', () => {
    const agents = agentsFrom('agents:\n  script:\n    module: ./agents/demo.mjs\n    timeout_seconds: 30\n');
    expect(createAgent('script', agents)).toMatchObject({ name: 'script', timeoutMs: 30_000 });
  });

  it('says what is missing from an incomplete section', () => {
    const agents = agentsFrom('{}');
    expect(() => createAgent('command', agents)).toThrow(
      expect.objectContaining({
        code: 'invalid_config',
        message: expect.stringMatching(/agents\.command\.argv is empty/),
      }),
    );
    expect(() => createAgent('script', agents)).toThrow(
      expect.objectContaining({
        code: 'invalid_config',
        message: expect.stringMatching(/agents\.script\.module is not set/),
      }),
    );
  });

  it('refuses a bad placeholder in agents.command.argv, already when the config loads', () => {
    expect(() => agentsFrom('agents:\n  command:\n    argv: [agent, "{prompt-file}"]\n')).toThrow(
      /agents\.command\.argv\[1\]: unknown placeholder \{prompt-file\}/,
    );
    // An agents section built some other way is still checked when the agent is built.
    const agents = agentsFrom('{}');
    expect(() =>
      createAgent('command', { ...agents, command: { ...agents.command, argv: ['agent', '{prompt-file}'] } }),
    ).toThrow(
      expect.objectContaining({
        code: 'invalid_config',
        message: expect.stringContaining('agents.command.argv[1]: unknown placeholder'),
      }),
    );
  });

  it('every configured name builds an agent', () => {
    const agents = agentsFrom('agents:\n  command:\n    argv: [my-agent]\n  script:\n    module: ./demo.mjs\n');
    for (const name of AGENT_NAMES) expect(createAgent(name, agents).name).toBe(name);
  });

  it('builds the built-in agent from agents.ollama: timeout, key name, token budget', () => {
    const agents = agentsFrom(
      'agents:\n  ollama:\n    timeout_seconds: 90\n    api_key_env: PROXY_KEY\n    token_budget: 5000\n',
    );
    expect(createAgent('ollama', agents)).toMatchObject({
      name: 'ollama',
      timeoutMs: 90_000,
      allowEnv: ['PROXY_KEY'],
      tokenBudget: 5000,
    });
  });

  it("carries the configured model, the profile's before the agent's, for pricing its runs", () => {
    const agents = agentsFrom(
      'agents:\n  claude:\n    model: claude-sonnet-4-5\n  profiles:\n    strongest: { agent: claude, model: claude-opus-4-1 }\n    plain: { agent: claude }\n',
    );
    expect(createAgent('claude', agents).model).toBe('claude-sonnet-4-5');
    expect(createAgent('strongest', agents).model).toBe('claude-opus-4-1');
    expect(createAgent('plain', agents).model).toBe('claude-sonnet-4-5');
    expect(createAgent('codex', agents).model).toBeUndefined();
    expect(createAgent('ollama', agents).model).toBe(agents.ollama.model);
  });

  it('names the known agents for an unknown one', () => {
    expect(() => createAgent('copilot', agentsFrom('{}'))).toThrow(
      expect.objectContaining({
        code: 'invalid_config',
        message: expect.stringMatching(/unknown agent "copilot" \(known: aider, /),
      }),
    );
  });
});
