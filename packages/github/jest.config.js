import { jestConfig } from '../../jest.preset.js';

// Files run side by side (jest's default on 2 cores is one at a time): this package's
// tests mostly wait on real processes, and run one by one they were the suite's longest
// chain (see the slowest files `npm test` prints).
export default jestConfig({ maxWorkers: 2 });
