/**
 * A CLI adapter (Claude Code's) in the real pipeline: the `claude` on PATH is a fixture
 * executable, not the real tool, that hits its turn cap on the first attempt (exit 0),
 * then finishes. The pipeline must feed the cap back, commit only the work (never the
 * CLAUDE.md context file) and keep forge tokens away from the agent.
 */
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, expect, it } from '@jest/globals';
import { buildAgentEnv, createClaudeAgent } from '@codefleet/agents';
import { git, gitTestEnv } from '@codefleet/testkit';
import { branchName } from '@codefleet/workspace';
import { createHarness, type Harness } from './harness.js';

const fakeClaude = `
const fs = require('node:fs');
const path = require('node:path');
const args = process.argv.slice(2);
const prompt = args.at(-1);
const log = path.join(__dirname, 'claude.calls.jsonl');
fs.appendFileSync(log, JSON.stringify({ args, prompt, env: process.env, claudeMd: fs.existsSync('CLAUDE.md') }) + '\\n');
const calls = fs.readFileSync(log, 'utf8').trim().split('\\n').length;
const lib = path.join('src', 'lib.js');
const result = (extra) => console.log(JSON.stringify({ type: 'result', subtype: 'success', is_error: false, num_turns: 4, ...extra }));
if (calls === 1) {
  fs.appendFileSync(lib, '// half of two()\\n');
  result({ subtype: 'error_max_turns', num_turns: 30 });
} else if (calls === 2) {
  fs.appendFileSync(lib, 'export const two = () => 2;\\n');
  result({ result: 'Added two().' });
} else {
  fs.writeFileSync(path.join('test', 'two.test.js'), "import { test } from 'node:test';\\nimport assert from 'node:assert/strict';\\nimport { two } from '../src/lib.js';\\ntest('two', () => assert.equal(two(), 2));\\n");
  result({ result: 'Tested two().' });
}
`;

let h: Harness | undefined;
afterEach(async () => {
  await h?.dispose();
  h = undefined;
});

it('Claude Code adapter in the two-pass loop: a turn cap is fed back, the context file never committed, no forge token', async () => {
  h = await createHarness();
  const bin = join(h.dir.path, 'agent', 'bin'); // writable in the test sandbox
  await mkdir(bin);
  await writeFile(join(bin, 'claude'), `#!${process.execPath}\n${fakeClaude}`);
  await chmod(join(bin, 'claude'), 0o755);
  const host = {
    ...gitTestEnv(),
    PATH: `${bin}:${process.env.PATH ?? ''}`,
    HOME: h.dir.path,
    GITHUB_TOKEN: 'ghp_planted_worker_token',
    ANTHROPIC_API_KEY: 'sk-ant-test',
    OPENAI_API_KEY: 'sk-not-for-claude',
  };
  const agent = createClaudeAgent({ binary: 'claude', maxTurns: 30, apiKeyEnv: 'ANTHROPIC_API_KEY' });
  h.deps.agentFor = () => agent;
  h.deps.settings = {
    ...h.deps.settings,
    agentEnv: (a) => buildAgentEnv(host, { allow: [...(a.allowEnv ?? [])], extra: gitTestEnv() }),
  };

  const job = h.job({ title: 'Add two()' });
  await h.drain(job);
  const run = await h.store.get(job.id);
  expect(run).toMatchObject({ stage: 'done', outcome: 'succeeded' });
  expect(run!.agent_runs.map((a) => [a.pass, a.inner_attempt, a.agent, a.outcome])).toEqual([
    ['implement', 1, 'claude', 'failed'],
    ['implement', 2, 'claude', 'changed'],
    ['test', 1, 'claude', 'changed'],
  ]);

  const calls = (await readFile(join(bin, 'claude.calls.jsonl'), 'utf8'))
    .trim()
    .split('\n')
    .map(
      (line) => JSON.parse(line) as { args: string[]; prompt: string; env: Record<string, string>; claudeMd: boolean },
    );
  expect(calls).toHaveLength(3);
  expect(calls[0]?.args.slice(0, 7)).toEqual([
    '-p',
    '--output-format',
    'json',
    '--dangerously-skip-permissions',
    '--max-turns',
    '30',
    '--',
  ]);
  expect(calls[1]?.prompt).toMatch(/reached its turn cap \(--max-turns 30\) after 30 turns/);
  for (const call of calls) {
    expect(call.claudeMd).toBe(true);
    expect(call.env.ANTHROPIC_API_KEY).toBe('sk-ant-test');
    expect(call.env).not.toHaveProperty('GITHUB_TOKEN');
    expect(call.env).not.toHaveProperty('OPENAI_API_KEY');
  }

  const files = await git(h.dir.path, ['--git-dir', h.origin, 'diff', '--name-only', `main...${branchName(job)}`]);
  expect(files.split('\n').sort()).toEqual(['src/lib.js', 'test/two.test.js']);
});

it('an API key refused by the provider dead-letters the job at once: no outer retries', async () => {
  h = await createHarness();
  const bin = join(h.dir.path, 'agent', 'bin'); // writable in the test sandbox
  await mkdir(bin);
  await writeFile(
    join(bin, 'claude'),
    `#!${process.execPath}\nrequire('node:fs').appendFileSync(__dirname + '/calls', 'x');\nconsole.log(JSON.stringify({ type: 'result', subtype: 'success', is_error: true, result: 'API Error: 401 invalid x-api-key' }));\n`,
  );
  await chmod(join(bin, 'claude'), 0o755);
  const agent = createClaudeAgent({ binary: 'claude', maxTurns: 30, apiKeyEnv: 'ANTHROPIC_API_KEY' });
  h.deps.agentFor = () => agent;
  h.deps.settings = {
    ...h.deps.settings,
    agentEnv: () => ({ ...gitTestEnv(), PATH: `${bin}:${process.env.PATH ?? ''}`, HOME: h!.dir.path }),
  };
  const job = h.job();
  await h.drain(job);
  expect(await readFile(join(bin, 'calls'), 'utf8')).toBe('x');
  const run = await h.store.get(job.id);
  expect(run).toMatchObject({ outcome: 'failed' });
  const dead = await h.queue.deadLetters();
  expect(dead.map((d) => d.id)).toEqual([job.id]);
  expect(dead[0]!.reason).toMatch(/agent_crashed.*API Error: 401/);
});
