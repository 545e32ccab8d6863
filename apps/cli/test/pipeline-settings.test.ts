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
});

describe('gitEnvFrom', () => {
  it('passes what git needs (proxies and CAs included), never a forge token', async () => {
    const { gitEnvFrom } = await import('../src/runtime.js');
    const env = gitEnvFrom({ PATH: '/bin', HOME: '/h', https_proxy: 'http://proxy:3128', GIT_SSL_CAINFO: '/etc/ca.pem', GITHUB_TOKEN: 'ghp_x', AWS_SECRET_ACCESS_KEY: 'k' });
    expect(env).toEqual({ GIT_TERMINAL_PROMPT: '0', PATH: '/bin', HOME: '/h', https_proxy: 'http://proxy:3128', GIT_SSL_CAINFO: '/etc/ca.pem' });
  });
});
