/**
 * The demo's scripted agent: NOT a language model. It edits the sample repository the way
 * a coding agent would, and its first implementation has a bug that only the tests of
 * pass 2 reveal, so the demo shows the inner fix loop: implement → tests fail → the
 * failure is fed back → fixed. Run by the `script` agent adapter as
 * `node demo-agent.js --workdir <dir> --pass <implement|test> --attempt <n> [--feedback-file <f>]`.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i] ?? '', process.argv[i + 1] ?? '');
const workdir = args.get('--workdir') ?? process.cwd();
const pass = args.get('--pass');
const attempt = Number(args.get('--attempt') ?? '1');
const feedbackFile = args.get('--feedback-file');
const feedback = feedbackFile && existsSync(feedbackFile) ? readFileSync(feedbackFile, 'utf8') : '';
const calc = join(workdir, 'src', 'calc.js');

const buggy = `
/** Multiplies two numbers by repeated addition. */
export function multiply(a, b) {
  let result = 0;
  for (let i = 0; i < b; i += 1) result += a;
  return result;
}
`;
const fixed = `
/** Multiplies two numbers. */
export function multiply(a, b) {
  return a * b;
}
`;
const tests = `import { test } from 'node:test';
import assert from 'node:assert/strict';
import { multiply } from '../src/calc.js';

test('multiplies two positive numbers', () => {
  assert.equal(multiply(6, 7), 42);
});

test('multiplies by a negative number', () => {
  assert.equal(multiply(4, -2), -8);
});

test('multiplies by zero', () => {
  assert.equal(multiply(5, 0), 0);
});
`;

const say = (text: string) => console.log(`demo agent (scripted) · pass ${pass} · attempt ${attempt}: ${text}`);
const source = readFileSync(calc, 'utf8');
if (pass === 'implement') {
  if (!source.includes('function multiply')) writeFileSync(calc, source + buggy);
  say('added multiply() to src/calc.js (with a bug the tests will find)');
} else if (pass === 'test' && attempt === 1) {
  writeFileSync(join(workdir, 'test', 'multiply.test.js'), tests);
  say('wrote test/multiply.test.js');
} else if (/negative|multiply/i.test(feedback)) {
  writeFileSync(calc, source.replace(buggy, fixed));
  say('read the failing test in the feedback and fixed multiply() for negative numbers');
} else {
  say('nothing to do');
}
