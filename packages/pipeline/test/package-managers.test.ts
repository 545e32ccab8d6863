// Whole jobs on repositories shaped like the ones issue 26 names, in the real sandbox: a pnpm
// workspace (unjs/ufo's manager), a package whose `prepare` builds what its lint needs
// (yargs/yargs-parser), and dependencies that do not install at the base. Generated
// fixtures, never those repositories' code; pnpm is fetched from the npm registry for real.
import { readdir } from 'node:fs/promises';
import { afterEach, describe, expect, it } from '@jest/globals';
import type { Sandbox } from '@codefleet/sandbox';
import { hostNpmEnv } from '@codefleet/testkit';
import { createHarness, implementsFeature, projectFiles, type Harness } from './harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.dispose();
  h = undefined;
});

const json = (value: object) => `${JSON.stringify(value, null, 2)}\n`;

/** Counts the sandboxed runs whose argv starts with `prefix`, passing every run through. */
function countRuns(harness: Harness, prefix: readonly string[]): () => number {
  const sandbox = harness.deps.sandbox;
  let count = 0;
  const counting: Sandbox = {
    mode: sandbox.mode,
    remapsPaths: sandbox.remapsPaths,
    description: sandbox.description,
    run: (argv, options) => {
      if (prefix.every((word, i) => argv[i] === word)) count += 1;
      return sandbox.run(argv, options);
    },
  };
  harness.deps.sandbox = counting;
  return () => count;
}

// A pnpm workspace whose root has no dependency of its own; the lockfile is pnpm 10's own.
const pnpmWorkspace = {
  ...projectFiles,
  'package.json': json({
    name: 'sample',
    private: true,
    type: 'module',
    packageManager: 'pnpm@10.28.0',
    scripts: { build: 'node build.mjs', test: 'node --test && pnpm -r test' },
  }),
  'pnpm-workspace.yaml': 'packages:\n  - packages/*\n',
  'pnpm-lock.yaml':
    "lockfileVersion: '9.0'\n\nsettings:\n  autoInstallPeers: true\n  excludeLinksFromLockfile: false\n\nimporters:\n\n  .: {}\n\n  packages/a:\n    dependencies:\n      b:\n        specifier: workspace:*\n        version: link:../b\n\n  packages/b: {}\n",
  'packages/a/package.json': json({
    name: 'a',
    version: '1.0.0',
    dependencies: { b: 'workspace:*' },
    scripts: { test: 'node check.cjs' },
  }),
  'packages/a/check.cjs': "if (require('b')() !== 2) process.exit(1);\n",
  'packages/b/package.json': json({ name: 'b', version: '1.0.0', main: 'index.js' }),
  'packages/b/index.js': 'module.exports = () => 2;\n',
};

describe("runJob with the repository's package manager", () => {
  it('a pnpm workspace: pnpm is provided in the sandbox, installs once at the root frozen to its lockfile, and runs the scripts', async () => {
    h = await createHarness({}, pnpmWorkspace);
    // The host's registry and CA, as an operator passes them (verification.env.pass): the
    // fetch of pnpm and the install behind a TLS-inspecting egress need them on a Node build
    // without a global npmrc (CI's Node 22 and 24).
    h.deps.settings.verifyEnv = { ...h.deps.settings.verifyEnv, ...hostNpmEnv() };
    await h.agent(implementsFeature);
    const job = h.job({ title: 'Add two()' });
    await h.drain(job);
    const run = (await h.store.get(job.id))!;
    expect([run.outcome, run.error?.message]).toEqual(['succeeded', undefined]);
    const commands = [...new Set(run.verification.map((v) => `${v.step}: ${v.command.join(' ')}`))];
    expect(commands).toEqual([
      'install: pnpm install --frozen-lockfile',
      'build: pnpm run build',
      'test: pnpm run test',
    ]);
    expect(run.verification.every((v) => v.exit_code === 0 || v.exit_code === null)).toBe(true);
    // Fetched once into the shared tools directory, outside every copy.
    expect(await readdir(`${h.dir.path}/cache/tools`)).toEqual(['pnpm@10.28.0']);
  });
});

describe('runJob on a pooled copy', () => {
  it("the second job on a copy gets the install's prepare build back, though node_modules is kept (yargs-parser)", async () => {
    // prepare builds build/lib.js from src (as tsc does); lint needs it. A file: dependency
    // installs offline. The second job reuses the slot: `git clean` took build/ away.
    const files = {
      ...projectFiles,
      'package.json': json({
        name: 'sample',
        private: true,
        type: 'module',
        dependencies: { dep: 'file:vendor/dep' },
        scripts: {
          prepare:
            "node -e \"require('fs').mkdirSync('build',{recursive:true});require('fs').copyFileSync('src/lib.js','build/lib.js')\"",
          lint: "node -e \"require('fs').accessSync('./build/lib.js')\"",
          test: 'node --test',
        },
      }),
      'vendor/dep/package.json': json({ name: 'dep', version: '1.0.0' }),
      '.gitignore': 'node_modules/\nbuild/\n',
    };
    h = await createHarness({}, files);
    await h.agent(implementsFeature);
    const first = h.job({ title: 'Add two()' });
    await h.drain(first);
    const second = h.job({ title: 'Add two() again' });
    await h.drain(second);
    for (const job of [first, second]) {
      const run = (await h.store.get(job.id))!;
      expect([run.outcome, run.error?.message]).toEqual(['succeeded', undefined]);
      expect(run.verification.filter((v) => v.step === 'lint').every((v) => v.exit_code === 0)).toBe(true);
    }
    // The second job did not install again: it ran the prepare script alone.
    const installs = (await h.store.get(second.id))!.verification.filter((v) => v.step === 'install');
    expect(installs.length).toBeGreaterThan(0);
    expect(installs.every((v) => v.command.join(' ') === 'npm run prepare')).toBe(true);
  });
});

describe('runJob when the dependencies do not install at the base', () => {
  it('the failure is remembered for the commit: a later job on it does not run the install again', async () => {
    const files = {
      ...projectFiles,
      'package.json': json({
        name: 'sample',
        private: true,
        type: 'module',
        dependencies: { dep: 'file:vendor/missing' },
        scripts: { build: 'node build.mjs', test: 'node --test' },
      }),
      'package-lock.json': JSON.stringify({
        name: 'sample',
        lockfileVersion: 3,
        requires: true,
        packages: {
          '': { name: 'sample', dependencies: { dep: 'file:vendor/missing' } },
          'node_modules/dep': { resolved: 'vendor/missing', link: true },
        },
      }),
    };
    h = await createHarness({}, files);
    const installs = countRuns(h, ['npm', 'ci']);
    await h.agent(implementsFeature);
    const first = h.job({ title: 'Add two()' });
    await h.drain(first);
    // Once at the base; the agent left the dependencies as they were: not again after it.
    expect(installs()).toBe(1);
    const second = h.job({ title: 'Add three()' });
    await h.drain(second);
    expect(installs()).toBe(1);
    for (const job of [first, second]) {
      const run = (await h.store.get(job.id))!;
      expect(run.error?.code).toBe('verify_failed');
      expect(run.error?.message).toMatch(
        /the dependencies cannot be installed: `npm ci .*` fails on the base commit too/,
      );
      expect(run.attempts).toHaveLength(1);
    }
  });
});
