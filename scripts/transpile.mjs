#!/usr/bin/env node
// `npm run build`: transpiles each workspace's src/**/*.ts (tests excluded) to dist/**/*.js
// with source maps, one file at a time and without type-checking, which takes seconds where
// `tsc` took minutes for the whole tree. That is sound because every package compiles with
// `isolatedModules` and `verbatimModuleSyntax`: each file's JavaScript depends on that file
// alone. Type-checking is the `typecheck` script's job (tsconfig.check.json).
//
// Usage: `node scripts/transpile.mjs` from the root builds every workspace in this one
// process (one load of TypeScript: run per workspace through turbo, the build took 75 s of
// CPU, most of it starting npm and TypeScript 28 times); from a workspace folder
// (`node ../../scripts/transpile.mjs`, its `build` script) it builds that workspace.
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

// Real paths: a checkout under a symlink or with spaces in its path is still recognised.
const root = realpathSync(fileURLToPath(new URL('..', import.meta.url)));
const here = realpathSync(process.cwd());
const workspaces =
  here === root
    ? ['packages', 'apps'].flatMap((group) =>
        readdirSync(join(root, group))
          .map((name) => join(root, group, name))
          .filter((dir) => existsSync(join(dir, 'tsconfig.build.json'))),
      )
    : [here];
// The whole tree's build says what it is doing: on a loaded machine or a cold disk it takes
// minutes (TypeScript's load alone is seconds), which in silence reads as a hang. A terminal
// gets one line rewritten per workspace, a log a line at the start and one at the end.
const progress = here === root ? progressLine(process.stderr) : { update() {}, done() {} };
const started = performance.now();
progress.update(`build: loading TypeScript to transpile ${workspaces.length} workspaces (no type-checking)`, true);
const { default: ts } = await import('typescript');
let files = 0;
for (const [i, pkg] of workspaces.entries()) {
  progress.update(`build: ${i + 1}/${workspaces.length} ${relative(root, pkg)}, ${files} files so far`);
  files += transpile(pkg);
}
const seconds = ((performance.now() - started) / 1000).toFixed(1);
progress.done(`build: ${files} files of ${workspaces.length} workspaces transpiled in ${seconds} s`);

/**
 * Progress on `stream`: on a terminal each update replaces the last; elsewhere only the ones
 * marked `always` are written, and `done`'s line.
 */
function progressLine(stream) {
  const live = stream.isTTY === true;
  return {
    update(text, always = false) {
      if (live) stream.write(`\r\x1b[2K${text.slice(0, (stream.columns ?? 80) - 1)}`);
      else if (always) stream.write(`${text}\n`);
    },
    done(text) {
      stream.write(live ? `\r\x1b[2K${text}\n` : `${text}\n`);
    },
  };
}

/**
 * Transpiles one workspace's sources into its dist, and removes what no source emits any more;
 * returns how many sources it transpiled.
 */
function transpile(pkg) {
  const srcDir = join(pkg, 'src');
  const outDir = join(pkg, 'dist');
  const base = ts.getParsedCommandLineOfConfigFile(
    join(pkg, 'tsconfig.build.json'),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => fail(pkg, ts.flattenDiagnosticMessageText(d.messageText, '\n')),
    },
  );
  if (!base) fail(pkg, 'tsconfig.build.json could not be read');
  // Every workspace is `"type": "module"`: under NodeNext each .ts file is an ES module, which
  // transpileModule (it sees no package.json) must be told.
  if (readPackageType(pkg) !== 'module') fail(pkg, 'package.json must say "type": "module"');
  const compilerOptions = {
    ...base.options,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    declaration: false,
    declarationMap: false,
    noEmit: false,
    sourceMap: true,
  };

  const sources = walk(srcDir).filter(
    (file) => file.endsWith('.ts') && !file.endsWith('.d.ts') && !file.endsWith('.test.ts'),
  );
  const written = new Set();
  const problems = [];
  for (const file of sources) {
    const rel = relative(srcDir, file);
    const jsPath = join(outDir, rel.replace(/\.ts$/, '.js'));
    const result = ts.transpileModule(readFileSync(file, 'utf8'), {
      compilerOptions,
      fileName: file,
      reportDiagnostics: true,
    });
    for (const d of result.diagnostics ?? [])
      problems.push(`${relative(pkg, file)}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
    const map = JSON.parse(result.sourceMapText);
    // Paths as tsc writes them: the map names the source relative to the emitted file.
    map.file = jsPath.slice(dirname(jsPath).length + 1);
    map.sources = [relative(dirname(jsPath), file).split(sep).join('/')];
    mkdirSync(dirname(jsPath), { recursive: true });
    writeFileSync(jsPath, result.outputText);
    writeFileSync(`${jsPath}.map`, JSON.stringify(map));
    written.add(jsPath).add(`${jsPath}.map`);
  }
  if (problems.length > 0) fail(pkg, problems.join('\n'));

  // A deleted or renamed source must not leave its old JavaScript importable from dist.
  for (const file of walk(outDir)) {
    if ((file.endsWith('.js') || file.endsWith('.js.map')) && !written.has(file)) rmSync(file);
  }
  return sources.length;
}

function readPackageType(pkg) {
  return JSON.parse(readFileSync(join(pkg, 'package.json'), 'utf8')).type;
}

function walk(dir) {
  let entries;
  try {
    entries = readdirSync(dir);
  } catch {
    return [];
  }
  return entries.flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path) : [path];
  });
}

function fail(pkg, message) {
  progress.done('');
  console.error(`transpile (${relative(root, pkg) || '.'}): ${message}`);
  process.exit(1);
}
