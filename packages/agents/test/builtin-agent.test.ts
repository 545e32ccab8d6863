import { mkdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { parseConfig } from '@codefleet/config';
import {
  createTempDir,
  createTempRepo,
  closedPort,
  git,
  startOllamaStandIn,
  type OllamaStandIn,
  type TempDir,
  type TempRepo,
} from '@codefleet/testkit';
import { createBuiltinAgent, probeOllama, type AgentRunRequest } from '../src/index.js';
import { agentTestEnv } from './conformance.js';

// The built-in agent against the labeled Ollama stand-in (testkit): the real `ollama`
// client, the real patch engine and real git repositories; only the model is scripted.

const files = {
  'package.json': '{ "name": "calc", "type": "module" }\n',
  'src/calc.js': 'export const add = (a, b) => a + b;\n',
  'test/calc.test.js': "import { add } from '../src/calc.js';\n",
  '.env': 'SECRET=do-not-send\n',
};

const goodReply = [
  'Plan: add multiply next to add.',
  '',
  '```js:src/calc.js',
  'export const add = (a, b) => a + b;',
  'export const multiply = (a, b) => a * b;',
  '```',
  '',
].join('\n');

let server: OllamaStandIn | undefined;
let repo: TempRepo | undefined;
let dir: TempDir | undefined;
afterEach(async () => {
  await server?.close();
  await repo?.dispose();
  await dir?.dispose();
  server = undefined;
  repo = undefined;
  dir = undefined;
});

const configFor = (yaml: string, env: Record<string, string> = {}) =>
  parseConfig(`agents:\n  ollama:\n${yaml}`, { env, baseDir: '/srv', hostname: 'h' }).config.agents.ollama;

async function setup(replies: Parameters<typeof startOllamaStandIn>[0] = {}) {
  server = await startOllamaStandIn(replies);
  repo = await createTempRepo({ files });
  await mkdir(join(repo.path, '.codefleet'), { recursive: true });
  await writeFile(join(repo.path, '.codefleet', 'task.md'), '# Task: Add multiply\n\nTASK-FILE-MARKER\n');
  return { server, repo };
}

const request = (workdir: string, overrides: Partial<AgentRunRequest> = {}): AgentRunRequest => ({
  workdir,
  prompt: 'Implement the task below.\n\nTask: Add multiply(a, b) to src/calc.js',
  pass: 'implement',
  attempt: 1,
  timeoutMs: 20_000,
  env: agentTestEnv(),
  ...overrides,
});

describe('built-in agent on the Ollama stand-in', () => {
  it('asks once, applies the patch: changed, tokens counted, prompt bounded and without secrets', async () => {
    const { server: s, repo: r } = await setup({
      replies: [{ content: goodReply, promptTokens: 321, completionTokens: 45 }],
    });
    const agent = createBuiltinAgent(configFor(`    host: ${s.url}\n    max_tokens: 900\n`));
    const result = await agent.run(request(r.path));
    expect(result).toMatchObject({
      outcome: 'changed',
      exitCode: 0,
      changedFiles: ['src/calc.js'],
      tokens: { prompt: 321, completion: 45 },
    });
    expect(await readFile(join(r.path, 'src/calc.js'), 'utf8')).toContain('multiply');
    expect(s.requests).toHaveLength(1);
    const [chat] = s.requests;
    expect(chat).toMatchObject({
      api: 'ollama',
      model: 'qwen2.5-coder:7b',
      stream: true,
      options: { num_ctx: 8192, num_predict: 900 },
    });
    const user = chat!.messages[1]!.content;
    expect(chat!.messages[0]!.role).toBe('system');
    expect(user).toContain('Add multiply(a, b)');
    expect(user).toContain('TASK-FILE-MARKER');
    expect(user).toContain('File: src/calc.js');
    expect(user).toContain('export const add = (a, b) => a + b;');
    expect(user).not.toContain('do-not-send');
    expect(result.outputTail).toContain('executed 1, succeeded 1, failed 0');
  });

  it('feeds an unparseable reply back once, then applies the second: the re-ask names the problem', async () => {
    const { server: s, repo: r } = await setup({ replies: ['I would add a multiply function.', goodReply] });
    const agent = createBuiltinAgent(configFor(`    host: ${s.url}\n`));
    const result = await agent.run(request(r.path, { attempt: 2, feedback: 'FEEDBACK-MARKER: build failed' }));
    expect(result.outcome).toBe('changed');
    expect(s.requests).toHaveLength(2);
    expect(s.requests[0]!.messages[1]!.content).toContain('FEEDBACK-MARKER');
    const second = s.requests[1]!.messages;
    expect(second.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user']);
    expect(second[2]!.content).toBe('I would add a multiply function.');
    expect(second[3]!.content).toMatch(/could not be used: it holds no file blocks/);
    expect(result.tokens!.prompt).toBeGreaterThan(0);
  });

  it('two unusable replies are a failed run whose output says why; shell-only replies are not run', async () => {
    const { server: s, repo: r } = await setup({ replies: ['no patch here', '```bash\ntouch pwned\n```\n'] });
    const result = await createBuiltinAgent(configFor(`    host: ${s.url}\n`)).run(request(r.path));
    expect(result).toMatchObject({ outcome: 'failed', exitCode: 1, changedFiles: [] });
    expect(result.detail).toMatch(/could not be used, twice: it holds only shell or git commands/);
    expect(result.outputTail).toMatch(/unusable reply/);
    await expect(readFile(join(r.path, 'pwned'))).rejects.toThrow();
  });

  it('refusals the model can act on: an elided whole file is re-asked with why, an edit refused at apply names why', async () => {
    const elided = [
      '```js:src/calc.js',
      '// ... existing code ...',
      'export const multiply = (a, b) => a * b;',
      '```',
      '',
    ].join('\n');
    const anchored = [
      '*** Begin Patch',
      '*** Update File: src/calc.js',
      '@@ function missing()',
      '-export const add = (a, b) => a + b;',
      '+export const add = (a, b) => b + a;',
      '*** End Patch',
      '',
    ].join('\n');
    const { server: s, repo: r } = await setup({ replies: [elided, anchored] });
    const result = await createBuiltinAgent(configFor(`    host: ${s.url}\n`)).run(request(r.path));
    expect(s.requests[1]!.messages[3]!.content).toMatch(/stands for lines left out.*send the complete file/);
    expect(result).toMatchObject({ outcome: 'failed', changedFiles: [] });
    expect(result.detail).toMatch(/src\/calc\.js: .*@@ line "function missing\(\)" is not in the file/);
    expect(await readFile(join(r.path, 'src/calc.js'), 'utf8')).toBe(files['src/calc.js']);
  });

  it('a long reply is cut in the output tail with a marker saying how much was dropped', async () => {
    const long = `${'y'.repeat(20_000)}\nno patch here`;
    const { server: s, repo: r } = await setup({ replies: [long, long] });
    const result = await createBuiltinAgent(configFor(`    host: ${s.url}\n`)).run(request(r.path));
    const marker = /^…\[truncated ([\d,]+) bytes\]\n/.exec(result.outputTail);
    expect(marker).not.toBeNull();
    // Two replies of 20,000 bytes and a few lines about them, 8 KiB kept.
    expect(Number(marker![1]!.replace(/,/g, ''))).toBeGreaterThan(2 * 20_000 - 8_192);
    expect(Buffer.byteLength(result.outputTail.slice(marker![0].length))).toBeLessThanOrEqual(8_192);
  });

  it('a second attempt answering with a diff against its first, uncommitted attempt applies; fuzz is reported', async () => {
    // The model's diff against its own first attempt, its first context line misremembered.
    const second = [
      'Plan: add subtract too.',
      '',
      '```diff',
      '--- a/src/calc.js',
      '+++ b/src/calc.js',
      '@@ -1,2 +1,3 @@',
      ' export const add = (a, b) => a + b; // sum',
      ' export const multiply = (a, b) => a * b;',
      '+export const subtract = (a, b) => a - b;',
      '```',
      '',
    ].join('\n');
    const { server: s, repo: r } = await setup({ replies: [goodReply, second] });
    const agent = createBuiltinAgent(configFor(`    host: ${s.url}\n`));
    expect((await agent.run(request(r.path))).outcome).toBe('changed');
    const retry = await agent.run(request(r.path, { attempt: 2, feedback: 'add subtract as well' }));
    expect(retry).toMatchObject({ outcome: 'changed', changedFiles: ['src/calc.js'] });
    expect(await readFile(join(r.path, 'src/calc.js'), 'utf8')).toBe(
      `${goodReply.split('\n').slice(3, 5).join('\n')}\nexport const subtract = (a, b) => a - b;\n`,
    );
    expect(retry.outputTail).toMatch(/succeeded diff apply src\/calc\.js \(applied with reduced context/);
  });

  it('a reply writing outside the workspace or into .git is refused by the patch engine: failed, nothing written', async () => {
    const { server: s, repo: r } = await setup({
      replies: ['```sh:../outside.sh\necho hi\n```\n```txt:.git/hooks/pre-commit\nexit 0\n```\n'],
    });
    const result = await createBuiltinAgent(configFor(`    host: ${s.url}\n`)).run(request(r.path));
    expect(result.outcome).toBe('failed');
    expect(result.outputTail).toMatch(/leaves the workspace/);
    expect(result.outputTail).toMatch(/inside \.git/);
    await expect(readFile(join(r.path, '..', 'outside.sh'))).rejects.toThrow();
  });

  it('files the scope excludes (sparse checkout: skip-worktree) are not even named to the model', async () => {
    const { server: s, repo: r } = await setup({ replies: [goodReply] });
    await mkdir(join(r.path, 'internal'), { recursive: true });
    await writeFile(join(r.path, 'internal', 'acquisition-plan.md'), 'secret plans\n');
    await git(r.path, ['add', 'internal/acquisition-plan.md']);
    await git(r.path, ['commit', '-q', '-m', 'internal']);
    // What the workspace's sparse checkout leaves: the path marked skip-worktree, the file absent.
    await git(r.path, ['update-index', '--skip-worktree', 'internal/acquisition-plan.md']);
    await rm(join(r.path, 'internal'), { recursive: true });
    await createBuiltinAgent(configFor(`    host: ${s.url}\n`)).run(request(r.path));
    const sent = JSON.stringify(s.requests);
    expect(sent).toContain('src/calc.js');
    expect(sent).not.toContain('acquisition-plan');
  });

  it('server errors, a missing model and a refused connection are errors with a reason, never a crash', async () => {
    const { server: s, repo: r } = await setup({ replies: [{ status: 500, error: 'out of memory' }] });
    // One request each: what a single failure becomes (retries are model-call-policy.test.ts's).
    const once = '    request_retries: 0\n';
    const failed = await createBuiltinAgent(configFor(`    host: ${s.url}\n${once}`)).run(request(r.path));
    expect(failed).toMatchObject({ outcome: 'error', exitCode: null });
    expect(failed.detail).toMatch(/HTTP 500: out of memory/);
    // A server error may pass; a missing model or a refused key will not (permanent).
    expect(failed.permanent).toBeUndefined();

    const missing = await createBuiltinAgent(configFor(`    host: ${s.url}\n    model: llama-nope:1b\n`)).run(
      request(r.path),
    );
    expect(missing).toMatchObject({ outcome: 'error', permanent: true });
    expect(missing.detail).toMatch(/does not have model "llama-nope:1b"/);

    const port = await closedPort();
    const refused = await createBuiltinAgent(configFor(`    host: http://127.0.0.1:${port}\n${once}`)).run(
      request(r.path),
    );
    expect(refused).toMatchObject({ outcome: 'error' });
    expect(refused.permanent).toBeUndefined();
    expect(refused.detail).toMatch(/unreachable \(ECONNREFUSED\)/);
  });

  it('a model that never answers is a timeout (exit 124, request aborted); an abort is cancelled', async () => {
    const { server: s, repo: r } = await setup({ replies: [{ hang: true }, { hang: true }] });
    const agent = createBuiltinAgent(configFor(`    host: ${s.url}\n`));
    // The model never answers: a result at all means the request was given up at the timeout.
    const timedOut = await agent.run(request(r.path, { timeoutMs: 400 }));
    expect(timedOut).toMatchObject({ outcome: 'timeout', exitCode: 124, timedOut: true });
    // The server counted nothing, but the model read the prompt: an estimate is charged to the budget.
    expect(timedOut.tokens?.prompt).toBeGreaterThan(50);

    const controller = new AbortController();
    setTimeout(() => controller.abort(), 200);
    const cancelled = await agent.run(request(r.path, { signal: controller.signal }));
    expect(cancelled).toMatchObject({ outcome: 'error', detail: 'cancelled' });
  });

  it('caps generated tokens at what is left of the budget after the prompt, and stops asking once it is spent', async () => {
    const { server: s, repo: r } = await setup({
      replies: [{ content: 'no patch', promptTokens: 1_500, completionTokens: 600 }, goodReply],
    });
    const result = await createBuiltinAgent(configFor(`    host: ${s.url}\n    max_tokens: 4000\n`)).run(
      request(r.path, { tokenBudget: 2_000 }),
    );
    expect(s.requests).toHaveLength(1);
    // The reply may use what the prompt (about 4 characters a token) leaves of the budget.
    const promptChars = s.requests[0]!.messages.reduce((sum, m) => sum + m.content.length, 0);
    expect(s.requests[0]!.options).toMatchObject({ num_predict: 2_000 - Math.ceil(promptChars / 4) });
    expect(result).toMatchObject({ outcome: 'failed', tokens: { prompt: 1_500, completion: 600 } });
    expect(result.detail).toMatch(/token budget spent/);
  });

  it('does not send a prompt that alone would overrun the budget', async () => {
    const { server: s, repo: r } = await setup({ replies: [goodReply] });
    const result = await createBuiltinAgent(configFor(`    host: ${s.url}\n`)).run(
      request(r.path, { tokenBudget: 20 }),
    );
    expect(s.requests).toHaveLength(0);
    expect(result).toMatchObject({ outcome: 'failed', changedFiles: [] });
    expect(result.detail).toMatch(
      /token budget too small for the prompt: about \d+ prompt tokens, 20 of the budget left/,
    );
  });
});

describe("built-in agent on an OpenAI-compatible endpoint (the stand-in's /v1)", () => {
  it('sends the key from the run environment as a bearer header, never in the URL or the output', async () => {
    const key = 'sk-test-planted-key-123';
    const { server: s, repo: r } = await setup({
      replies: ['nothing usable', { content: goodReply, promptTokens: 10, completionTokens: 20 }],
    });
    const agent = createBuiltinAgent(
      configFor(`    provider: openai\n    host: ${s.openAiBase}\n    api_key_env: LLM_KEY\n    max_tokens: 256\n`),
    );
    expect(agent.allowEnv).toEqual(['LLM_KEY']);
    const result = await agent.run(request(r.path, { env: { ...agentTestEnv(), LLM_KEY: key } }));
    expect(result).toMatchObject({ outcome: 'changed', changedFiles: ['src/calc.js'] });
    expect(s.requests).toHaveLength(2);
    for (const chat of s.requests) {
      expect(chat).toMatchObject({
        api: 'openai',
        url: '/v1/chat/completions',
        authorization: `Bearer ${key}`,
        options: { max_tokens: 256 },
      });
      expect(chat.url).not.toContain(key);
    }
    expect(JSON.stringify(result)).not.toContain(key);
  });

  it('a refused key is an error that names the variable to check, not the key', async () => {
    const { server: s, repo: r } = await setup({
      replies: [{ status: 401, error: 'invalid api key sk-test-planted' }],
    });
    const agent = createBuiltinAgent(
      configFor(`    provider: openai\n    host: ${s.openAiBase}\n    api_key_env: LLM_KEY\n`),
    );
    const result = await agent.run(request(r.path, { env: { ...agentTestEnv(), LLM_KEY: 'sk-test-planted' } }));
    expect(result).toMatchObject({ outcome: 'error', permanent: true });
    expect(result.detail).toMatch(/HTTP 401.*API key variable/);
    expect(JSON.stringify(result)).not.toContain('sk-test-planted');
  });
});

describe("the prompt's bounded context", () => {
  it('shows changed and named files first, leaves out what does not fit, and never reads through a symlink', async () => {
    const { server: s, repo: r } = await setup({ replies: [goodReply] });
    await r.commit({ 'src/big.js': `// ${'x'.repeat(5_000)}\n`, 'docs/notes.md': 'NOTES-MARKER\n' });
    dir = await createTempDir('outside');
    await writeFile(join(dir.path, 'secret.txt'), 'OUTSIDE-SECRET\n');
    await symlink(join(dir.path, 'secret.txt'), join(r.path, 'link.txt'));
    await writeFile(join(r.path, 'test/calc.test.js'), "import { add } from '../src/calc.js';\n// CHANGED-MARKER\n");
    // About 2 000 characters of file contents.
    const agent = createBuiltinAgent(configFor(`    host: ${s.url}\n    context_tokens: 1024\n`));
    await agent.run(request(r.path));
    const user = s.requests[0]!.messages[1]!.content;
    expect(user).not.toContain('OUTSIDE-SECRET');
    expect(user).not.toContain('x'.repeat(100));
    expect(user).toMatch(/left out for length: .*src\/big\.js/);
    const order = [...user.matchAll(/^File: (.+)$/gm)].map((m) => m[1]);
    expect(order.slice(0, 2)).toEqual(['test/calc.test.js', 'src/calc.js']);
    expect(user).toContain('## Repository files');
    expect(user).toMatch(/^src\/big\.js$/m);
  });
});

describe('probeOllama', () => {
  it('ready when the server answers and has the model; model_missing names what it has; unreachable otherwise', async () => {
    server = await startOllamaStandIn({ models: ['qwen2.5-coder:1.5b'] });
    expect(await probeOllama({ host: server.url, model: 'qwen2.5-coder:1.5b' })).toEqual({
      status: 'ready',
      version: '0.0.0-stand-in',
    });
    expect(await probeOllama({ host: server.url, model: 'qwen2.5-coder:7b' })).toEqual({
      status: 'model_missing',
      version: '0.0.0-stand-in',
      models: ['qwen2.5-coder:1.5b'],
    });
    const port = await closedPort();
    expect(await probeOllama({ host: `http://127.0.0.1:${port}`, model: 'x', timeoutMs: 1_000 })).toMatchObject({
      status: 'unreachable',
    });
  });
});
