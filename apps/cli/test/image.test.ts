import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import ts from 'typescript';
import { createTempDir, type TempDir } from '@codefleet/testkit';

// The container image without Docker (none on these machines): the Dockerfile's stages are
// read as Docker reads them, its own RUN commands that pick files run here against this
// checkout (built), and what the runtime stage holds is checked: every module the
// entrypoint can reach resolves to a built file or to a package that `npm ci --omit=dev`
// installs. Not covered: apt-get and the image's Node itself.

const root = fileURLToPath(new URL('../../../', import.meta.url));
const read = (path: string) => readFileSync(join(root, path), 'utf8');

interface Stage {
  name: string | undefined;
  instructions: { op: string; args: string }[];
}

/** The Dockerfile's stages, in order: instructions with continuation lines joined, comments dropped. */
function stages(text: string): Stage[] {
  const result: Stage[] = [];
  for (const line of text.replace(/\\\n/g, ' ').split('\n')) {
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#')) continue;
    const [op, ...rest] = trimmed.split(/\s+/);
    const args = rest.join(' ');
    if (op === 'FROM') result.push({ name: /\bAS\s+(\S+)$/i.exec(args)?.[1], instructions: [] });
    if (op !== 'ARG' || result.length > 0) result.at(-1)?.instructions.push({ op: op!, args });
  }
  return result;
}

/** Runs one shell command of the Dockerfile (a RUN's text, as Docker runs it with /bin/sh -c) in this checkout. */
function runHere(command: string): void {
  execFileSync('/bin/sh', ['-c', command], { cwd: root, stdio: 'pipe' });
}

/** Every file under `dir`, relative to it. */
function files(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => statSync(join(dir, f)).isFile())
    .sort();
}

/** The workspace directories the root package.json names (`packages/*` style globs). */
function workspaceDirs(): string[] {
  const { workspaces } = JSON.parse(read('package.json')) as { workspaces: string[] };
  return workspaces
    .flatMap((glob) => {
      const parent = glob.replace(/\/\*$/, '');
      return readdirSync(join(root, parent))
        .map((d) => `${parent}/${d}`)
        .filter((d) => existsSync(join(root, d, 'package.json')));
    })
    .sort();
}

/**
 * Specifiers a compiled module imports: static imports and re-exports, side effects and
 * string-literal import() (TypeScript's scanner, so code quoted inside strings, like the
 * demo's sample repository, is not taken for imports), and createRequire() calls.
 */
function importsOf(source: string): string[] {
  const found = new Set(ts.preProcessFile(source, true, true).importedFiles.map((f) => f.fileName));
  for (const [, name] of source.matchAll(/\bconst\s+(\w+)\s*=\s*createRequire\(/g)) {
    for (const match of source.matchAll(new RegExp(`\\b${name}\\(\\s*['"]([^'"]+)['"]\\s*\\)`, 'g')))
      found.add(match[1]!);
  }
  return [...found];
}

describe('the container image (infra/container/Dockerfile)', () => {
  let dir: TempDir;
  let all: Stage[];
  let runtime: Stage;
  beforeAll(async () => {
    dir = await createTempDir('image');
    all = stages(read('infra/container/Dockerfile'));
    runtime = all.at(-1)!;
  });
  afterAll(async () => {
    await dir.dispose();
  });

  const commandsOf = (stage: Stage, op: string) => stage.instructions.filter((i) => i.op === op).map((i) => i.args);

  it('installs dependencies from the manifests alone, before any source is copied, in every stage that installs', () => {
    expect(all.length).toBeGreaterThanOrEqual(3);
    const installing = all.filter((s) => commandsOf(s, 'RUN').some((run) => /\bnpm ci\b/.test(run)));
    expect(installing.length).toBeGreaterThanOrEqual(2); // the build's and the runtime's
    for (const stage of installing) {
      const install = stage.instructions.findIndex((i) => i.op === 'RUN' && /\bnpm ci\b/.test(i.args));
      const copies = stage.instructions.slice(0, install).filter((i) => i.op === 'COPY' || i.op === 'ADD');
      // The build installs every workspace; the runtime stage only those the CLI reaches.
      expect(copies.map((c) => c.args)).toEqual([
        stage === runtime ? '--from=manifests /runtime-manifests/ ./' : '--from=manifests /manifests/ ./',
      ]);
    }
    // The manifests stage's own command, run here: it picks the root manifests and every
    // workspace's package.json, and nothing else, so a source edit leaves the installs cached.
    const manifests = all.find((s) => s.name === 'manifests')!;
    const pick = commandsOf(manifests, 'RUN').find((run) => run.includes('/manifests'))!;
    const out = join(dir.path, 'manifests');
    // Both of the stage's folders land in this test's temp dir, never at the host's root.
    runHere(pick.replace(/\/(runtime-)?manifests\b/g, (_, runtime?: string) => (runtime ? `${out}-runtime` : out)));
    // @codefleet/sqlite's better-sqlite3 wrapper (a `file:` dependency, two files) too: npm ci
    // reads it from the lock even where it skips it.
    const node20 = readdirSync(join(root, 'packages/sqlite/node20')).map((f) => `packages/sqlite/node20/${f}`);
    expect(files(out)).toEqual(
      [
        '.npmrc',
        'package-lock.json',
        'package.json',
        ...workspaceDirs().map((d) => `${d}/package.json`),
        ...node20,
      ].sort(),
    );
  });

  it('the runtime stage holds production dependencies only, the built output, and no sources', () => {
    expect(commandsOf(runtime, 'RUN').some((run) => /\bnpm (ci|prune) [^&]*--omit=dev\b/.test(run))).toBe(true);
    const copies = [...commandsOf(runtime, 'COPY'), ...commandsOf(runtime, 'ADD')];
    for (const copy of copies) expect(copy).toMatch(/^--from=(manifests|build) /);
    expect(copies).toContain('--from=build /out/ ./');
  });

  it('every module the entrypoint reaches resolves in the runtime stage: built files, workspaces, and packages `npm ci --omit=dev` installs', () => {
    // The build stage's command that assembles /out, run here on this (built) checkout.
    const build = all.find((s) => s.name === 'build')!;
    const assemble = commandsOf(build, 'RUN').find((run) => run.includes('/out'))!;
    const out = join(dir.path, 'out');
    runHere(assemble.slice(assemble.indexOf('mkdir /out')).replaceAll('/out', out));

    // What `npm ci --omit=dev` installs: npm's own answer for this lockfile and manifests.
    // Its exit status is ignored: a package installed here for another branch (extraneous) is not this tree's problem.
    const listing = spawnSync('npm', ['ls', '--omit=dev', '--all', '--parseable'], {
      cwd: root,
      encoding: 'utf8',
      maxBuffer: 16 << 20,
    });
    const production = new Set(
      listing.stdout
        .split('\n')
        .filter((line) => line.includes('/node_modules/'))
        .map((line) => relative(root, line)),
    );
    // Test and build tools never ride along (a peer or a harness's dependency once pulled them in).
    for (const tool of ['typescript', 'jest', '@jest/globals', 'ts-jest', 'eslint', 'turbo', 'fauxqs'])
      expect(production).not.toContain(`node_modules/${tool}`);
    const workspaces = new Map(
      workspaceDirs().map((d) => [(JSON.parse(read(`${d}/package.json`)) as { name: string }).name, d]),
    );
    const builtins = new Set(builtinModules);

    const workdir = commandsOf(runtime, 'WORKDIR').at(-1)!;
    const entry = (JSON.parse(commandsOf(runtime, 'ENTRYPOINT')[0]!) as string[]).find(
      (arg) => arg.startsWith(`${workdir}/`) && arg.endsWith('.js'),
    )!;
    const start = join(out, relative(workdir, entry));
    const seen = new Set<string>();
    const queue = [start];
    const problems: string[] = [];
    /** The file a workspace package's export resolves to, in /out. */
    const exported = (dirInRepo: string, subpath: string) => {
      const manifest = JSON.parse(read(`${dirInRepo}/package.json`)) as { exports: Record<string, { import: string }> };
      const target = manifest.exports[subpath === '' ? '.' : `./${subpath}`]?.import;
      return target === undefined ? undefined : join(out, dirInRepo, target);
    };
    while (queue.length > 0) {
      const file = queue.pop()!;
      if (seen.has(file)) continue;
      seen.add(file);
      if (!existsSync(file)) {
        problems.push(`missing in the image: ${relative(out, file)}`);
        continue;
      }
      const from = relative(out, file);
      for (const specifier of importsOf(readFileSync(file, 'utf8'))) {
        if (specifier.startsWith('node:') || builtins.has(specifier)) continue;
        if (specifier.startsWith('.')) {
          queue.push(resolve(dirname(file), specifier));
          continue;
        }
        const parts = specifier.split('/');
        const name = specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
        const subpath = parts.slice(specifier.startsWith('@') ? 2 : 1).join('/');
        const workspace = workspaces.get(name);
        if (workspace !== undefined) {
          const target = exported(workspace, subpath);
          if (target === undefined) problems.push(`${from}: ${specifier} is not exported`);
          else queue.push(target);
          continue;
        }
        // Node looks in the importing workspace's node_modules, then the root's.
        const owner = [...workspaces.values()].find((d) => from.startsWith(`${d}/`));
        const candidates = [...(owner ? [`${owner}/node_modules/${name}`] : []), `node_modules/${name}`];
        if (!candidates.some((c) => production.has(c)))
          problems.push(`${from}: ${specifier} is not a production dependency`);
      }
    }
    expect(problems).toEqual([]);
    // The walk went through the worker, the pipeline and the producers, not just the bin file.
    const reached = [...seen].map((f) => relative(out, f));
    for (const dist of [
      'packages/worker/dist/index.js',
      'packages/pipeline/dist/index.js',
      'packages/github/dist/index.js',
      'packages/agents/dist/index.js',
    ]) {
      expect(reached).toContain(dist);
    }
  });
});
