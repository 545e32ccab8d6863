import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { PlannedStep, StepName, Toolchain } from '../types.js';
import { scriptCommand, scriptOf, type PackageManager } from './package-manager.js';
import { isRepoFile, readRepoFile } from './repo-file.js';

/**
 * The repository's own checks beyond the four step commands, so the DoD is at least its
 * CI's: package.json scripts such as `check`, `check:*`, `typecheck`, `format:check`, `lint:*`,
 * `test:*` that the planned scripts do not already run (run with `manager`), flake8 where it
 * is configured (`.flake8`, `setup.cfg`, `tox.ini`, `pyproject.toml`), and commands an
 * `AGENTS.md` states (only known checkers, argument vectors without shell syntax; a script
 * it runs with any manager, `pnpm test` or `yarn lint`, runs with `manager`).
 * Scripts that watch, serve, fix or write are never picked: a check must end and must not
 * change the tree.
 */
export async function repoChecks(
  workdir: string,
  toolchain: Toolchain | 'none',
  scripts: Readonly<Record<string, string>> | undefined,
  planned: readonly PlannedStep[],
  available: (program: string) => Promise<boolean> = async () => true,
  manager: Pick<PackageManager, 'name'> = { name: 'npm' },
): Promise<PlannedStep[]> {
  const extra: PlannedStep[] = [];
  const scriptOfStep = (step: PlannedStep) => scriptOf(step.command, scripts);
  const add = async (step: PlannedStep) => {
    const same = (other: PlannedStep) => other.command.join('\0') === step.command.join('\0');
    if (planned.some(same) || extra.some(same) || extra.length >= maxExtraChecks) return;
    // A script something already planned runs (`check` runs `check:lint`) would run twice.
    const script = scriptOfStep(step);
    const runners = [...planned, ...extra].flatMap((other) => scriptOfStep(other) ?? []);
    if (script !== undefined && scripts !== undefined && referencedScripts(scripts, runners).has(script)) return;
    // Found, not configured: a checker this worker does not have is left out, not a failed job.
    if (!(await available(step.command[0]!))) return;
    extra.push(step);
  };
  if (scripts !== undefined) for (const step of scriptChecks(scripts, planned, manager)) await add(step);
  if (toolchain === 'python' && (await flake8Configured(workdir))) await add({ name: 'lint', command: ['flake8'] });
  for (const step of await agentsFileChecks(workdir, toolchain, scripts, manager)) await add(step);
  return extra;
}

// A repository could list hundreds; each runs on every attempt.
const maxExtraChecks = 8;

/** The step an npm script's name makes it, or undefined for one that is not a check. */
export function scriptStep(name: string): StepName | undefined {
  if (unsafeScript.test(name)) return undefined;
  if (name === 'typecheck' || name === 'type-check' || name === 'tsc') return 'build';
  if (
    name === 'check' ||
    name.startsWith('check:') ||
    name === 'format:check' ||
    name === 'lint:check' ||
    name.startsWith('lint:')
  )
    return 'lint';
  if (name.startsWith('test:')) return 'test';
  return undefined;
}

// Segments of a script name that mean it does not just check: it watches, serves, writes.
const unsafeScript =
  /(^|[:_-])(watch|dev|serve|start|debug|fix|write|update|u|e2e|ci|coverage|cov|snapshot|open|ui|bench|perf|prepare|release|publish|deploy|install|clean|interactive)($|[:_-])/i;

function scriptChecks(
  scripts: Readonly<Record<string, string>>,
  planned: readonly PlannedStep[],
  manager: Pick<PackageManager, 'name'>,
): PlannedStep[] {
  const plannedScripts = planned.flatMap((step) => {
    const name = scriptOf(step.command, scripts);
    return name === undefined ? [] : [name];
  });
  const covered = referencedScripts(scripts, plannedScripts);
  const bodies = new Set(plannedScripts.map((name) => scripts[name]?.trim()));
  const found: PlannedStep[] = [];
  for (const name of Object.keys(scripts).sort()) {
    const step = scriptStep(name);
    const body = scripts[name]?.trim() ?? '';
    if (step === undefined || body === '' || covered.has(name) || bodies.has(body) || watches(body)) continue;
    found.push({ name: step, command: scriptCommand(manager, name) });
    // What this script runs is covered now too (`check` running `lint` and `typecheck`).
    for (const more of referencedScripts(scripts, [name])) covered.add(more);
  }
  // A script picked early may be run by one picked later: keep only the outermost.
  return found.filter(
    (step) =>
      !found.some(
        (other) =>
          other !== step && referencedScripts(scripts, [scriptOf(other.command)!]).has(scriptOf(step.command)!),
      ),
  );
}

/** A script body that starts a watcher or a server: it would never end. */
function watches(body: string): boolean {
  return (
    /(^|\s)(--watch(All)?|-w|--serve|serve|--ui|--open)(\s|=|$)/.test(body) ||
    /\b(nodemon|chokidar|vite(?! build)|webpack-dev-server|live-server)\b/.test(body)
  );
}

/** Every script `roots` run, directly or through others (`npm run x`, `run-s a:*`, `pnpm x`). */
export function referencedScripts(scripts: Readonly<Record<string, string>>, roots: readonly string[]): Set<string> {
  const seen = new Set<string>();
  const queue = [...roots];
  while (queue.length > 0) {
    const body = scripts[queue.shift()!] ?? '';
    for (const name of namesIn(body, scripts)) {
      if (seen.has(name)) continue;
      seen.add(name);
      queue.push(name);
    }
  }
  return seen;
}

function namesIn(body: string, scripts: Readonly<Record<string, string>>): string[] {
  const names: string[] = [];
  const match = (pattern: string) => {
    if (!pattern.includes('*')) return scripts[pattern] === undefined ? [] : [pattern];
    const regex = new RegExp(
      `^${pattern
        .split('*')
        .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
        .join('.*')}$`,
    );
    return Object.keys(scripts).filter((name) => regex.test(name));
  };
  for (const [, name] of body.matchAll(
    /\b(?:npm|pnpm|yarn|bun)\s+(?:run(?:-script)?\s+)?(?:--?[\w-]+\s+)*["']?([\w:.*-]+)/g,
  ))
    names.push(...match(name!));
  for (const [, args] of body.matchAll(/\b(?:run-s|run-p|npm-run-all)\s+([^&|;]+)/g)) {
    for (const arg of args!.split(/\s+/))
      if (arg !== '' && !arg.startsWith('-')) names.push(...match(arg.replace(/^["']|["']$/g, '')));
  }
  return names;
}

// Where flake8 reads its settings: its own sections, tox's environment running it, and
// pyproject.toml (read by the Flake8-pyproject plugin).
const flake8Sections: readonly [string, RegExp][] = [
  ['setup.cfg', /^\s*\[flake8\]/m],
  ['tox.ini', /^\s*\[(flake8|testenv:flake8)\]/m],
  ['pyproject.toml', /^\s*\[tool\.flake8\]/m],
];

async function flake8Configured(workdir: string): Promise<boolean> {
  if (await isRepoFile(workdir, '.flake8')) return true;
  for (const [file, section] of flake8Sections) {
    const read = await readRepoFile(workdir, file, { maxBytes: 1024 * 1024 });
    if (read.status === 'read' && section.test(read.content.toString('utf8'))) return true;
  }
  return false;
}

// Programs whose subcommands are known checks, by the toolchain they belong to; anything
// else an AGENTS.md says is ignored (prose mentions other tools: "we do not use pytest").
const knownChecks: readonly { pattern: RegExp; step: StepName; toolchain?: Toolchain }[] = [
  { pattern: /^cargo (test|nextest run)\b/, step: 'test', toolchain: 'rust' },
  { pattern: /^cargo clippy\b/, step: 'lint', toolchain: 'rust' },
  { pattern: /^cargo fmt\b.*--check\b/, step: 'lint', toolchain: 'rust' },
  { pattern: /^cargo (build|check)\b/, step: 'build', toolchain: 'rust' },
  { pattern: /^(python3? -m )?pytest\b/, step: 'test', toolchain: 'python' },
  { pattern: /^(python3? -m )?(flake8|mypy|pyright)\b/, step: 'lint', toolchain: 'python' },
  { pattern: /^(python3? -m )?ruff check\b/, step: 'lint', toolchain: 'python' },
  { pattern: /^go test\b/, step: 'test', toolchain: 'go' },
  { pattern: /^go vet\b/, step: 'lint', toolchain: 'go' },
  { pattern: /^go build\b/, step: 'build', toolchain: 'go' },
  { pattern: /^make test$/, step: 'test' },
  { pattern: /^make (check|lint)$/, step: 'lint' },
];
// No shell: a command with shell syntax, globbing or quoting is not taken.
const shellSyntax = /[|&;<>()$`\\"'*?{}[\]~!#]/;
const writes = /(^|\s)(--fix|--write|-w|--watch|fix|install|publish|update)(\s|$)/;

async function agentsFileChecks(
  workdir: string,
  toolchain: Toolchain | 'none',
  scripts: Readonly<Record<string, string>> | undefined,
  manager: Pick<PackageManager, 'name'>,
): Promise<PlannedStep[]> {
  const read = await readRepoFile(workdir, 'AGENTS.md', { maxBytes: 256 * 1024 });
  if (read.status !== 'read') return [];
  const found: PlannedStep[] = [];
  for (const line of commandLines(read.content.toString('utf8'))) {
    if (shellSyntax.test(line) || writes.test(line) || line.length > 200) continue;
    const argv = line.split(/\s+/);
    // `pnpm test`, `yarn lint`, `npm run typecheck`: whichever manager it names, the script
    // runs with the repository's own (a repository has one lockfile).
    const script = toolchain === 'node' ? scriptOf(argv, scripts ?? {}) : undefined;
    if (script !== undefined) {
      const step =
        script === 'test'
          ? 'test'
          : (scriptStep(script) ?? (['lint', 'build'].includes(script) ? (script as StepName) : undefined));
      if (step !== undefined && scripts?.[script] !== undefined && argv.length <= 3)
        found.push({ name: step, command: scriptCommand(manager, script) });
      continue;
    }
    const known = knownChecks.find((check) => check.pattern.test(line));
    if (known === undefined || (known.toolchain !== undefined && known.toolchain !== toolchain)) continue;
    if (argv[0] !== 'make' || (await isRepoFile(workdir, 'Makefile'))) found.push({ name: known.step, command: argv });
  }
  return found;
}

/** Commands an AGENTS.md shows: inline code spans and the lines of code blocks (`$ ` prompts dropped). */
function commandLines(text: string): string[] {
  const lines: string[] = [];
  let fenced = false;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (/^(```|~~~)/.test(line)) {
      fenced = !fenced;
      continue;
    }
    if (fenced) {
      lines.push(line.replace(/^\$\s+/, ''));
      continue;
    }
    for (const [, code] of line.matchAll(/`([^`]+)`/g)) lines.push(code!.trim().replace(/^\$\s+/, ''));
  }
  return lines.filter((line) => line !== '');
}

/** Whether the repository uses a Rust checker: its config file, or its CI or Makefile runs it. */
export async function rustUses(workdir: string, tool: 'clippy' | 'rustfmt'): Promise<boolean> {
  const configs = tool === 'clippy' ? ['clippy.toml', '.clippy.toml'] : ['rustfmt.toml', '.rustfmt.toml'];
  for (const file of configs) if (await isRepoFile(workdir, file)) return true;
  const mention = tool === 'clippy' ? /\bclippy\b/ : /\b(cargo fmt|rustfmt)\b/;
  const candidates = ['Makefile', 'justfile', 'Justfile', ...(await workflowFiles(workdir))];
  for (const file of candidates) {
    const read = await readRepoFile(workdir, file, { maxBytes: 1024 * 1024 });
    if (read.status === 'read' && mention.test(read.content.toString('utf8'))) return true;
  }
  return false;
}

async function workflowFiles(workdir: string): Promise<string[]> {
  const dir = join(workdir, '.github', 'workflows');
  // A real directory only: a symlink here could list a directory outside the copy.
  for (const part of [join(workdir, '.github'), dir]) {
    if (
      !(await lstat(part).then(
        (info) => info.isDirectory(),
        () => false,
      ))
    )
      return [];
  }
  const names = await readdir(dir).catch(() => [] as string[]);
  return names
    .filter((name) => /\.ya?ml$/.test(name))
    .sort()
    .slice(0, 50)
    .map((name) => join('.github', 'workflows', name));
}
