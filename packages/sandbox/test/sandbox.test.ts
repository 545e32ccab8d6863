import { sandboxConformance } from './conformance.js';

// Every mode this machine has: bwrap (installed by .ci/run and `npm test`) and none.
// sandbox-exec and container are generated and unit-tested (see profiles.test.ts).
sandboxConformance('bwrap');
sandboxConformance('none');
