/**
 * The CLI adapters (Aider, Claude Code, Codex, Gemini CLI) against fixture executables of
 * the same names on the agent's PATH (test/fixtures/cli-agent.mjs, not the real tools):
 * each records its argv, environment, cwd and stdin, so what every adapter produces is
 * asserted exactly, and behaves like its tool on success, API errors and caps.
 */
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, realpath, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from '@jest/globals';
import { parseConfig } from '@codefleet/config';
import { createTempDir, createTempRepo, isAlive, waitFor, withTimeoutsUntil } from '@codefleet/testkit';
import {
  buildAgentEnv,
  createAgent,
  createAiderAgent,
  createClaudeAgent,
  createCodexAgent,
  createGeminiAgent,
  maxPromptArgumentBytes,
  type Agent,
  type AgentRunRequest,
  type CliAgentSettings,
} from '../src/index.js';
import { apiErrorVerdict } from '../src/cli/shared.js';
import { fixture, hostilePrompt, plantedCredentials } from './conformance.js';

type Tool = 'aider' | 'claude' | 'codex' | 'gemini';
type Behaviour = 'edit' | 'nothing' | 'api-error' | 'cap' | 'fail' | 'hang' | 'quote' | 'long-api-error';

interface Call {
  tool: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
  stdin: string;
}

const aiderModel = 'ollama_chat/qwen2.5-coder:7b';
const keys = {
  ANTHROPIC_API_KEY: 'sk-ant-test-key',
  OPENAI_API_KEY: 'sk-openai-test-key',
  GEMINI_API_KEY: 'gemini-test-key',
};

/** Per tool: how to build it, the API key it may see, and the exact argv it must produce. */
const tools: Record<
  Tool,
  {
    create(settings: CliAgentSettings): Agent;
    key?: keyof typeof keys;
    expectedArgs(req: AgentRunRequest, promptFile: string): string[];
  }
> = {
  aider: {
    create: (settings) => createAiderAgent({ ...settings, model: aiderModel, mapTokens: 0 }),
    expectedArgs: (req, promptFile) => [
      '--model',
      aiderModel,
      '--yes-always',
      '--no-auto-commits',
      '--no-dirty-commits',
      '--no-gitignore',
      '--no-check-update',
      '--no-show-release-notes',
      '--no-analytics',
      '--no-pretty',
      '--no-fancy-input',
      '--no-detect-urls',
      '--map-tokens',
      '0',
      '--input-history-file',
      join(req.workdir, '.codefleet', 'aider.input.history'),
      '--chat-history-file',
      join(req.workdir, '.codefleet', 'aider.chat.history.md'),
      '--read',
      'CONVENTIONS.md',
      '--message-file',
      promptFile,
    ],
  },
  claude: {
    create: (settings) => createClaudeAgent({ ...settings, maxTurns: 30 }),
    key: 'ANTHROPIC_API_KEY',
    expectedArgs: (req) => [
      '-p',
      '--output-format',
      'json',
      '--dangerously-skip-permissions',
      '--max-turns',
      '30',
      '--',
      req.prompt,
    ],
  },
  codex: {
    create: (settings) => createCodexAgent(settings),
    key: 'OPENAI_API_KEY',
    expectedArgs: (req) => ['exec', '--sandbox', 'workspace-write', '--color', 'never', '--json', '--', req.prompt],
  },
  gemini: {
    create: (settings) => createGeminiAgent(settings),
    key: 'GEMINI_API_KEY',
    expectedArgs: (req) => [
      '--approval-mode',
      'yolo',
      '--skip-trust',
      '--output-format',
      'json',
      `--prompt=${req.prompt}`,
    ],
  },
};
const toolNames = Object.keys(tools) as Tool[];

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A bin directory holding an executable named `tool` that runs the fixture with `behaviour`. */
async function installCliFixture(
  tool: string,
  behaviour: Behaviour,
): Promise<{ bin: string; calls(): Promise<Call[]> }> {
  const dir = await createTempDir(`cli-${tool}`);
  cleanups.push(() => dir.dispose());
  const executable = join(dir.path, tool);
  const url = pathToFileURL(fixture('cli-agent.mjs')).href;
  await writeFile(
    executable,
    `#!${process.execPath}\nimport(${JSON.stringify(url)}).then((m) => m.run(${JSON.stringify(behaviour)}));\n`,
  );
  await chmod(executable, 0o755);
  return {
    bin: dir.path,
    calls: async () =>
      existsSync(`${executable}.calls.jsonl`)
        ? (await readFile(`${executable}.calls.jsonl`, 'utf8'))
            .trim()
            .split('\n')
            .map((line) => JSON.parse(line) as Call)
        : [],
  };
}

/** A repository prepared like the workspace does: the tool's conventions file written, untracked. */
async function workdir(agent: Agent): Promise<string> {
  const repo = await createTempRepo({ prefix: 'cli-agent', files: { 'README.md': '# sample\n' } });
  cleanups.push(() => repo.dispose());
  if (agent.contextFile) await writeFile(join(repo.path, agent.contextFile), 'Use exact file paths.\n');
  return repo.path;
}

/** The worker's environment: forge tokens, every tool's key and unrelated secrets, as a real host might have. */
function hostEnv(bin: string, home: string): Record<string, string> {
  return {
    PATH: `${bin}:${process.env.PATH ?? ''}`,
    HOME: home,
    LANG: 'C.UTF-8',
    ...plantedCredentials,
    ...keys,
    OLLAMA_API_BASE: 'http://127.0.0.1:11434',
    ANTHROPIC_BASE_URL: 'http://127.0.0.1:9/gateway',
    AWS_SECRET_ACCESS_KEY: 'aws-planted',
    NPM_TOKEN: 'npm-planted',
  };
}

async function setUp(tool: Tool, behaviour: Behaviour, overrides: Partial<CliAgentSettings> = {}) {
  const installed = await installCliFixture(tool, behaviour);
  const agent = tools[tool].create({
    binary: tool,
    timeoutMs: 20_000,
    ...(tools[tool].key ? { apiKeyEnv: tools[tool].key } : {}),
    ...overrides,
  });
  const path = await workdir(agent);
  const host = hostEnv(installed.bin, path);
  const req = (extra: Partial<AgentRunRequest> = {}): AgentRunRequest => ({
    workdir: path,
    prompt: 'Add a greeting to the README\n\nKeep it short.\n',
    pass: 'implement',
    attempt: 1,
    timeoutMs: 20_000,
    // What the runtime does: the allowlist plus the variables this agent asked for.
    env: buildAgentEnv(host, { allow: [...(agent.allowEnv ?? [])] }),
    ...extra,
  });
  return { agent, path, host, req, calls: installed.calls };
}

describe.each(toolNames)('%s adapter', (tool) => {
  it('starts the tool with exactly its argv, stdin closed, in the workdir, with only the allowlist and its own key', async () => {
    const { agent, path, host, req, calls } = await setUp(tool, 'nothing');
    const request = req({ prompt: '--help is not an option here: add a greeting\n' });
    const result = await agent.run(request);
    expect(result).toMatchObject({ outcome: 'no_changes', exitCode: 0, changedFiles: [] });
    const [call] = await calls();
    expect(call?.args).toEqual(tools[tool].expectedArgs(request, join(path, '.codefleet', 'prompt-implement-1.md')));
    expect(call?.stdin).toBe('');
    expect(call?.cwd).toBe(await realpath(path));
    const key = tools[tool].key;
    const expectedEnv: Record<string, string> = { PATH: host.PATH!, HOME: host.HOME!, LANG: host.LANG! };
    if (key) expectedEnv[key] = keys[key];
    if (tool === 'aider') expectedEnv.OLLAMA_API_BASE = host.OLLAMA_API_BASE!;
    // Codex's built-in provider reads its key as CODEX_API_KEY: the configured one, under that name too.
    if (tool === 'codex') expectedEnv.CODEX_API_KEY = keys.OPENAI_API_KEY;
    // Claude Code's model API may be elsewhere (a gateway); it is kept off Anthropic's other servers.
    if (tool === 'claude')
      Object.assign(expectedEnv, {
        ANTHROPIC_BASE_URL: host.ANTHROPIC_BASE_URL!,
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      });
    // Plus the run's mark, by which what leaves the process group is found and killed.
    expect(call?.env).toEqual({ ...expectedEnv, CODEFLEET_RUN_MARK: expect.stringMatching(/^[0-9a-f]{24}$/) });
  });

  it('never passes forge credentials, even when the caller put them in the request', async () => {
    const { agent, req, calls } = await setUp(tool, 'nothing');
    const base = req();
    await agent.run({
      ...base,
      env: { ...base.env, ...plantedCredentials, GIT_CONFIG_PARAMETERS: "'credential.helper=store'" },
    });
    const [call] = await calls();
    expect(JSON.stringify(call?.env)).not.toContain('planted');
    for (const name of [...Object.keys(plantedCredentials), 'GIT_CONFIG_PARAMETERS'])
      expect(call?.env).not.toHaveProperty(name);
  });

  it('an edit → changed, the prompt reached the tool', async () => {
    const { agent, path, req } = await setUp(tool, 'edit');
    const result = await agent.run(req());
    expect(result).toMatchObject({ outcome: 'changed', exitCode: 0, changedFiles: ['NOTES.md'] });
    expect(await readFile(join(path, 'NOTES.md'), 'utf8')).toBe(`${tool}: Add a greeting to the README\n`);
  });

  it('task text with shell syntax reaches the tool verbatim and runs nothing', async () => {
    const { agent, path, req, calls } = await setUp(tool, 'nothing');
    const markerDir = await createTempDir('marker');
    cleanups.push(() => markerDir.dispose());
    const marker = join(markerDir.path, `pwned-${randomUUID()}`);
    const request = req({ prompt: hostilePrompt(marker) });
    await agent.run(request);
    expect(existsSync(marker)).toBe(false);
    const [call] = await calls();
    expect(call?.args).toEqual(tools[tool].expectedArgs(request, join(path, '.codefleet', 'prompt-implement-1.md')));
  });

  it('a fatal API error printed with exit 0 → error, not no_changes', async () => {
    const { agent, req } = await setUp(tool, 'api-error');
    const result = await agent.run(req());
    expect(result.exitCode).toBe(0);
    expect(result.outcome).toBe('error');
    expect(result.detail).toMatch(/reported an API error: .*(?:api.key|x-api-key|401)/i);
    // A refused key fails again on every retry.
    expect(result.permanent).toBe(true);
  });

  it('a non-zero exit → failed with its output', async () => {
    const { agent, req } = await setUp(tool, 'fail');
    const result = await agent.run(req());
    expect(result).toMatchObject({ outcome: 'failed', exitCode: 1, detail: 'exited with code 1' });
    expect(result.outputTail).toContain(`${tool}: fatal: gave up`);
  });

  it('a tool that hangs is killed with its children at the timeout → timeout, exit 124', async () => {
    const { agent, req } = await setUp(tool, 'hang', { killGraceMs: 200 });
    const pids = (tail: string) => (/pids (\d+) (\d+)/.exec(tail) ?? []).slice(1).map(Number);
    // A run stopped before the fixture printed its pids (a loaded machine can start it that
    // slowly) runs again with a longer timeout: what is asserted is how a started tree ends.
    const { result } = await withTimeoutsUntil(
      [3_000, 15_000, 60_000],
      (timeoutMs) => agent.run(req({ timeoutMs })),
      (run) => pids(run.outputTail).length === 2,
    );
    expect(result).toMatchObject({ outcome: 'timeout', exitCode: 124, timedOut: true });
    const [parent, grandchild] = pids(result.outputTail);
    expect(grandchild).toBeGreaterThan(0);
    await waitFor(() => !isAlive(parent!) && !isAlive(grandchild!), { what: 'no survivors' });
  });
});

describe.each(['aider', 'claude', 'gemini'] as const)('%s turn or iteration cap', (tool) => {
  it('is failed (unfinished, fed back), even with exit 0 and files changed', async () => {
    const { agent, req } = await setUp(tool, 'cap');
    const result = await agent.run(req());
    expect(result.outcome).toBe('failed');
    expect(result.changedFiles).toEqual(['NOTES.md']);
    expect(result.detail).toMatch(/cap|turn limit/);
  });
});

describe('CLI adapter details', () => {
  it.each(toolNames)(
    '%s: error text the tool did not print as its own fatal error (quoted mid-line, or long before the end) is not an API error',
    async (tool) => {
      const { agent, req } = await setUp(tool, 'quote');
      const result = await agent.run(req());
      expect(result).toMatchObject({ outcome: 'no_changes' });
    },
  );

  it.each(['claude', 'gemini'] as const)(
    '%s: the final JSON verdict is read in full even when longer than the stored output tail',
    async (tool) => {
      const { agent, req } = await setUp(tool, 'long-api-error');
      const result = await agent.run(req());
      expect(result).toMatchObject({ outcome: 'error', permanent: true });
      expect(Buffer.byteLength(result.outputTail)).toBeLessThanOrEqual(8_192 + 64);
    },
  );

  it('an API error that a retry may fix (rate limit, overload) is an error but not permanent', () => {
    expect(apiErrorVerdict('aider', 'litellm.RateLimitError: rate limited', { outcome: 'no_changes' })).toEqual({
      outcome: 'error',
      detail: 'aider reported an API error: litellm.RateLimitError: rate limited',
    });
    expect(
      apiErrorVerdict('Codex', 'ERROR: unexpected status 503 Service Unavailable', { outcome: 'failed' }).permanent,
    ).toBeUndefined();
    expect(apiErrorVerdict('Codex', 'ERROR: unexpected status 401 Unauthorized', { outcome: 'failed' }).permanent).toBe(
      true,
    );
  });

  it('claude: an API error after edits keeps changed, with the error in the detail', async () => {
    const { agent, path, req } = await setUp('claude', 'api-error');
    await writeFile(join(path, 'partial.txt'), 'half done\n');
    const result = await agent.run(req());
    expect(result).toMatchObject({ outcome: 'changed', changedFiles: ['partial.txt'] });
    expect(result.detail).toMatch(/Claude Code reported an API error: API Error: 401/);
  });

  it('a prompt too long for one argument is passed as a pointer to the prompt file', async () => {
    const { agent, req, calls } = await setUp('claude', 'nothing');
    const prompt = `Refactor everything\n${'x'.repeat(maxPromptArgumentBytes)}\n`;
    await agent.run(req({ prompt }));
    const [call] = await calls();
    expect(call?.args.at(-1)).toBe(
      'The task is too long for the command line. Read it in .codefleet/prompt-implement-1.md and do what it says.',
    );
  });

  it('aider: no --read when there is no conventions file; its tag cache is removed, not counted', async () => {
    const installed = await installCliFixture('aider', 'edit');
    const agent = createAiderAgent({ binary: 'aider', model: aiderModel, mapTokens: 1024 });
    const repo = await createTempRepo({ prefix: 'cli-aider', files: { 'README.md': '# sample\n' } });
    cleanups.push(() => repo.dispose());
    await mkdir(join(repo.path, '.aider.tags.cache.v4'));
    await writeFile(join(repo.path, '.aider.tags.cache.v4', 'cache.db'), 'tags');
    const result = await agent.run({
      workdir: repo.path,
      prompt: 'Add notes\n',
      pass: 'implement',
      attempt: 1,
      timeoutMs: 20_000,
      env: buildAgentEnv(hostEnv(installed.bin, repo.path), { allow: [...(agent.allowEnv ?? [])] }),
    });
    expect(result).toMatchObject({ outcome: 'changed', changedFiles: ['NOTES.md'] });
    expect(existsSync(join(repo.path, '.aider.tags.cache.v4'))).toBe(false);
    const [call] = await installed.calls();
    expect(call?.args).not.toContain('--read');
    expect(call?.args.slice(call.args.indexOf('--map-tokens'), call.args.indexOf('--map-tokens') + 2)).toEqual([
      '--map-tokens',
      '1024',
    ]);
  });
});

describe('createAgent for the CLI agents', () => {
  const agentsFrom = (yaml: string) =>
    parseConfig(yaml, { env: {}, baseDir: '/srv/codefleet', hostname: 'test-host' }).config.agents;

  it.each([
    [
      'codex',
      'codex:\n    approval_args: [--full-auto]\n',
      ['exec', '--full-auto', '--color', 'never', '--json', '--'],
    ],
    ['gemini', 'gemini:\n    approval_args: [-y]\n', ['-y', '--output-format', 'json']],
  ] as const)(
    '%s: approval_args replace the built-in approval flags for an older CLI',
    async (tool, section, argsStart) => {
      const installed = await installCliFixture(tool, 'nothing');
      const agent = createAgent(tool, agentsFrom(`agents:\n  ${section}`));
      const path = await workdir(agent);
      await agent.run({
        workdir: path,
        prompt: 'Do it\n',
        pass: 'implement',
        attempt: 1,
        timeoutMs: 20_000,
        env: buildAgentEnv(hostEnv(installed.bin, path), { allow: [...(agent.allowEnv ?? [])] }),
      });
      const [call] = await installed.calls();
      expect(call?.args.slice(0, argsStart.length)).toEqual(argsStart);
    },
  );

  it('a profile runs its agent with its own model (router routes name profiles)', async () => {
    const installed = await installCliFixture('codex', 'nothing');
    const agents = agentsFrom(
      'agents:\n  codex:\n    model: gpt-5-codex\n  profiles:\n    strongest: { agent: codex, model: gpt-5.1-codex-max }\n',
    );
    const agent = createAgent('strongest', agents);
    expect(agent.name).toBe('codex');
    const path = await workdir(agent);
    await agent.run({
      workdir: path,
      prompt: 'Do it\n',
      pass: 'implement',
      attempt: 1,
      timeoutMs: 20_000,
      env: buildAgentEnv(hostEnv(installed.bin, path), { allow: [...(agent.allowEnv ?? [])] }),
    });
    const [call] = await installed.calls();
    expect(call?.args.slice(call.args.indexOf('--model'), call.args.indexOf('--model') + 2)).toEqual([
      '--model',
      'gpt-5.1-codex-max',
    ]);
  });

  it.each([
    [
      'claude',
      'claude:\n    binary: ./bin/claude\n    model: claude-sonnet-4-6\n    max_turns: 5\n    extra_args: [--verbose]\n',
      [
        '-p',
        '--output-format',
        'json',
        '--dangerously-skip-permissions',
        '--max-turns',
        '5',
        '--model',
        'claude-sonnet-4-6',
        '--verbose',
        '--',
      ],
      'ANTHROPIC_API_KEY',
    ],
    [
      'codex',
      'codex:\n    binary: ./bin/codex\n    model: gpt-5-codex\n',
      ['exec', '--sandbox', 'workspace-write', '--color', 'never', '--json', '--model', 'gpt-5-codex', '--'],
      'OPENAI_API_KEY',
    ],
    [
      'gemini',
      'gemini:\n    binary: ./bin/gemini\n    model: gemini-2.5-pro\n    api_key_env: GOOGLE_API_KEY\n',
      ['--approval-mode', 'yolo', '--skip-trust', '--output-format', 'json', '--model', 'gemini-2.5-pro'],
      'GOOGLE_API_KEY',
    ],
    [
      'aider',
      'aider:\n    binary: ./bin/aider\n    model: ollama_chat/qwen2.5-coder:1.5b\n    map_tokens: 512\n    api_key_env: DEEPSEEK_API_KEY\n',
      ['--model', 'ollama_chat/qwen2.5-coder:1.5b', '--yes-always'],
      'DEEPSEEK_API_KEY',
    ],
  ] as const)(
    '%s: binary, model, caps, extra args and key come from agents.%s',
    async (tool, section, argsStart, key) => {
      const agents = agentsFrom(`agents:\n  timeout_seconds: 90\n  ${section}`);
      const agent = createAgent(tool, agents);
      expect(agent).toMatchObject({ name: tool, timeoutMs: 90_000 });
      expect(agent.allowEnv).toContain(key);
      // The configured binary is a path relative to the config file: run it from there.
      const installed = await installCliFixture(tool, 'nothing');
      const base = await createTempDir('cli-config');
      cleanups.push(() => base.dispose());
      await mkdir(join(base.path, 'bin'));
      await writeFile(join(base.path, 'bin', tool), await readFile(join(installed.bin, tool)));
      await chmod(join(base.path, 'bin', tool), 0o755);
      const configured = createAgent(
        tool,
        parseConfig(`agents:\n  ${section}`, { env: {}, baseDir: base.path, hostname: 'h' }).config.agents,
      );
      const path = await workdir(configured);
      await configured.run({
        workdir: path,
        prompt: 'Do it\n',
        pass: 'test',
        attempt: 2,
        timeoutMs: 20_000,
        env: buildAgentEnv(
          { ...hostEnv(installed.bin, path), [key]: 'configured-key' },
          { allow: [...(configured.allowEnv ?? [])] },
        ),
      });
      const calls = (await readFile(join(base.path, 'bin', `${tool}.calls.jsonl`), 'utf8'))
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Call);
      expect(calls[0]?.args.slice(0, argsStart.length)).toEqual(argsStart);
      expect(calls[0]?.env[key]).toBe('configured-key');
    },
  );
});
