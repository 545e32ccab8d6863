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
import ts from 'typescript';

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
for (const pkg of workspaces) transpile(pkg);

/** Transpiles one workspace's sources into its dist, and removes what no source emits any more. */
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
  console.error(`transpile (${relative(root, pkg) || '.'}): ${message}`);
  process.exit(1);
}
