import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { detectHardware, loadConfig, localModelFor, parseConfig, type HostHardware } from '../src/index.js';
import { yaml } from './helpers.js';

// agents.ollama.model: auto picks the local model for the host (CW 4.1); detection is
// injected, so no test needs a GPU or a Mac.

const probe = (present: string[], over: Partial<{ platform: string; arch: string; path: string }> = {}) => ({
  platform: 'linux',
  arch: 'x64',
  path: '/usr/local/bin:/usr/bin',
  exists: (p: string) => present.includes(p),
  ...over,
});

const ollamaOn = (text: string, hardware?: HostHardware, env: Record<string, string> = {}) =>
  parseConfig(text, { env, baseDir: '/srv', hostname: 'h', ...(hardware === undefined ? {} : { hardware }) }).config
    .agents.ollama;

describe('detectHardware', () => {
  it('finds a GPU by its device node or nvidia-smi on PATH, and nothing on a plain host', () => {
    expect(detectHardware(probe(['/dev/nvidia0']))).toEqual({ platform: 'linux', arch: 'x64', gpu: '/dev/nvidia0' });
    expect(detectHardware(probe(['/dev/kfd']))).toEqual({ platform: 'linux', arch: 'x64', gpu: '/dev/kfd' });
    expect(detectHardware(probe(['/usr/bin/nvidia-smi']))).toEqual({
      platform: 'linux',
      arch: 'x64',
      gpu: 'nvidia-smi on PATH',
    });
    expect(detectHardware(probe([]))).toEqual({ platform: 'linux', arch: 'x64' });
    // PATH absent or empty: nothing is looked up relative to the working directory.
    const asked: string[] = [];
    detectHardware({
      platform: 'linux',
      arch: 'x64',
      path: '::',
      exists: (p) => {
        asked.push(p);
        return false;
      },
    });
    expect(asked).toEqual(['/dev/nvidia0', '/dev/kfd']);
  });
});

describe('localModelFor', () => {
  it('7b on Apple silicon or with a GPU, 1.5b on CPU only, 7b when the host was not probed; each with its reason', () => {
    expect(localModelFor({ platform: 'darwin', arch: 'arm64' })).toEqual({
      model: 'qwen2.5-coder:7b',
      reason: 'auto: Apple silicon (darwin arm64)',
    });
    expect(localModelFor({ platform: 'darwin', arch: 'x64' })).toEqual({
      model: 'qwen2.5-coder:1.5b',
      reason: 'auto: no GPU found on this darwin x64 host (CPU only)',
    });
    expect(localModelFor({ platform: 'linux', arch: 'x64', gpu: '/dev/kfd' })).toEqual({
      model: 'qwen2.5-coder:7b',
      reason: 'auto: GPU found (/dev/kfd)',
    });
    expect(localModelFor({ platform: 'linux', arch: 'arm64' })).toMatchObject({ model: 'qwen2.5-coder:1.5b' });
    expect(localModelFor(undefined)).toEqual({ model: 'qwen2.5-coder:7b', reason: 'auto: host hardware not probed' });
  });
});

describe('agents.ollama.model', () => {
  it('auto is the default and resolves for the host; a named model always wins', () => {
    const cpu = { platform: 'linux', arch: 'x64' };
    expect(ollamaOn('', cpu)).toMatchObject({
      model: 'qwen2.5-coder:1.5b',
      model_reason: 'auto: no GPU found on this linux x64 host (CPU only)',
    });
    expect(ollamaOn(yaml('agents:', '  ollama:', '    model: auto'), { ...cpu, gpu: '/dev/nvidia0' })).toMatchObject({
      model: 'qwen2.5-coder:7b',
    });
    expect(ollamaOn(yaml('agents:', '  ollama:', '    model: qwen2.5-coder:14b'), cpu)).toEqual(
      expect.objectContaining({
        model: 'qwen2.5-coder:14b',
        model_reason: 'set in config (agents.ollama.model)',
      }),
    );
    // The sample config's ${CODEFLEET_OLLAMA_MODEL:-auto}: the variable names a model, or auto applies.
    const sample = yaml('agents:', '  ollama:', '    model: ${CODEFLEET_OLLAMA_MODEL:-auto}');
    expect(ollamaOn(sample, cpu).model).toBe('qwen2.5-coder:1.5b');
    expect(ollamaOn(sample, cpu, { CODEFLEET_OLLAMA_MODEL: 'deepseek-chat' }).model).toBe('deepseek-chat');
  });

  it('DeepSeek as the README shows it: the OpenAI-compatible provider with its model named', () => {
    const deepseek = yaml(
      'agents:',
      '  ollama:',
      '    provider: openai',
      '    host: https://api.deepseek.com/v1',
      '    model: deepseek-chat',
      '    api_key_env: DEEPSEEK_API_KEY',
    );
    expect(ollamaOn(deepseek, { platform: 'linux', arch: 'x64' }, { DEEPSEEK_API_KEY: 'sk-x' })).toMatchObject({
      provider: 'openai',
      host: 'https://api.deepseek.com/v1',
      model: 'deepseek-chat',
      model_reason: 'set in config (agents.ollama.model)',
      api_key_env: 'DEEPSEEK_API_KEY',
    });
  });

  it('loadConfig probes the host unless told the hardware', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'codefleet-host-model-'));
    try {
      await writeFile(join(dir, 'config.yaml'), 'agents:\n  default: ollama\n');
      const told = await loadConfig({ cwd: dir, env: {}, hardware: { platform: 'darwin', arch: 'arm64' } });
      expect(told.config.agents.ollama).toMatchObject({
        model: 'qwen2.5-coder:7b',
        model_reason: 'auto: Apple silicon (darwin arm64)',
      });
      const probed = await loadConfig({ cwd: dir, env: {} });
      expect(probed.config.agents.ollama.model_reason).toMatch(/^auto: (Apple silicon|GPU found|no GPU found on this)/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
