import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { VerificationConfig } from '@codefleet/config';
import { toolchains, type StepName, type Toolchain } from '../types.js';
import { installCommand, scriptCommand, scriptOf, type PackageManager } from './package-manager.js';
import { rustUses } from './repo-checks.js';
import { isRepoFile, readRepoFile } from './repo-file.js';

/** The file whose presence at the repository root selects each toolchain. */
export const markerFiles: Readonly<Record<Toolchain, string>> = {
  node: 'package.json',
  go: 'go.mod',
  rust: 'Cargo.toml',
  python: 'pyproject.toml',
};

/** The steps a toolchain contributes, by name; a missing name means the step is skipped. */
export type DetectedSteps = Partial<Record<StepName, string[]>>;

type Commands = VerificationConfig['toolchains']['node'];
const checkSteps = ['build', 'format', 'lint', 'test'] as const;

const npm: PackageManager = { name: 'npm', version: '' };
// What `npm init` writes as the test script: a placeholder that always fails.
const npmInitTest = /^echo "Error: no test specified" && exit 1$/;
// Manifests are small; a larger one is read as unparsable, which npm then reports.
const maxManifestBytes = 4 * 1024 * 1024;

/**
 * The first toolchain (node, go, rust, python) whose marker file is at the root of
 * `workdir`, as a regular file: a symlink there marks nothing.
 */
export async function detectToolchain(workdir: string): Promise<Toolchain | 'none'> {
  for (const toolchain of toolchains) {
    if (await isRepoFile(workdir, markerFiles[toolchain])) return toolchain;
  }
  return 'none';
}

/**
 * The steps `toolchain` runs in `workdir`, from the config's commands for it (an empty
 * command skips the step), refined by what the repository actually has:
 * - node: install with the repository's package manager (`manager`, default npm) when
 *   package.json declares dependencies or workspaces (once, at the root: pnpm and yarn
 *   install every workspace package from there); a step whose script exists in package.json
 *   runs it with that manager (`pnpm run build`, `npm test`); a config command that only
 *   runs a missing script is skipped, any other config command runs as is;
 * - python: ruff commands run only when ruff is configured (`[tool.ruff]`, `ruff.toml`);
 * - rust: clippy and rustfmt only where the repository uses them (their config file, or its
 *   CI, Makefile or justfile runs them): a crate whose CI never ran clippy fails it at the base;
 * - go: the config commands.
 */
export async function toolchainSteps(
  workdir: string,
  toolchain: Toolchain | 'none',
  config: VerificationConfig,
  manager: PackageManager = npm,
): Promise<DetectedSteps> {
  if (toolchain === 'none') return {};
  if (toolchain === 'node') return nodeSteps(workdir, config.toolchains.node, manager);
  if (toolchain === 'python') return pythonSteps(workdir, config.toolchains.python);
  if (toolchain === 'rust') {
    const clippy = await rustUses(workdir, 'clippy');
    const rustfmt = await rustUses(workdir, 'rustfmt');
    return configSteps(
      config.toolchains.rust,
      (command) =>
        (clippy || !invokes(command, 'clippy')) && (rustfmt || !(invokes(command, 'fmt') || command[0] === 'rustfmt')),
    );
  }
  return configSteps(config.toolchains[toolchain], () => true);
}

// `cargo clippy …`, `cargo +nightly fmt …`: the cargo subcommand, toolchain pins skipped.
function invokes(command: readonly string[], subcommand: string): boolean {
  return command[0] === 'cargo' && command.slice(1).find((arg) => !arg.startsWith('+')) === subcommand;
}

/** The scripts of the root package.json, or undefined when there is none (or it is unreadable). */
export async function readScripts(workdir: string): Promise<Record<string, string> | undefined> {
  return (await readManifest(workdir))?.scripts;
}

/** The root package.json as parsed, or undefined when there is none or it is not an object. */
export async function readManifestFields(workdir: string): Promise<Record<string, unknown> | undefined> {
  return (await readManifest(workdir))?.fields;
}

/**
 * The import path a Python `src/` layout needs when nothing installs the package: tests
 * import it by name, and without an install step only `src/` on PYTHONPATH finds it.
 */
export async function pythonImportPath(workdir: string): Promise<string | undefined> {
  const src = join(workdir, 'src');
  if (
    !(await lstat(src).then(
      (info) => info.isDirectory(),
      () => false,
    ))
  )
    return undefined;
  const entries = await readdir(src, { withFileTypes: true }).catch(() => []);
  for (const entry of entries) {
    if (entry.isDirectory() && (await isRepoFile(workdir, join('src', entry.name, '__init__.py')))) return src;
  }
  return entries.some((entry) => entry.isFile() && entry.name.endsWith('.py')) ? src : undefined;
}

function configSteps(commands: Commands, keep: (command: readonly string[]) => boolean): DetectedSteps {
  const steps: DetectedSteps = {};
  for (const name of checkSteps) {
    const command = commands[name];
    if (command.length > 0 && keep(command)) steps[name] = [...command];
  }
  return steps;
}

interface Manifest {
  fields: Record<string, unknown>;
  scripts: Record<string, string>;
  hasDependencies: boolean;
}

async function nodeSteps(workdir: string, commands: Commands, manager: PackageManager): Promise<DetectedSteps> {
  const manifest = await readManifest(workdir);
  // Unparsable package.json: plan the config commands and let the manager report the error,
  // so it reaches the agent (who may have caused it) as ordinary step feedback.
  if (manifest === undefined) return { install: installCommand(manager), ...configSteps(commands, () => true) };

  const steps: DetectedSteps = {};
  // pnpm declares its workspaces in a file of its own; the root may have no dependency at all.
  if (manifest.hasDependencies || (await isRepoFile(workdir, 'pnpm-workspace.yaml')))
    steps.install = installCommand(manager);
  for (const name of checkSteps) {
    const configured = commands[name];
    // An empty config command is the operator switching the step off fleet-wide.
    if (configured.length === 0) continue;
    if (hasScript(manifest, name)) {
      steps[name] = scriptCommand(manager, name);
      continue;
    }
    const script = scriptOf(configured);
    if (script === undefined) steps[name] = [...configured];
    else if (hasScript(manifest, script))
      steps[name] = withManager(
        configured.filter((arg) => arg !== '--if-present'),
        script,
        manager,
      );
  }
  return steps;
}

/** A configured script command (`npm run lint -- --quiet`) run by `manager` instead, its arguments kept. */
function withManager(command: string[], script: string, manager: PackageManager): string[] {
  if (manager.name === command[0]) return command;
  return [...scriptCommand(manager, script), ...command.slice(command.indexOf(script) + 1)];
}

async function readManifest(workdir: string): Promise<Manifest | undefined> {
  const file = await readRepoFile(workdir, 'package.json', { maxBytes: maxManifestBytes });
  if (file.status !== 'read') return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(file.content.toString('utf8'));
  } catch {
    return undefined;
  }
  if (!isRecord(parsed)) return undefined;
  const scripts: Record<string, string> = {};
  if (isRecord(parsed.scripts)) {
    for (const [name, body] of Object.entries(parsed.scripts)) if (typeof body === 'string') scripts[name] = body;
  }
  const nonEmpty = (value: unknown) =>
    isRecord(value) ? Object.keys(value).length > 0 : Array.isArray(value) && value.length > 0;
  const hasDependencies = [
    'dependencies',
    'devDependencies',
    'optionalDependencies',
    'peerDependencies',
    'workspaces',
  ].some((field) => nonEmpty(parsed[field]));
  return { fields: parsed, scripts, hasDependencies };
}

function hasScript(manifest: Manifest, name: string): boolean {
  const body = manifest.scripts[name];
  return body !== undefined && body.trim() !== '' && !(name === 'test' && npmInitTest.test(body.trim()));
}

async function pythonSteps(workdir: string, commands: Commands): Promise<DetectedSteps> {
  const file = await readRepoFile(workdir, 'pyproject.toml', { maxBytes: maxManifestBytes });
  const pyproject = file.status === 'read' ? file.content.toString('utf8') : '';
  const ruffConfigured =
    /^\s*\[tool\.ruff[\].]/m.test(pyproject) ||
    (await isRepoFile(workdir, 'ruff.toml')) ||
    (await isRepoFile(workdir, '.ruff.toml'));
  // The default format/lint commands are ruff's; running ruff on a project that never chose
  // it would impose its rules, so they apply only where ruff is configured.
  return configSteps(commands, (command) => ruffConfigured || !invokesRuff(command));
}

function invokesRuff(command: readonly string[]): boolean {
  const [bin, flag, module] = command;
  return bin === 'ruff' || (flag === '-m' && module === 'ruff');
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
