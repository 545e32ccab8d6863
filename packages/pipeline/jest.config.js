import { jestConfig } from '../../jest.preset.js';

// Whole jobs run here (several agent runs, sandboxed checks, installs): the timeout guards
// against a hang, and must not fail a slow but correct run on a loaded 2-core machine.
export default jestConfig({ testTimeout: 180_000 });
