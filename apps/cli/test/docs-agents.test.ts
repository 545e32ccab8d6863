import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { execa } from 'execa';
import {
  codeBlocks,
  createTempDir,
  createTempRepo,
  docSection,
  git,
  gitTestEnv,
  type TempDir,
  type TempRepo,
} from '@codefleet/testkit';
import { bin } from './cli-helpers.js';

// The docs' agent examples (docs/agents.md), read from the docs themselves so the docs and this
// test cannot drift: each runs a job end to end on the local backend through the real binary.
/** The fenced code blocks of the docs' section under `heading`, in order. */
function blocks(heading: string): { lang: string; code: string }[] {
  return codeBlocks(docSection(heading).text);
}

describe("the docs' agent examples work as written", () => {
  let dir: TempDir;
  let repo: TempRepo;
  beforeEach(async () => {
    dir = await createTempDir('docs-agents');
    repo = await createTempRepo({ files: { 'README.md': 'a project\n' } });
  });
  afterEach(async () => {
    await repo.dispose();
    await dir.dispose();
  });

  /** Enqueues a task with the config in `dir`, runs `worker --once`, and reads TODO.md on the job's branch. */
  async function runTask(home: string): Promise<string> {
    const env = { PATH: process.env.PATH ?? '', HOME: home, ...gitTestEnv() };
    const run = (...argv: string[]) =>
      execa(process.execPath, [bin, '--config', join(dir.path, 'config.yaml'), ...argv], {
        cwd: dir.path,
        env,
        extendEnv: false,
        reject: false,
      });
    const queued = await run('enqueue', '--repo', repo.path, '--title', 'Write the release notes');
    expect({ code: queued.exitCode, err: queued.stderr }).toEqual({ code: 0, err: '' });
    const worked = await run('worker', '--once');
    expect({ code: worked.exitCode, out: worked.stdout }).toEqual({
      code: 0,
      out: 'processed 1: 1 done, 0 retrying, 0 dead-lettered, 0 released',
    });
    const branches = (await git(repo.path, ['branch', '--list', '--format=%(refname:short)']))
      .split('\n')
      .filter((b) => b !== 'main' && b !== 'master' && b !== '');
    expect(branches).toHaveLength(1);
    return git(repo.path, ['show', `${branches[0]}:TODO.md`]);
  }

  const quiet = 'data_dir: ./data\nlogging:\n  level: silent\n';

  it('the command agent: a shell script in ~/codefleet-agents, configured in ten lines', async () => {
    const [script, config, ...rest] = blocks('Your own agent: a command');
    expect([script?.lang, config?.lang, rest]).toEqual(['sh', 'yaml', []]);
    expect(script!.code.split('\n').length + config!.code.split('\n').length).toBeLessThanOrEqual(16);
    // Saved where the docs say, as they say.
    const home = join(dir.path, 'home');
    const where = /`(~\/[^`]+)` and `chmod \+x` it/
      .exec(docSection('Your own agent: a command').text)![1]!
      .replace('~', home);
    await mkdir(join(where, '..'), { recursive: true });
    await writeFile(where, script!.code);
    await chmod(where, 0o755);
    await writeFile(join(dir.path, 'config.yaml'), quiet + config!.code);
    expect(await runTask(home)).toBe('- Write the release notes');
  });

  it('the script agent: the module next to config.yaml', async () => {
    const [usage, module, ...rest] = blocks('The script agent');
    expect([usage?.lang, module?.lang, rest]).toEqual(['', 'js', []]);
    // Its first line names the file and the config that loads it.
    const first = /^\/\/ (\S+), next to config\.yaml; config\.yaml: (.*)$/m.exec(module!.code)!;
    await writeFile(join(dir.path, first[1]!), module!.code);
    await writeFile(join(dir.path, 'config.yaml'), `${quiet}${first[2]!}\n`);
    expect(await runTask(join(dir.path, 'home'))).toBe('- Write the release notes');
    // The documented invocation is the one the script agent makes.
    const source = await readFile(
      fileURLToPath(new URL('../../../packages/agents/src/script-agent.ts', import.meta.url)),
      'utf8',
    );
    expect(source).toContain(` *     ${usage!.code.trim()}\n`);
  });
});
