import { jestConfig } from '../../jest.preset.js';

// Whole jobs run here (several agent runs, sandboxed checks, installs): the timeout guards
// against a hang, and must not fail a slow but correct run on a loaded 2-core machine.
// Files run side by side (jest's default on 2 cores is one at a time): this package's
// tests mostly wait on real processes (a file used about a third of a core), and this
// package is the suite's longest chain (see the slowest files `npm test` prints).
export default jestConfig({ testTimeout: 600_000, maxWorkers: 5 });
