import { describe, expect, it } from '@jest/globals';
import { collectSecrets, isSecretName } from '../src/index.js';
import { configError, parse, problems, yaml } from './helpers.js';

const TOKEN = 'ghp_abcdefghijklmnopqrstuvwxyz0123456789';

describe('GitHub token', () => {
  it('refuses a token written into the file, without echoing it', () => {
    const error = configError(() => parse(yaml('forge:', '  github:', `    token: ${TOKEN}`)));
    expect(error.problems).toEqual([
      {
        path: 'forge.github.token',
        message: 'tokens are read from the environment only; set forge.github.token_env (default GITHUB_TOKEN)',
      },
    ]);
    expect(error.message).not.toContain(TOKEN);
  });

  it('refuses a token key even when it references a variable', () => {
    expect(problems(yaml('forge:', '  github:', '    token: ${GITHUB_TOKEN}'), { GITHUB_TOKEN: TOKEN })[0]?.path).toBe(
      'forge.github.token',
    );
  });

  it('reads the token from the variable named by token_env and lists it as a secret', () => {
    const loaded = parse(yaml('forge:', '  type: github', '  github:', '    token_env: CODEFLEET_GH_TOKEN'), {
      CODEFLEET_GH_TOKEN: TOKEN,
    });
    expect(loaded.config.forge.github.token).toBe(TOKEN);
    expect(loaded.secrets).toContain(TOKEN);
  });

  it('requires a token for the github forge', () => {
    expect(problems(yaml('forge:', '  type: github'))).toEqual([
      {
        path: 'forge.github.token_env',
        message:
          'environment variable GITHUB_TOKEN is not set; forge.type github needs a token (or forge.github.app_id with private_key_env)',
      },
    ]);
  });

  it('accepts GitHub App credentials instead of a token', () => {
    const pem = '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAx1y2z3abcdefghij\n-----END RSA PRIVATE KEY-----\n';
    const text = yaml(
      'forge:',
      '  type: github',
      '  github:',
      '    app_id: ${APP_ID}',
      '    installation_id: 77',
      '    private_key_env: GH_APP_KEY',
    );
    const loaded = parse(text, { APP_ID: '1234', GH_APP_KEY: pem });
    expect(loaded.config.forge.github.app_id).toBe(1234);
    expect(loaded.config.forge.github.token).toBeUndefined();
    expect(loaded.config.forge.github.private_key).toBe(pem);
    expect(loaded.secrets).toEqual(expect.arrayContaining([pem, pem.trim(), 'MIIEowIBAAKCAQEAx1y2z3abcdefghij']));
    expect(problems(text, { APP_ID: '1234' })).toEqual([
      {
        path: 'forge.github.private_key_env',
        message: 'environment variable GH_APP_KEY is not set (forge.type is github and forge.github.app_id is set)',
      },
    ]);
  });
});

describe('secrets', () => {
  it('collects values of secret-looking variables, longest first, and nothing else', () => {
    const env = {
      GITHUB_TOKEN: TOKEN,
      OPENAI_API_KEY: 'sk-proj-0123456789abcdef',
      AWS_SECRET_ACCESS_KEY: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
      AWS_SESSION_TOKEN: 'FwoGZXIvYXdzEXAMPLE',
      SLACK_SIGNING_SECRET: 'abcdef123456',
      REDIS_PASSWORD: 'hunter22',
      SHORT_TOKEN: 'abc',
      EMPTY_API_KEY: '',
      HOME: '/home/worker',
      PATH: '/usr/bin:/bin',
      TOKENIZERS_PARALLELISM: 'false-ish',
      AWS_REGION: 'ap-northeast-1',
    };
    const { secrets } = parse('', env);
    expect(new Set(secrets)).toEqual(
      new Set([
        TOKEN,
        env.OPENAI_API_KEY,
        env.AWS_SECRET_ACCESS_KEY,
        env.AWS_SESSION_TOKEN,
        env.SLACK_SIGNING_SECRET,
        env.REDIS_PASSWORD,
      ]),
    );
    const lengths = secrets.map((s) => s.length);
    expect(lengths).toEqual([...lengths].sort((a, b) => b - a));
  });

  it('adds the variables named in the config whatever their names', () => {
    const text = yaml(
      'agents:',
      '  ollama:',
      '    api_key_env: OLLAMA_KEY_FOR_PROXY',
      'logging:',
      '  redact_values: [DB_URL]',
    );
    const { secrets } = parse(text, {
      OLLAMA_KEY_FOR_PROXY: 'proxy-credential',
      DB_URL: 'postgres://u:p@db/app',
      OTHER: 'visible-value',
    });
    expect(new Set(secrets)).toEqual(new Set(['proxy-credential', 'postgres://u:p@db/app']));
  });

  it('recognises secret variable names', () => {
    for (const name of [
      'GITHUB_TOKEN',
      'GH_TOKEN',
      'ANTHROPIC_API_KEY',
      'OPENAI_APIKEY',
      'AWS_SECRET_ACCESS_KEY',
      'CLIENT_SECRETS',
      'DB_PASSWORD',
    ]) {
      expect([name, isSecretName(name)]).toEqual([name, true]);
    }
    for (const name of ['HOME', 'PATH', 'TOKENIZERS_PARALLELISM', 'GITHUB_TOKEN_ENV_NAME_HINT_X', 'KEYCHAIN']) {
      expect([name, isSecretName(name)]).toEqual([name, name === 'GITHUB_TOKEN_ENV_NAME_HINT_X']);
    }
    expect(collectSecrets({ A_TOKEN: ' padded-token\n' })).toEqual([' padded-token\n', 'padded-token']);
  });

  it('snapshots the environment without undefined entries', () => {
    const { env } = parse('', { PATH: '/usr/bin', UNSET: undefined });
    expect(env).toEqual({ PATH: '/usr/bin' });
    expect(Object.isFrozen(env)).toBe(true);
  });
});
