import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { waitFor } from '@codefleet/testkit';
import type { Harness } from './harness.js';

// An agent body that says it started, then waits in pass 1 until the test writes `go`
// beside it: the test acts while the agent is running, whatever the machine's speed.
export const pauseUntilGo = `
const here = path.dirname(counterFile);
if (pass === 'implement') {
  fs.writeFileSync(path.join(here, 'started'), '');
  while (!fs.existsSync(path.join(here, 'go'))) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50);
}`;

export const agentStarted = (harness: Harness) =>
  waitFor(() => existsSync(join(dirname(harness.agentModule()), 'started')), { what: 'the agent to start' });
