// Which package manager a repository uses, and the commands the plan runs with it: generated
// fixture repositories shaped like real ones (unjs/ufo: pnpm; immer: yarn classic; reselect:
// yarn berry), never their code.
import { afterEach, describe, expect, it } from '@jest/globals';
import { createTempDir, writeFiles, type TempDir } from '@codefleet/testkit';
import { detectPackageManager, planEnv, planVerification, repoChecks, scriptOf } from '../src/index.js';
import { defaultVerification, verificationWith } from './helpers.js';

const dirs: TempDir[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((dir) => dir.dispose()));
});

async function repo(files: Record<string, string>): Promise<string> {
  const dir = await createTempDir('verify-pm');
  dirs.push(dir);
  await writeFiles(dir.path, files);
  return dir.path;
}

const pkg = (manifest: object) => JSON.stringify(manifest);
const config = defaultVerification();
const commands = async (workdir: string, cfg = config) =>
  (await planVerification(workdir, { config: cfg })).steps.map((step) => `${step.name}: ${step.command.join(' ')}`);

// What ufo's package.json and lockfile look like, in the parts that matter here.
const ufoLike = {
  'package.json': pkg({
    name: 'ufo-like',
    packageManager: 'pnpm@10.28.0',
    devDependencies: { vitest: '^3' },
    scripts: {
      build: 'unbuild',
      lint: 'eslint . && prettier -c src test',
      'lint:fix': 'eslint --fix .',
      test: 'pnpm lint && vitest run --typecheck',
      typecheck: 'tsc --noEmit',
    },
  }),
  'pnpm-lock.yaml': "lockfileVersion: '9.0'\n\nsettings:\n  autoInstallPeers: true\n",
};

describe('detectPackageManager', () => {
  it('reads packageManager first, then the lockfiles; a malformed packageManager is ignored', async () => {
    expect(
      await detectPackageManager(await repo(ufoLike), JSON.parse(ufoLike['package.json']) as Record<string, unknown>),
    ).toEqual({ name: 'pnpm', version: '10.28.0', lockfile: 'pnpm-lock.yaml' });
    const hashed = { packageManager: `yarn@4.4.1+sha512.${'ab'.repeat(64)}` };
    expect(await detectPackageManager(await repo({ 'yarn.lock': '__metadata:\n  version: 8\n' }), hashed)).toEqual({
      name: 'yarn',
      flavour: 'berry',
      version: '4.4.1',
      lockfile: 'yarn.lock',
      integrity: { algorithm: 'sha512', hex: 'ab'.repeat(64) },
    });
    // Repository text never reaches a command line unchecked: a range, a URL, shell syntax.
    for (const bad of ['pnpm@latest', 'pnpm@9; rm -rf /', 'pnpm@https://evil.example/pnpm.tgz', 'corepack@1.0.0']) {
      expect(await detectPackageManager(await repo({ 'package-lock.json': '{}' }), { packageManager: bad })).toEqual({
        name: 'npm',
        version: '',
        lockfile: 'package-lock.json',
      });
    }
  });

  it("guesses a version that reads the lockfile: pnpm's by its lockfileVersion, yarn berry by __metadata or .yarnrc.yml", async () => {
    const pnpm8 = await detectPackageManager(await repo({ 'pnpm-lock.yaml': "lockfileVersion: '6.0'\n" }), {});
    expect(pnpm8).toEqual({ name: 'pnpm', version: '8', lockfile: 'pnpm-lock.yaml' });
    expect((await detectPackageManager(await repo({ 'pnpm-lock.yaml': 'lockfileVersion: 5.4\n' }), {})).version).toBe(
      '7',
    );
    expect(
      await detectPackageManager(await repo({ 'yarn.lock': '# yarn lockfile v1\n\n"a@^1":\n  version "1.0.0"\n' }), {}),
    ).toEqual({ name: 'yarn', flavour: 'classic', version: '1', lockfile: 'yarn.lock' });
    expect((await detectPackageManager(await repo({ 'yarn.lock': '__metadata:\n  version: 6\n' }), {})).flavour).toBe(
      'berry',
    );
    expect(
      (await detectPackageManager(await repo({ 'yarn.lock': '', '.yarnrc.yml': 'nodeLinker: node-modules\n' }), {}))
        .flavour,
    ).toBe('berry');
    expect(await detectPackageManager(await repo({ 'bun.lock': '{}' }), {})).toEqual({
      name: 'bun',
      version: '1',
      lockfile: 'bun.lock',
    });
    expect(await detectPackageManager(await repo({}), {})).toEqual({ name: 'npm', version: '' });
  });
});

describe('planVerification with each package manager', () => {
  it('pnpm: a frozen-lockfile install, and every script run with pnpm', async () => {
    expect(await commands(await repo(ufoLike))).toEqual([
      'install: pnpm install --frozen-lockfile',
      'build: pnpm run build',
      'build: pnpm run typecheck',
      'lint: pnpm run lint',
      'test: pnpm run test',
    ]);
    // No lockfile: an install that writes none into the change.
    expect(
      await commands(await repo({ 'package.json': pkg({ packageManager: 'pnpm@9.15.0', dependencies: { a: '1' } }) })),
    ).toEqual(['install: pnpm install --no-lockfile']);
  });

  it("yarn classic and berry: their own frozen installs; bun: its own, and `bun run test`, not bun's test runner", async () => {
    const scripts = { build: 'tsc', test: 'jest' };
    expect(
      await commands(
        await repo({
          'package.json': pkg({ scripts, devDependencies: { jest: '1' } }),
          'yarn.lock': '# yarn lockfile v1\n',
        }),
      ),
    ).toEqual([
      'install: yarn install --frozen-lockfile --non-interactive',
      'build: yarn run build',
      'test: yarn run test',
    ]);
    const berry = {
      'package.json': pkg({ packageManager: 'yarn@4.4.1', scripts, devDependencies: { jest: '1' } }),
      'yarn.lock': '__metadata:\n  version: 8\n',
    };
    expect(await commands(await repo(berry))).toEqual([
      'install: yarn install --immutable',
      'build: yarn run build',
      'test: yarn run test',
    ]);
    expect(
      await commands(
        await repo({ 'package.json': pkg({ scripts, devDependencies: { jest: '1' } }), 'bun.lock': '{}' }),
      ),
    ).toEqual(['install: bun install --frozen-lockfile', 'build: bun run build', 'test: bun run test']);
  });

  it('a pnpm workspace installs once, at the root, even when the root declares no dependency', async () => {
    const workdir = await repo({
      'package.json': pkg({
        name: 'root',
        private: true,
        packageManager: 'pnpm@9.15.0',
        scripts: { test: 'pnpm -r test' },
      }),
      'pnpm-workspace.yaml': 'packages:\n  - packages/*\n',
      'pnpm-lock.yaml': "lockfileVersion: '9.0'\n",
      'packages/a/package.json': pkg({
        name: 'a',
        dependencies: { 'is-number': '7.0.0' },
        scripts: { test: 'node --test' },
      }),
    });
    expect(await commands(workdir)).toEqual(['install: pnpm install --frozen-lockfile', 'test: pnpm run test']);
  });

  it("AGENTS.md's `pnpm test`, `pnpm run typecheck` and `yarn lint` lines are recognised, and run with the repository's manager", async () => {
    const agents = '# Agents\n\nBefore you finish, run `pnpm test` and `pnpm run typecheck`; `yarn lint` too.\n';
    // The test step switched off fleet-wide: only AGENTS.md brings it back.
    const off = verificationWith('node', { test: [], lint: [] });
    const pnpmRepo = await repo({ ...ufoLike, 'AGENTS.md': agents });
    // `yarn lint` names the same script as `pnpm test` runs first: it does not run twice.
    expect(await commands(pnpmRepo, off)).toEqual([
      'install: pnpm install --frozen-lockfile',
      'build: pnpm run build',
      'build: pnpm run typecheck',
      'test: pnpm run test',
    ]);
    const plan = await planVerification(pnpmRepo, { config: off, env: { PATH: '/nonexistent' } });
    // pnpm is not on the worker's PATH at planning: it is provided afterwards, so its checks stay.
    expect(plan.steps.map((step) => step.command.join(' '))).toContain('pnpm run test');
    // Without AGENTS.md nothing runs the tests.
    expect(await commands(await repo(ufoLike), off)).not.toContain('test: pnpm run test');
  });

  it("scriptOf: the script a command runs with any manager; builtins and bun's own test runner are not scripts", () => {
    const scripts = { lint: 'eslint .', test: 'jest', typecheck: 'tsc' };
    expect(
      [
        'npm test',
        'npm run lint',
        'pnpm test',
        'pnpm lint',
        'pnpm run typecheck',
        'yarn typecheck',
        'yarn run test',
        'bun run lint',
      ].map((line) => scriptOf(line.split(' '), scripts)),
    ).toEqual(['test', 'lint', 'test', 'lint', 'typecheck', 'typecheck', 'test', 'lint']);
    expect(
      ['pnpm install', 'yarn add x', 'bun test', 'pnpm unknown', 'npm lint', 'pnpm -r test', 'npx jest'].map((line) =>
        scriptOf(line.split(' '), scripts),
      ),
    ).toEqual([undefined, undefined, undefined, undefined, undefined, undefined, undefined]);
  });
});

describe('planEnv', () => {
  it("puts the plan's PATH entry (a provided manager's launchers) in front of the worker's", () => {
    expect(planEnv({ env: { PATH: '/tools/pnpm/bin' } }, { PATH: '/usr/bin', HOME: '/h' })).toEqual({
      PATH: '/tools/pnpm/bin:/usr/bin',
      HOME: '/h',
    });
    expect(planEnv({ env: { PATH: '/tools/pnpm/bin' } }, {})).toEqual({ PATH: '/tools/pnpm/bin' });
  });
});

describe('flake8 configured outside .flake8 and setup.cfg', () => {
  it("is found in pyproject.toml's [tool.flake8] and tox.ini's [testenv:flake8]; a pyproject without it is not", async () => {
    const project = '[project]\nname = "pkg"\n';
    const found = async (files: Record<string, string>) =>
      (await repoChecks(await repo(files), 'python', undefined, [])).map((step) => step.command.join(' '));
    expect(await found({ 'pyproject.toml': `${project}\n[tool.flake8]\nmax-line-length = 100\n` })).toEqual(['flake8']);
    expect(
      await found({
        'pyproject.toml': project,
        'tox.ini': '[tox]\nenvlist = py3\n\n[testenv:flake8]\ncommands = flake8 src\n',
      }),
    ).toEqual(['flake8']);
    expect(
      await found({
        'pyproject.toml': `${project}\n[tool.ruff]\nline-length = 100\n`,
        'tox.ini': '[testenv]\ncommands = pytest\n',
      }),
    ).toEqual([]);
  });
});
