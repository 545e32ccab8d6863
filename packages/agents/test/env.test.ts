import { describe, expect, it } from '@jest/globals';
import { buildAgentEnv, isForgeCredential, withoutForgeCredentials } from '../src/index.js';

const source = {
  PATH: '/usr/bin:/bin',
  HOME: '/home/worker',
  USER: 'worker',
  LOGNAME: 'worker',
  SHELL: '/bin/bash',
  LANG: 'C.UTF-8',
  LC_ALL: 'C.UTF-8',
  LC_CTYPE: 'C.UTF-8',
  TZ: 'UTC',
  TMPDIR: '/tmp',
  TERM: 'dumb',
  NODE_OPTIONS: '--require /evil.js',
  AWS_SECRET_ACCESS_KEY: 'aws-secret',
  ANTHROPIC_API_KEY: 'sk-ant',
  OPENAI_API_KEY: 'sk-openai',
  GITHUB_TOKEN: 'ghp_x',
  GH_TOKEN: 'gho_x',
  GH_ENTERPRISE_TOKEN: 'ghe_x',
  GITHUB_APP_PRIVATE_KEY: '-----BEGIN RSA PRIVATE KEY-----',
  GIT_ASKPASS: '/usr/lib/git-core/askpass',
  SSH_ASKPASS: '/usr/bin/ssh-askpass',
  SSH_AUTH_SOCK: '/tmp/ssh.sock',
  GIT_CREDENTIAL_HELPER: 'store',
  CODEFLEET_GITHUB_TOKEN: 'cf',
  UNSET: undefined,
};

describe('buildAgentEnv', () => {
  it('keeps only the base allowlist and LC_* by default', () => {
    expect(buildAgentEnv(source)).toEqual({
      PATH: '/usr/bin:/bin',
      HOME: '/home/worker',
      USER: 'worker',
      LOGNAME: 'worker',
      SHELL: '/bin/bash',
      LANG: 'C.UTF-8',
      LC_ALL: 'C.UTF-8',
      LC_CTYPE: 'C.UTF-8',
      TZ: 'UTC',
      TMPDIR: '/tmp',
      TERM: 'dumb',
    });
  });

  it('adds the names in `allow` that are set, and `extra` over the source', () => {
    const env = buildAgentEnv(source, {
      allow: ['ANTHROPIC_API_KEY', 'UNSET', 'NOT_THERE'],
      extra: { TERM: 'xterm', GIT_CONFIG_GLOBAL: '/dev/null' },
    });
    expect(env.ANTHROPIC_API_KEY).toBe('sk-ant');
    expect(env.TERM).toBe('xterm');
    expect(env.GIT_CONFIG_GLOBAL).toBe('/dev/null');
    expect(env).not.toHaveProperty('UNSET');
    expect(env).not.toHaveProperty('NOT_THERE');
    expect(env).not.toHaveProperty('OPENAI_API_KEY');
    expect(env).not.toHaveProperty('NODE_OPTIONS');
  });

  it('drops forge credentials even when `allow` or `extra` ask for them', () => {
    const credentials = [
      'GITHUB_TOKEN',
      'GH_TOKEN',
      'GH_ENTERPRISE_TOKEN',
      'GITHUB_APP_PRIVATE_KEY',
      'GIT_ASKPASS',
      'SSH_ASKPASS',
      'SSH_AUTH_SOCK',
      'GIT_CREDENTIAL_HELPER',
      'CODEFLEET_GITHUB_TOKEN',
    ];
    const env = buildAgentEnv(source, {
      allow: credentials,
      extra: {
        GITHUB_TOKEN: 'ghp_extra',
        CODEFLEET_QUEUE_TOKEN: 'q',
        GIT_CONFIG_COUNT: '1',
        GIT_CONFIG_KEY_0: 'credential.helper',
        GIT_CONFIG_VALUE_0: 'store',
        github_token: 'lower',
      },
    });
    expect(Object.keys(env).sort()).toEqual(Object.keys(buildAgentEnv(source)).sort());
    expect(JSON.stringify(env)).not.toMatch(/gh[po]_|cf|store|lower/);
  });

  it('does not change the source', () => {
    const copy = { ...source };
    buildAgentEnv(source, { extra: { PATH: '/x' } });
    expect(source).toEqual(copy);
  });
});

describe('isForgeCredential', () => {
  it.each([
    'GITHUB_TOKEN',
    'GH_TOKEN',
    'GH_ENTERPRISE_TOKEN',
    'GITHUB_APP_PRIVATE_KEY',
    'GIT_ASKPASS',
    'SSH_ASKPASS',
    'SSH_AUTH_SOCK',
    'GIT_CREDENTIAL_HELPER',
    'GIT_CREDENTIALS',
    'CODEFLEET_GITHUB_TOKEN',
    'CODEFLEET_FORGE_TOKEN',
    'GIT_CONFIG_PARAMETERS',
    'GIT_CONFIG_COUNT',
    'GIT_CONFIG_KEY_0',
    'GIT_CONFIG_VALUE_12',
    'gh_token',
    'CODEFLEET_FLEET_KEY',
    'CODEFLEET_FLEET_KEY_PREVIOUS',
  ])('%s is a forge credential', (name) => {
    expect(isForgeCredential(name)).toBe(true);
  });

  it.each([
    'PATH',
    'HOME',
    'ANTHROPIC_API_KEY',
    'OPENAI_API_KEY',
    'GIT_CONFIG_GLOBAL',
    'GIT_CONFIG_NOSYSTEM',
    'GIT_AUTHOR_NAME',
    'CODEFLEET_CONFIG',
  ])('%s is not', (name) => {
    expect(isForgeCredential(name)).toBe(false);
  });

  it('withoutForgeCredentials filters a ready environment', () => {
    expect(withoutForgeCredentials({ PATH: '/bin', GH_TOKEN: 'x' })).toEqual({ PATH: '/bin' });
  });
});
