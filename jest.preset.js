// Shared Jest settings: TypeScript ESM through scripts/jest-transform.mjs (TypeScript's
// transpileModule), run under --experimental-vm-modules. Type errors are the `typecheck`
// task's job, so the tests only transpile.
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(fileURLToPath(import.meta.url));
const transformer = join(root, 'scripts', 'jest-transform.mjs');

// A test's timeout catches a hang; it is not a speed limit. CI machines run three Node lines
// under other load, where correct tests took four times as long as on a quiet machine, so
// the timeouts are far above what any test needs there.
const defaultTestTimeoutMs = 300_000;

/** @returns {import('jest').Config} */
export function jestConfig(overrides = {}) {
  const testTimeout = overrides.testTimeout ?? defaultTestTimeoutMs;
  return {
    extensionsToTreatAsEsm: ['.ts'],
    transform: { '^.+\\.m?tsx?$': transformer },
    // The name of the package's transform cache (jest derives one from the checkout's path):
    // CI runs its three Node lines in three checkouts, and with a name that is the same in
    // each, the second and third reuse what the first transpiled (the key is the content).
    ...cacheName(),
    testEnvironment: 'node',
    testMatch: ['<rootDir>/{src,test}/**/*.test.ts'],
    testPathIgnorePatterns: ['/node_modules/', '/dist/'],
    moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
    ...overrides,
    testTimeout,
    // testkit's waitFor reads it: a wait with no deadline of its own gives up just before the
    // test would, so it fails saying what it waited for.
    globals: { __codefleetTestTimeoutMs: testTimeout },
  };
}

/** `id: codefleet-<group>-<package>` for a workspace jest runs in, else nothing (jest's own). */
function cacheName() {
  const workspace = relative(root, process.cwd());
  if (workspace === '' || workspace.startsWith('..') || workspace.split(sep).length !== 2) return {};
  return { id: `codefleet-${workspace.split(sep).join('-')}` };
}
