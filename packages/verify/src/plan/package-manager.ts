import { isRepoFile, readRepoFile } from './repo-file.js';

/** The Node package managers verification knows how to install with and run scripts through. */
export type PackageManagerName = 'npm' | 'pnpm' | 'yarn' | 'bun';

/**
 * The package manager a repository uses, as its `packageManager` field and lockfiles say.
 * npm comes with Node; the others are provided on the host (see `provideManager`).
 */
export interface PackageManager {
  name: PackageManagerName;
  /** Yarn's line: `classic` (1.x) or `berry` (2 and later); their install flags differ. */
  flavour?: 'classic' | 'berry';
  /**
   * The version to provide: exact (`9.15.0`) from `packageManager`, else a major (`9`)
   * guessed from the lockfile's format. Always digits, dots and a prerelease tag at most.
   */
  version: string;
  /** `packageManager`'s hash (`+sha512.<hex>`), checked against what is fetched. */
  integrity?: Integrity;
  /** Its lockfile at the root, if any: then installs are frozen to it. */
  lockfile?: string;
}

/** A hash corepack's `packageManager` syntax pins: the algorithm and the hex digest. */
interface Integrity {
  algorithm: 'sha1' | 'sha224' | 'sha256' | 'sha512';
  hex: string;
}

/** Lockfiles by manager, in the order they are looked for (npm's own preference first). */
export const lockfilesOf: Readonly<Record<PackageManagerName, readonly string[]>> = {
  npm: ['npm-shrinkwrap.json', 'package-lock.json'],
  pnpm: ['pnpm-lock.yaml'],
  yarn: ['yarn.lock'],
  bun: ['bun.lock', 'bun.lockb'],
};

// The manager's own files that change what an install does (settings, workspaces, patches).
export const managerFiles = ['.npmrc', 'pnpm-workspace.yaml', '.yarnrc', '.yarnrc.yml', 'bunfig.toml'] as const;

const managerNames = ['npm', 'pnpm', 'yarn', 'bun'] as const;
// corepack's syntax: name@exact-version, optionally +algorithm.hex. Repository data: anything
// else (a range, a URL, a path) is ignored and the lockfiles decide.
const packageManagerField =
  /^(npm|pnpm|yarn|bun)@(\d{1,4}\.\d{1,4}\.\d{1,4}(?:-[0-9A-Za-z.]{1,40})?)(?:\+(sha1|sha224|sha256|sha512)\.([0-9a-f]{40,128}))?$/;
const maxLockHeadBytes = 64 * 1024 * 1024;

/**
 * The package manager of the repository in `workdir`: `packageManager` in package.json
 * (`pnpm@9.15.0`) when it is well formed, else the first lockfile found (pnpm, yarn, bun,
 * then npm's), else npm.
 */
export async function detectPackageManager(
  workdir: string,
  manifest: Readonly<Record<string, unknown>> | undefined,
): Promise<PackageManager> {
  const declared =
    typeof manifest?.packageManager === 'string' ? packageManagerField.exec(manifest.packageManager.trim()) : null;
  let name: PackageManagerName | undefined = declared?.[1] as PackageManagerName | undefined;
  if (name === undefined) {
    for (const candidate of ['pnpm', 'yarn', 'bun', 'npm'] as const) {
      if ((await firstFile(workdir, lockfilesOf[candidate])) !== undefined) {
        name = candidate;
        break;
      }
    }
  }
  name ??= 'npm';
  const lockfile = await firstFile(workdir, lockfilesOf[name]);
  const manager: PackageManager = { name, version: declared?.[2] ?? (await guessVersion(workdir, name, lockfile)) };
  if (lockfile !== undefined) manager.lockfile = lockfile;
  if (declared?.[3] !== undefined && declared[4] !== undefined)
    manager.integrity = { algorithm: declared[3] as Integrity['algorithm'], hex: declared[4] };
  if (name === 'yarn') manager.flavour = Number.parseInt(manager.version, 10) >= 2 ? 'berry' : 'classic';
  return manager;
}

async function firstFile(workdir: string, names: readonly string[]): Promise<string | undefined> {
  for (const file of names) if (await isRepoFile(workdir, file)) return file;
  return undefined;
}

/** A major version that reads the lockfile, when `packageManager` does not say. */
async function guessVersion(workdir: string, name: PackageManagerName, lockfile: string | undefined): Promise<string> {
  const head = lockfile === undefined ? '' : await lockfileHead(workdir, lockfile);
  if (name === 'pnpm') {
    const format = /^lockfileVersion:\s*['"]?(\d+)(?:\.(\d+))?/m.exec(head);
    const major = Number(format?.[1] ?? 9);
    // 9.0 is written by pnpm 9 and 10, 6.x by 8, 5.4 by 7, older ones by 6.
    return major >= 9 ? '9' : major >= 6 ? '8' : Number(format?.[2] ?? 0) >= 4 ? '7' : '6';
  }
  if (name === 'yarn') {
    // Berry writes a `__metadata:` block; a `.yarnrc.yml` is berry's settings file too.
    return /^__metadata:/m.test(head) || (await isRepoFile(workdir, '.yarnrc.yml')) ? '4' : '1';
  }
  return name === 'bun' ? '1' : '';
}

async function lockfileHead(workdir: string, lockfile: string): Promise<string> {
  if (lockfile.endsWith('.lockb')) return '';
  const read = await readRepoFile(workdir, lockfile, { maxBytes: maxLockHeadBytes });
  return read.status === 'read' ? read.content.subarray(0, 4096).toString('utf8') : '';
}

/**
 * The install command: frozen to the lockfile when there is one (`npm ci`, `pnpm install
 * --frozen-lockfile`, `yarn install --immutable` / `--frozen-lockfile`, `bun install
 * --frozen-lockfile`), so the versions checked are the repository's, not the newest; without
 * one, an install that writes no lockfile into the change.
 */
export function installCommand(manager: PackageManager): string[] {
  const locked = manager.lockfile !== undefined;
  switch (manager.name) {
    case 'npm':
      return locked
        ? ['npm', 'ci', '--no-audit', '--no-fund']
        : ['npm', 'install', '--no-package-lock', '--no-audit', '--no-fund'];
    case 'pnpm':
      return ['pnpm', 'install', locked ? '--frozen-lockfile' : '--no-lockfile'];
    case 'yarn':
      // Berry has no "no lockfile" mode: without one it writes yarn.lock, as its users expect.
      if (manager.flavour === 'berry') return locked ? ['yarn', 'install', '--immutable'] : ['yarn', 'install'];
      return ['yarn', 'install', locked ? '--frozen-lockfile' : '--no-lockfile', '--non-interactive'];
    case 'bun':
      return ['bun', 'install', locked ? '--frozen-lockfile' : '--no-save'];
  }
}

/** The command that runs script `name` with `manager` (`npm test`, `pnpm run lint`, `bun run test`). */
export function scriptCommand(manager: Pick<PackageManager, 'name'>, name: string): string[] {
  if (manager.name === 'npm') return name === 'test' ? ['npm', 'test'] : ['npm', 'run', name];
  // `bun test` is bun's own test runner, not the script: always `run`.
  return [manager.name, 'run', name];
}

// Subcommands of pnpm and yarn that are not scripts: `pnpm install`, `yarn add`, … A bare
// `pnpm <name>` / `yarn <name>` runs the script only when it is none of these.
const builtins = new Set([
  'add',
  'audit',
  'bin',
  'cache',
  'config',
  'create',
  'dedupe',
  'dlx',
  'exec',
  'fetch',
  'i',
  'import',
  'info',
  'init',
  'install',
  'link',
  'list',
  'ls',
  'outdated',
  'pack',
  'patch',
  'prune',
  'publish',
  'rebuild',
  'remove',
  'rm',
  'root',
  'set',
  'store',
  'unlink',
  'up',
  'update',
  'upgrade',
  'version',
  'why',
  'workspace',
  'workspaces',
  'x',
]);

/**
 * The package.json script a command runs, with any of the managers: `npm test`, `npm run x`,
 * `pnpm x`, `pnpm run x`, `yarn x`, `yarn run x`, `bun run x`; undefined for anything else.
 * A bare `pnpm x` / `yarn x` counts only when `scripts` has `x` (when scripts are given).
 */
export function scriptOf(command: readonly string[], scripts?: Readonly<Record<string, string>>): string | undefined {
  const [bin, sub, ...rest] = command;
  if (bin === undefined || !(managerNames as readonly string[]).includes(bin) || sub === undefined) return undefined;
  if (sub === 'run' || sub === 'run-script') return rest.find((arg) => !arg.startsWith('-'));
  if (bin === 'bun') return undefined;
  if (sub === 'test' || (sub === 't' && bin !== 'yarn')) return 'test';
  if (bin === 'npm' || sub.startsWith('-') || builtins.has(sub)) return undefined;
  return scripts === undefined || scripts[sub] !== undefined ? sub : undefined;
}
