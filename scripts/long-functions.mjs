#!/usr/bin/env node
// Lists the functions of runtime code longer than a limit (default 80 lines), longest first:
// function declarations and expressions, arrow functions, methods, accessors, constructors.
// A nested function counts on its own and inside its parent.
//
// A long function may stay long when it is genuinely one thing (a table, a state machine):
// its doc comment then says why, in a sentence starting "Long on purpose:". Those are listed
// as `explained`; `--check` exits 1 when any listed function is not.
//
//   node scripts/long-functions.mjs [--max 80] [--check]
//
// Runtime code: `packages/*/src` and `apps/*/src`, without tests, `src/bench` and the two
// packages that only tests and benchmarks use (testkit, bench). A file under `src/` that
// imports `@jest/globals` (a port's conformance suite) is test code too, and is skipped.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = fileURLToPath(new URL('..', import.meta.url));
const notRuntimePackages = new Set(['packages/testkit', 'packages/bench']);
const explainedMarker = /long on purpose:/i;

function parseArgs(argv) {
  const args = { max: 80, check: false };
  for (let i = 0; i < argv.length; i += 1) {
    if (argv[i] === '--check') args.check = true;
    else if (argv[i] === '--max') args.max = Number(argv[++i]);
    else throw new Error(`unknown argument ${argv[i]}; usage: long-functions.mjs [--max N] [--check]`);
  }
  if (!Number.isInteger(args.max) || args.max < 1) throw new Error('--max takes a positive whole number of lines');
  return args;
}

function runtimeSourceFiles() {
  const files = [];
  for (const group of ['packages', 'apps']) {
    for (const name of readdirSync(join(root, group))) {
      if (notRuntimePackages.has(`${group}/${name}`)) continue;
      const src = join(root, group, name, 'src');
      try {
        walk(src, files);
      } catch (error) {
        if (error.code !== 'ENOENT') throw error;
      }
    }
  }
  return files.sort();
}

function walk(dir, out) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'bench' && entry.name !== 'test' && entry.name !== '__tests__') walk(path, out);
    } else if (/\.tsx?$/.test(entry.name) && !/\.(test|spec|d)\.tsx?$/.test(entry.name)) {
      out.push(path);
    }
  }
}

const isFunction = (node) =>
  ts.isFunctionDeclaration(node) ||
  ts.isFunctionExpression(node) ||
  ts.isArrowFunction(node) ||
  ts.isMethodDeclaration(node) ||
  ts.isConstructorDeclaration(node) ||
  ts.isGetAccessorDeclaration(node) ||
  ts.isSetAccessorDeclaration(node);

/** The node a doc comment of `fn` sits on: the statement or property that holds it. */
function docHost(fn) {
  const parent = fn.parent;
  if (ts.isVariableDeclaration(parent)) return parent.parent.parent;
  if (ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent)) return parent;
  return fn;
}

function ownName(fn, source) {
  if (fn.name !== undefined) return fn.name.getText(source);
  if (ts.isConstructorDeclaration(fn)) return 'constructor';
  const parent = fn.parent;
  if ((ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) && parent.name !== undefined)
    return parent.name.getText(source);
  if (ts.isCallExpression(parent)) {
    const callee = parent.expression.getText(source).replace(/\s+/g, ' ');
    const first = parent.arguments[0];
    const label =
      first !== undefined && first !== fn && ts.isStringLiteralLike(first) ? `(${first.getText(source)})` : '';
    return `${callee.length > 40 ? `${callee.slice(0, 40)}…` : callee}${label} callback`;
  }
  return '(anonymous)';
}

function longFunctions(file, max) {
  const text = readFileSync(file, 'utf8');
  if (/from '@jest\/globals'/.test(text)) return [];
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found = [];
  const visit = (node, names) => {
    let inner = names;
    if (isFunction(node) && node.body !== undefined) {
      inner = [...names, ownName(node, source)];
      const start = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const end = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      const lines = end - start + 1;
      if (lines > max) {
        const host = docHost(node);
        const docs = (ts.getLeadingCommentRanges(text, host.getFullStart()) ?? [])
          .map((range) => text.slice(range.pos, range.end))
          .filter((comment) => comment.startsWith('/**'));
        found.push({
          file: relative(root, file),
          line: start + 1,
          lines,
          name: inner.join(' > '),
          explained: docs.some((doc) => explainedMarker.test(doc)),
        });
      }
    }
    ts.forEachChild(node, (child) => visit(child, inner));
  };
  visit(source, []);
  return found;
}

const args = parseArgs(process.argv.slice(2));
const found = runtimeSourceFiles()
  .flatMap((file) => longFunctions(file, args.max))
  .sort((a, b) => b.lines - a.lines || a.file.localeCompare(b.file) || a.line - b.line);
for (const f of found) {
  console.log(
    `${String(f.lines).padStart(4)}  ${f.explained ? 'explained' : '         '}  ${f.file}:${f.line}  ${f.name}`,
  );
}
const unexplained = found.filter((f) => !f.explained).length;
console.log(
  `${found.length} functions over ${args.max} lines, ${unexplained} without a "Long on purpose:" doc comment`,
);
if (args.check && unexplained > 0) process.exitCode = 1;
