import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { createTempDir, createTempRepo, type TempDir } from '@codefleet/testkit';
import {
  checkCommandTemplate,
  createCommandAgent,
  expandCommandTemplate,
  type CommandPlaceholder,
} from '../src/index.js';
import { agentConformance, agentTestEnv, fixture, hostilePrompt, parseReport } from './conformance.js';

const templateArgs = [
  '--workdir',
  '{workdir}',
  '--prompt-file',
  '{prompt_file}',
  '--pass',
  '{pass}',
  '--attempt',
  '{attempt}',
  '--feedback-file',
  '{feedback_file}',
];

agentConformance({
  name: 'command',
  agentFor: (script, options = {}) =>
    createCommandAgent({ argv: [process.execPath, fixture(script), ...templateArgs], ...options }),
  expectedArgs: (req, files) => [
    '--workdir',
    req.workdir,
    '--prompt-file',
    files.promptFile,
    '--pass',
    req.pass,
    '--attempt',
    String(req.attempt),
    '--feedback-file',
    files.feedbackFile,
  ],
});

const values: Record<CommandPlaceholder, string> = {
  prompt_file: '/w/.codefleet/prompt-implement-1.md',
  feedback_file: '/w/.codefleet/feedback-implement-1.md',
  workdir: '/w',
  pass: 'implement',
  attempt: '1',
  prompt: 'Fix the bug\nin "main.ts" with $& and $1 and {workdir}',
};

describe('expandCommandTemplate', () => {
  it('replaces whole elements and substrings, one element per element', () => {
    const argv = expandCommandTemplate(
      ['aider', '--message-file', '{prompt_file}', '--pass={pass}/{attempt}', '{workdir}/src'],
      values,
    );
    expect(argv).toEqual(['aider', '--message-file', values.prompt_file, '--pass=implement/1', '/w/src']);
  });

  it('keeps the prompt as one argument, verbatim, never expanded again', () => {
    const argv = expandCommandTemplate(['agent', '{prompt}', '--message={prompt}'], values);
    expect(argv).toHaveLength(3);
    expect(argv[1]).toBe(values.prompt);
    expect(argv[2]).toBe(`--message=${values.prompt}`);
  });

  it('leaves braces that are not placeholders alone', () => {
    expect(expandCommandTemplate(['agent', '{"max_turns":3}', '{}'], values)).toEqual([
      'agent',
      '{"max_turns":3}',
      '{}',
    ]);
  });
});

describe('checkCommandTemplate', () => {
  it('accepts every known placeholder', () => {
    expect(() =>
      checkCommandTemplate(['x', '{prompt_file}', '{feedback_file}', '{workdir}', '{pass}', '{attempt}', '{prompt}']),
    ).not.toThrow();
  });

  it('refuses an empty template', () => {
    expect(() => checkCommandTemplate([])).toThrow(
      expect.objectContaining({
        code: 'invalid_config',
        message: expect.stringMatching(/agents\.command\.argv is empty/),
      }),
    );
  });

  it('names an unknown placeholder and where it is', () => {
    expect(() => checkCommandTemplate(['agent', '--file', '{promptfile}'])).toThrow(
      expect.objectContaining({
        code: 'invalid_config',
        message: expect.stringMatching(/agents\.command\.argv\[2\]: unknown placeholder \{promptfile\}/),
      }),
    );
  });

  it('refuses {prompt} spliced into a shell script, allows it as a positional argument', () => {
    expect(() => checkCommandTemplate(['/bin/bash', '-lc', 'agent "{prompt}"'])).toThrow(
      expect.objectContaining({ code: 'invalid_config', message: expect.stringMatching(/\[2\].*shell/) }),
    );
    expect(() => checkCommandTemplate(['sh', '-c', 'agent "$1"', 'sh', '{prompt}'])).not.toThrow();
    // Nor into a larger argument some program parses (env -S splits and runs it).
    for (const template of [
      ['env', '-S', "sh -c 'agent {prompt}'"],
      ['node', '-e', "run('{prompt}')"],
      ['agent', '--message=Task: {prompt}'],
    ]) {
      expect(() => checkCommandTemplate(template)).toThrow(
        expect.objectContaining({
          code: 'invalid_config',
          message: expect.stringContaining('{prompt} must be a whole argument'),
        }),
      );
    }
    expect(() => checkCommandTemplate(['agent', '--message={prompt}', '-m={prompt}', '{prompt}'])).not.toThrow();
    expect(() => checkCommandTemplate(['sh', '-c', 'agent --file {prompt_file}'])).not.toThrow();
  });
});

describe('command agent', () => {
  const dirs: TempDir[] = [];
  afterEach(async () => {
    for (const dir of dirs.splice(0)) await dir.dispose();
  });
  const tempRepo = async () => {
    const repo = await createTempRepo({ prefix: 'agents-cmd' });
    dirs.push(repo);
    return repo;
  };

  it('is created with an invalid_config error for a bad template', () => {
    expect(() => createCommandAgent({ argv: ['agent', '{nope}'] })).toThrow(
      expect.objectContaining({ code: 'invalid_config' }),
    );
  });

  it('exposes its name, context file, timeout and extra env names', () => {
    const agent = createCommandAgent({
      name: 'my-cli',
      argv: ['my-cli'],
      contextFile: 'AGENTS.md',
      timeoutMs: 60_000,
      allowEnv: ['MY_API_KEY'],
    });
    expect(agent).toMatchObject({
      name: 'my-cli',
      contextFile: 'AGENTS.md',
      timeoutMs: 60_000,
      allowEnv: ['MY_API_KEY'],
    });
    expect(createCommandAgent({ argv: ['x'] }).name).toBe('command');
  });

  it('passes {prompt} as exactly one argument and never runs what it says', async () => {
    const { path } = await tempRepo();
    const markerDir = await createTempDir('marker');
    dirs.push(markerDir);
    const marker = join(markerDir.path, `pwned-${randomUUID()}`);
    const prompt = hostilePrompt(marker);
    const agent = createCommandAgent({
      argv: [process.execPath, fixture('report.mjs'), '{prompt}', '--message={prompt}', '--', '{prompt}'],
    });
    const result = await agent.run({
      workdir: path,
      prompt,
      pass: 'implement',
      attempt: 1,
      timeoutMs: 20_000,
      env: agentTestEnv(),
    });
    expect(parseReport(result.outputTail).args).toEqual([prompt, `--message=${prompt}`, '--', prompt]);
    expect(existsSync(marker)).toBe(false);
  });

  it('a binary that does not exist → error with a detail naming it', async () => {
    const { path } = await tempRepo();
    const agent = createCommandAgent({ argv: ['codefleet-no-such-agent-binary', '{prompt_file}'] });
    const result = await agent.run({
      workdir: path,
      prompt: 'x',
      pass: 'implement',
      attempt: 1,
      timeoutMs: 5_000,
      env: agentTestEnv(),
    });
    expect(result).toMatchObject({ outcome: 'error', exitCode: null, timedOut: false, changedFiles: [] });
    expect(result.detail).toMatch(/could not start codefleet-no-such-agent-binary: .*ENOENT/);
    // Not there on the next attempt either: dead-lettered at once, not retried as a crash.
    expect(result.permanent).toBe(true);
  });

  it('a process killed by a signal from elsewhere → error, not failed', async () => {
    const { path } = await tempRepo();
    const agent = createCommandAgent({ argv: [process.execPath, '-e', 'process.kill(process.pid, "SIGKILL")'] });
    const result = await agent.run({
      workdir: path,
      prompt: 'x',
      pass: 'implement',
      attempt: 1,
      timeoutMs: 20_000,
      env: agentTestEnv(),
    });
    expect(result).toMatchObject({ outcome: 'error', exitCode: null, signal: 'SIGKILL', detail: 'killed by SIGKILL' });
  });

  it('its output tail says how much of a long output was dropped, however often it was bounded', async () => {
    const { path } = await tempRepo();
    // 70,000 bytes: the process runner keeps a window of it, the agent bounds that again.
    const agent = createCommandAgent({
      argv: [process.execPath, '-e', "for (let i = 0; i < 7; i += 1) process.stdout.write('x'.repeat(10000))"],
      tailBytes: 1000,
    });
    const result = await agent.run({
      workdir: path,
      prompt: 'x',
      pass: 'implement',
      attempt: 1,
      timeoutMs: 20_000,
      env: agentTestEnv(),
    });
    expect(result.outputTail).toBe(`…[truncated 69,000 bytes]\n${'x'.repeat(1000)}`);
  });

  it('rejects a bad request before starting anything', async () => {
    const { path } = await tempRepo();
    const agent = createCommandAgent({ argv: [process.execPath, fixture('edit-file.mjs'), ...templateArgs] });
    const base = {
      workdir: path,
      prompt: 'x',
      pass: 'implement' as const,
      attempt: 1,
      timeoutMs: 5_000,
      env: agentTestEnv(),
    };
    await expect(agent.run({ ...base, attempt: 0 })).rejects.toThrow(RangeError);
    await expect(agent.run({ ...base, attempt: 1.5 })).rejects.toThrow(RangeError);
    await expect(agent.run({ ...base, timeoutMs: 0 })).rejects.toThrow(RangeError);
    expect(existsSync(join(path, 'NOTES.md'))).toBe(false);
  });
});
