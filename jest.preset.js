// Shared Jest settings: TypeScript ESM through ts-jest, run under --experimental-vm-modules.
// Type errors are the `typecheck` task's job, so ts-jest only transpiles (isolatedModules).
import { createDefaultEsmPreset } from 'ts-jest';

/** @returns {import('jest').Config} */
export function jestConfig(overrides = {}) {
  return {
    ...createDefaultEsmPreset({ tsconfig: '<rootDir>/tsconfig.json' }),
    testEnvironment: 'node',
    testMatch: ['<rootDir>/{src,test}/**/*.test.ts'],
    testPathIgnorePatterns: ['/node_modules/', '/dist/'],
    moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
    testTimeout: 120_000,
    ...overrides,
  };
}
