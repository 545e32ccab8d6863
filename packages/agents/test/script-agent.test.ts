import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from '@jest/globals';
import { createTempRepo, type TempRepo } from '@codefleet/testkit';
import { createScriptAgent, resolveScriptModule } from '../src/index.js';
import { agentConformance, agentTestEnv, fixture, parseReport, runFilesOf } from './conformance.js';

agentConformance({
  name: 'script',
  agentFor: (script, options = {}) => createScriptAgent({ module: fixture(script), ...options }),
  expectedArgs: (req, files) => [
    '--workdir',
    req.workdir,
    '--prompt-file',
    files.promptFile,
    '--pass',
    req.pass,
    '--attempt',
    String(req.attempt),
    ...(req.feedback ? ['--feedback-file', files.feedbackFile] : []),
  ],
});

describe('script agent', () => {
  const repos: TempRepo[] = [];
  afterEach(async () => {
    for (const repo of repos.splice(0)) await repo.dispose();
  });

  it('adds --feedback-file only when there is feedback', async () => {
    const repo = await createTempRepo({ prefix: 'agents-script' });
    repos.push(repo);
    const req = {
      workdir: repo.path,
      prompt: 'p',
      pass: 'test' as const,
      attempt: 2,
      feedback: 'lint: src/a.ts:3 no-unused-vars',
      timeoutMs: 20_000,
      env: agentTestEnv(),
    };
    const report = parseReport((await createScriptAgent({ module: fixture('report.mjs') }).run(req)).outputTail);
    expect(report.args).toEqual([
      '--workdir',
      repo.path,
      '--prompt-file',
      runFilesOf(req).promptFile,
      '--pass',
      'test',
      '--attempt',
      '2',
      '--feedback-file',
      runFilesOf(req).feedbackFile,
    ]);
  });

  it('a node binary that does not exist → error', async () => {
    const repo = await createTempRepo({ prefix: 'agents-script' });
    repos.push(repo);
    const agent = createScriptAgent({ module: fixture('edit-file.mjs'), nodePath: join(repo.path, 'no-node-here') });
    const result = await agent.run({
      workdir: repo.path,
      prompt: 'p',
      pass: 'implement',
      attempt: 1,
      timeoutMs: 5_000,
      env: agentTestEnv(),
    });
    expect(result.outcome).toBe('error');
    expect(result.detail).toMatch(/could not start .*no-node-here/);
  });

  it('is named script by default and carries its configured timeout', () => {
    expect(createScriptAgent({ module: fixture('edit-file.mjs'), timeoutMs: 9_000 })).toMatchObject({
      name: 'script',
      timeoutMs: 9_000,
    });
  });
});

describe('resolveScriptModule', () => {
  it('takes absolute paths and file URLs as they are', () => {
    expect(resolveScriptModule('/opt/agents/demo.mjs')).toBe('/opt/agents/demo.mjs');
    expect(resolveScriptModule(pathToFileURL(fixture('edit-file.mjs')).href)).toBe(fixture('edit-file.mjs'));
  });

  it('refuses a relative path: the config loader resolves those against the config file', () => {
    expect(() => resolveScriptModule('./demo.mjs')).toThrow(
      expect.objectContaining({ code: 'invalid_config', message: expect.stringMatching(/agents\.script\.module/) }),
    );
  });

  it('resolves a package name, and says so when it cannot', () => {
    expect(resolveScriptModule('@codefleet/testkit')).toMatch(/testkit[/\\]dist[/\\]index\.js$/);
    expect(() => resolveScriptModule('@codefleet/no-such-package')).toThrow(
      expect.objectContaining({ code: 'invalid_config' }),
    );
  });
});
