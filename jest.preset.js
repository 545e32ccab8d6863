// Shared Jest settings: TypeScript ESM through ts-jest, run under --experimental-vm-modules.
// Type errors are the `typecheck` task's job, so ts-jest only transpiles (isolatedModules).
import { createDefaultEsmPreset } from 'ts-jest';

// A test's timeout catches a hang; it is not a speed limit. CI machines run three Node lines
// under other load, where correct tests took four times as long as on a quiet machine, so
// the timeouts are far above what any test needs there.
const defaultTestTimeoutMs = 300_000;

/** @returns {import('jest').Config} */
export function jestConfig(overrides = {}) {
  const testTimeout = overrides.testTimeout ?? defaultTestTimeoutMs;
  return {
    ...createDefaultEsmPreset({ tsconfig: '<rootDir>/tsconfig.json' }),
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
