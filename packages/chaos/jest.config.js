import { jestConfig } from '../../jest.preset.js';

// One file at a time (jest's default on 2 cores): each chaos run keeps the CPU busy with
// its own fleet, and two at once starve each other's workers of the progress they assert.
export default jestConfig({ maxWorkers: 1 });
