import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import {
  createTempDir,
  createTempRepo,
  gitTestEnv,
  startFixture,
  startOllamaStandIn,
  type OllamaStandIn,
  type TempDir,
  type TempRepo,
} from '@codefleet/testkit';
import { loadConfig } from '@codefleet/config';
import { openQueue, queueSettingsFromConfig } from '@codefleet/queue';
import { runCli } from '../src/index.js';
import { bin, cli } from './cli-helpers.js';

describe('codefleet chat', () => {
  let ollama: OllamaStandIn;
  let dir: TempDir;
  let repo: TempRepo;
  beforeAll(async () => {
    ollama = await startOllamaStandIn({ models: ['qwen2.5-coder:1.5b'] });
  });
  afterAll(async () => {
    await ollama.close();
  });
  beforeEach(async () => {
    dir = await createTempDir('cli-chat');
    repo = await createTempRepo({ files: { 'notes.txt': 'hello\n' } });
    await writeFile(
      join(dir.path, 'config.yaml'),
      [
        'data_dir: ./data',
        'logging:\n  level: silent',
        `router:\n  classifier:\n    host: ${ollama.url}\n  chat:\n    host: ${ollama.url}`,
      ].join('\n'),
    );
  });
  afterEach(async () => {
    await repo.dispose();
    await dir.dispose();
  });

  const run = async (...args: string[]) => {
    const proc = startFixture(bin, ['--config', join(dir.path, 'config.yaml'), ...args], {
      cwd: dir.path,
      env: { PATH: process.env.PATH ?? '', HOME: dir.path, USER: 'dev', ...gitTestEnv() },
    });
    const { exitCode } = await proc.exited;
    return { code: exitCode, out: proc.lines.join('\n'), err: proc.stderr.trim() };
  };

  it('answers a CHAT message from the local model through the real binary', async () => {
    ollama.reply('Hi! Try /code to change something.');
    const result = await run('chat', '/chat hello there');
    expect(result).toEqual({ code: 0, out: 'Hi! Try /code to change something.', err: 'route: CHAT (command)' });
    expect(ollama.requests.at(-1)?.messages.at(-1)).toEqual({ role: 'user', content: 'hello there' });
  });

  it('enqueues a /code job on the repository given, as a CLI job with its route recorded', async () => {
    const result = await run('chat', '/code Append a line to notes.txt\nKeep it short.', '--repo', repo.path);
    expect(result.code).toBe(0);
    const [first, ...rest] = result.out.split('\n');
    const id = /^enqueued ([0-9a-f-]{36})$/.exec(first ?? '')?.[1];
    expect(id).toBeDefined();
    expect(rest).toEqual([
      'route: CODE (command)',
      `repository: ${repo.path}`,
      `watch it: codefleet show ${id} (a worker runs it: codefleet worker)`,
    ]);
    // The job as a worker will see it.
    const { config } = await loadConfig({ cwd: dir.path, path: join(dir.path, 'config.yaml'), env: {} });
    const queue = await openQueue(queueSettingsFromConfig(config));
    try {
      const lease = await queue.claim({ workerId: 'test' });
      expect(lease?.job).toMatchObject({
        id,
        repo: repo.path,
        mode: 'change',
        source: { kind: 'cli' },
        title: 'Append a line to notes.txt',
        body: '/code Append a line to notes.txt\nKeep it short.',
        requested_by: 'dev',
        route: { name: 'CODE', source: 'command', confidence: 1 },
      });
      await lease?.release();
    } finally {
      await queue.close();
    }
  });

  it('takes the working directory as the repository when it is a git repository', async () => {
    const out: string[] = [];
    const code = await runCli(['--config', join(dir.path, 'config.yaml'), 'chat', '/code tidy up notes'], {
      out: (l) => out.push(l),
      err: () => undefined,
      cwd: repo.path,
      env: { PATH: process.env.PATH, HOME: dir.path, ...gitTestEnv() },
    });
    expect(code).toBe(0);
    expect(out).toContain(`repository: ${repo.path}`);
  });

  it('asks for a repository when none is known, and refuses a GitHub repository without a login', async () => {
    const ask = await cli(dir.path, 'chat', '/code fix it');
    expect(ask).toMatchObject({ code: 1, out: '' });
    expect(ask.err).toContain('which repository?');
    const github = await cli(dir.path, 'chat', '/code fix it repo=acme/api');
    expect(github.code).toBe(1);
    expect(github.err).toContain('GitHub login');
  });
});
