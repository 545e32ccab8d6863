import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { createTempDir, gitTestEnv, startOllamaStandIn, type OllamaStandIn, type TempDir } from '@codefleet/testkit';
import type { HostHardware } from '@codefleet/config';
import { runCli } from '../src/index.js';

// `codefleet demo` picks the built-in agent when $OLLAMA_HOST answers with the model: here
// the labeled Ollama stand-in from testkit, replying from a script.

const calc = [
  'Plan: add multiply next to add and subtract.',
  '',
  '```js:src/calc.js',
  'export function add(a, b) {',
  '  return a + b;',
  '}',
  '',
  'export function subtract(a, b) {',
  '  return a - b;',
  '}',
  '',
  'export function multiply(a, b) {',
  '  return a * b;',
  '}',
  '```',
].join('\n');

const tests = [
  'Plan: cover multiply, negatives included.',
  '',
  '```js:test/multiply.test.js',
  "import { test } from 'node:test';",
  "import assert from 'node:assert/strict';",
  "import { multiply } from '../src/calc.js';",
  "test('multiplies', () => assert.equal(multiply(3, 4), 12));",
  "test('negatives', () => assert.equal(multiply(-3, 4), -12));",
  '```',
].join('\n');

let dir: TempDir | undefined;
let server: OllamaStandIn | undefined;
afterEach(async () => {
  await server?.close();
  await dir?.dispose();
  server = undefined;
  dir = undefined;
});

// A GPU host, so `model: auto` is the stand-in's qwen2.5-coder:7b whatever this machine has.
const gpuHost: HostHardware = { platform: 'linux', arch: 'x64', gpu: '/dev/nvidia0' };

async function demo(
  env: Record<string, string>,
  command = 'demo',
  hardware = gpuHost,
  config = 'data_dir: ./data\n',
): Promise<{ code: number; out: string }> {
  dir = await createTempDir('demo-ollama');
  await writeFile(join(dir.path, 'config.yaml'), config);
  const out: string[] = [];
  const code = await runCli(['--config', join(dir.path, 'config.yaml'), command], {
    out: (l) => out.push(l),
    err: (l) => out.push(l),
    cwd: dir.path,
    hardware,
    env: { PATH: process.env.PATH, HOME: dir.path, ...gitTestEnv(), ...env },
  });
  return { code, out: out.join('\n') };
}

describe('codefleet demo with a local Ollama', () => {
  it('uses the built-in agent when the server answers and has the model, and says so', async () => {
    server = await startOllamaStandIn({ replies: ['I will add multiply to the calculator.', calc, tests] });
    const { code, out } = await demo({ OLLAMA_HOST: server.url });
    expect(out).toContain('the agent is the BUILT-IN agent on a local model (Ollama 0.0.0-stand-in');
    expect(out).toContain('demo passed');
    expect(code).toBe(0);
    expect(server.requests).toHaveLength(3);
    expect(server.requests[0]!.messages[1]!.content).toContain('Add a multiply(a, b) function to the calculator');
  });

  it('falls back to the scripted agent when the model is not there, saying why', async () => {
    server = await startOllamaStandIn({ models: ['llama3.2:1b'] });
    // Only the choice is asserted: in-process from source the scripted agent's compiled
    // module is not there (cli.test.ts runs the whole scripted demo through the binary).
    const { out } = await demo({ OLLAMA_HOST: server.url });
    expect(out).toMatch(
      /the agent is SCRIPTED \(no language model\): Ollama at http:\/\/127\.0\.0\.1:\d+ answered but has no qwen2\.5-coder:7b/,
    );
    expect(server.requests).toHaveLength(0);
  });
});

describe('codefleet doctor on the built-in agent', () => {
  const config = 'data_dir: ./data\nagents:\n  default: ollama\n';
  it('says which model auto picked for the host and why', async () => {
    server = await startOllamaStandIn({ models: ['qwen2.5-coder:1.5b'] });
    const cpu = await demo({ OLLAMA_HOST: server.url }, 'doctor', { platform: 'linux', arch: 'x64' }, config);
    expect(cpu.out).toMatch(
      /agent: ollama 0\.0\.0-stand-in at http:\/\/127\.0\.0\.1:\d+ has qwen2\.5-coder:1\.5b \(auto: no GPU found on this linux x64 host \(CPU only\)\)/,
    );
    await dir?.dispose();
    const mac = await demo({ OLLAMA_HOST: server.url }, 'doctor', { platform: 'darwin', arch: 'arm64' }, config);
    expect(mac.out).toMatch(
      /agent ollama: http:\/\/127\.0\.0\.1:\d+ has no qwen2\.5-coder:7b \(auto: Apple silicon \(darwin arm64\)\)/,
    );
    expect(mac.out).toMatch(/ollama pull qwen2\.5-coder:7b, or set agents\.ollama\.model/);
  });

  it('a model named in the config wins over auto, and doctor says it was set there', async () => {
    server = await startOllamaStandIn({ models: ['qwen2.5-coder:14b'] });
    const { out } = await demo(
      { OLLAMA_HOST: server.url },
      'doctor',
      { platform: 'linux', arch: 'x64' },
      `${config}  ollama:\n    model: qwen2.5-coder:14b\n`,
    );
    expect(out).toMatch(/has qwen2\.5-coder:14b \(set in config \(agents\.ollama\.model\)\)/);
  });
});
