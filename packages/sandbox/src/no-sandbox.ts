import { runProcess } from '@codefleet/process';
import { processOptions } from './sandbox-run.js';
import type { Sandbox } from './types.js';

/** `none`: the program runs as the worker's user, with today's guards only. */
export function createNoSandbox(): Sandbox {
  return {
    mode: 'none',
    remapsPaths: false,
    description:
      "sandbox: none — agents and repository commands run as the worker's user: they can read its HOME, its config and token files, every working copy and mirror, see and signal its processes, and reach every network address it can (no network policy, no limits)",
    run(argv, options) {
      return runProcess(argv, { ...processOptions(options), dieWithParent: true });
    },
  };
}
