import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { runProcess } from '@codefleet/process';

/** The demo's sample project: a tiny calculator with its own build and tests (node:test). */
const sampleFiles: Record<string, string> = {
  'package.json': `${JSON.stringify(
    {
      name: 'demo-calculator',
      version: '1.0.0',
      private: true,
      type: 'module',
      scripts: { build: 'node scripts/build.mjs', test: 'node --test' },
    },
    null,
    2,
  )}\n`,
  'README.md': '# demo-calculator\n\nA tiny calculator used by the codefleet demo.\n',
  'scripts/build.mjs': `// "Build": load every module so a syntax error fails the build.
import { readdirSync } from 'node:fs';
for (const file of readdirSync(new URL('../src/', import.meta.url))) {
  if (file.endsWith('.js')) await import(new URL(\`../src/\${file}\`, import.meta.url));
}
console.log('build ok');
`,
  'src/calc.js': `/** Adds two numbers. */
export function add(a, b) {
  return a + b;
}

/** Subtracts b from a. */
export function subtract(a, b) {
  return a - b;
}
`,
  'test/calc.test.js': `import { test } from 'node:test';
import assert from 'node:assert/strict';
import { add, subtract } from '../src/calc.js';

test('adds', () => assert.equal(add(2, 3), 5));
test('subtracts', () => assert.equal(subtract(2, 3), -1));
`,
};

/**
 * Creates `<dir>/origin.git`, a bare repository holding the sample project on `main`:
 * the "remote" the local forge pushes the work branch to.
 */
export async function createSampleRepo(dir: string, gitEnv: Record<string, string>): Promise<string> {
  const origin = join(dir, 'origin.git');
  const seed = join(dir, 'seed');
  const env = {
    ...gitEnv,
    GIT_AUTHOR_NAME: 'codefleet demo',
    GIT_AUTHOR_EMAIL: 'demo@codefleet.invalid',
    GIT_COMMITTER_NAME: 'codefleet demo',
    GIT_COMMITTER_EMAIL: 'demo@codefleet.invalid',
  };
  const git = async (cwd: string, args: string[]) => {
    const result = await runProcess(['git', ...args], { cwd, env, timeoutMs: 60_000 });
    if (result.exitCode !== 0) throw new Error(`git ${args.join(' ')} failed: ${result.outputTail}`);
  };
  await mkdir(seed, { recursive: true });
  for (const [path, content] of Object.entries(sampleFiles)) {
    await mkdir(dirname(join(seed, path)), { recursive: true });
    await writeFile(join(seed, path), content);
  }
  await git(dir, ['init', '--quiet', '--bare', '--initial-branch=main', origin]);
  await git(seed, ['init', '--quiet', '--initial-branch=main']);
  await git(seed, ['add', '--all']);
  await git(seed, ['commit', '--quiet', '-m', 'Initial calculator']);
  await git(seed, ['push', '--quiet', origin, 'main']);
  return origin;
}
