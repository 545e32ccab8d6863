import { describe, expect, it } from '@jest/globals';
import { parseConfig } from '@codefleet/config';
import { pipelineSettings } from '../src/pipeline-deps.js';

describe('pipelineSettings', () => {
  it('carries the scope of config.yaml to every job (empty when unset)', () => {
    const parse = (text: string) => parseConfig(text, { env: {}, baseDir: '/tmp', hostname: 'h' }).config;
    const scoped = parse('workspace:\n  scope:\n    exclude: ["**/*.env"]\n    read: ["vendor/**"]\n');
    expect(pipelineSettings(scoped, {}).scope).toEqual({ exclude: ['**/*.env'], read: ['vendor/**'] });
    expect(pipelineSettings(parse(''), {}).scope).toEqual({ exclude: [], read: [] });
  });

  it('passes proxies by default, the variables and PATH directories verification.env and agents.env name, never a forge token', () => {
    const parse = (text: string) =>
      parseConfig(text, { env: { HOME: '/home/w' }, baseDir: '/tmp', hostname: 'h' }).config;
    const worker = {
      PATH: '/usr/bin',
      HOME: '/home/w',
      HTTPS_PROXY: 'http://proxy:3128',
      RUSTUP_HOME: '/usr/local/rustup',
      GITHUB_TOKEN: 'ghp_x',
      OTHER: 'o',
    };
    const plain = pipelineSettings(parse(''), worker);
    expect(plain.verifyEnv).toEqual({
      npm_config_update_notifier: 'false',
      NO_UPDATE_NOTIFIER: '1',
      PATH: '/usr/bin',
      HOME: '/home/w',
      HTTPS_PROXY: 'http://proxy:3128',
    });
    const config = parse(
      [
        'verification:',
        '  env:',
        '    pass: [RUSTUP_HOME, GITHUB_TOKEN]',
        '    path: [/usr/local/cargo/bin, ~/.cargo/bin]',
        'agents:',
        '  env:',
        '    pass: [OTHER]',
        '',
      ].join('\n'),
    );
    const settings = pipelineSettings(config, worker);
    expect(settings.verifyEnv).toEqual({
      npm_config_update_notifier: 'false',
      NO_UPDATE_NOTIFIER: '1',
      PATH: '/usr/local/cargo/bin:/home/w/.cargo/bin:/usr/bin',
      HOME: '/home/w',
      RUSTUP_HOME: '/usr/local/rustup',
    });
    const agentEnv = settings.agentEnv({ name: 'script', allowEnv: [] } as unknown as Parameters<
      typeof settings.agentEnv
    >[0]);
    expect(agentEnv).toEqual({
      npm_config_update_notifier: 'false',
      NO_UPDATE_NOTIFIER: '1',
      PATH: '/usr/bin',
      HOME: '/home/w',
      OTHER: 'o',
    });
  });

  it('keeps npm from looking for its own update in every sandboxed run, unless the operator says otherwise', () => {
    const parse = (text: string) => parseConfig(text, { env: {}, baseDir: '/tmp', hostname: 'h' }).config;
    expect(pipelineSettings(parse(''), { PATH: '/usr/bin' }).verifyEnv.npm_config_update_notifier).toBe('false');
    const passed = pipelineSettings(parse('verification:\n  env:\n    pass: [npm_config_update_notifier]\n'), {
      PATH: '/usr/bin',
      npm_config_update_notifier: 'true',
    });
    expect(passed.verifyEnv.npm_config_update_notifier).toBe('true');
  });
});

describe('gitEnvFrom', () => {
  it('passes what git needs (proxies and CAs included), never a forge token', async () => {
    const { gitEnvFrom } = await import('../src/runtime.js');
    const env = gitEnvFrom({
      PATH: '/bin',
      HOME: '/h',
      https_proxy: 'http://proxy:3128',
      GIT_SSL_CAINFO: '/etc/ca.pem',
      GITHUB_TOKEN: 'ghp_x',
      AWS_SECRET_ACCESS_KEY: 'k',
    });
    expect(env).toEqual({
      GIT_TERMINAL_PROMPT: '0',
      PATH: '/bin',
      HOME: '/h',
      https_proxy: 'http://proxy:3128',
      GIT_SSL_CAINFO: '/etc/ca.pem',
    });
  });
  it('carries the price table and the money budgets from costs:', () => {
    const parse = (text: string) => parseConfig(text, { env: {}, baseDir: '/tmp', hostname: 'h' }).config;
    const settings = pipelineSettings(
      parse(
        'costs:\n  prices:\n    "qwen*": { input_per_mtok: 0, output_per_mtok: 0 }\n    m1: { input_per_mtok: 3, output_per_mtok: 15 }\n  budget_usd: { job: 0.5, day: 20 }\n',
      ),
      {},
    );
    expect(settings.prices).toEqual({
      'qwen*': { inputPerMtok: 0, outputPerMtok: 0 },
      m1: { inputPerMtok: 3, outputPerMtok: 15 },
    });
    expect(settings.budgetUsd).toEqual({ job: 0.5, day: 20 });
  });
});

describe('escalation settings', () => {
  it('hands the chains and what each tier runs to the pipeline', () => {
    const config = parseConfig(
      [
        'agents:',
        '  ollama: { model: "qwen2.5-coder:7b" }',
        '  claude: { model: claude-sonnet-4 }',
        '  profiles:',
        '    local-small: { agent: ollama, model: "qwen2.5-coder:1.5b", budget_usd: 0.01 }',
        '    local-big: { agent: ollama }',
        '  escalation: [local-small, local-big, claude]',
        '  chains:',
        '    scripted: [script]',
        '',
      ].join('\n'),
      { env: {}, baseDir: '/tmp', hostname: 'h' },
    ).config;
    const settings = pipelineSettings(config, {});
    expect(settings.chains).toEqual({ escalation: ['local-small', 'local-big', 'claude'], scripted: ['script'] });
    expect(settings.tiers).toEqual({
      'local-small': { agent: 'ollama', model: 'qwen2.5-coder:1.5b', budgetUsd: 0.01 },
      'local-big': { agent: 'ollama', model: 'qwen2.5-coder:7b' },
      claude: { agent: 'claude', model: 'claude-sonnet-4' },
      script: { agent: 'script' },
    });
  });
});
