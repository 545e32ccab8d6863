/**
 * Running a real agent CLI inside codefleet's bubblewrap sandbox, as the pipeline does: a
 * sandbox whose network is `public` plus `allow` (a test names its loopback stand-in there,
 * or nothing), and the request's `runner` and `isolated` set as the job runner sets them.
 */
import { fileURLToPath } from 'node:url';
import type { ProcessResult } from '@codefleet/process';
import { openSandbox, SandboxUnavailableError, type Sandbox } from '@codefleet/sandbox';
import { createTempDir } from '@codefleet/testkit';
import type { AgentRunRequest } from '../src/index.js';

/** Where the CLIs under test live; the sandbox shows only system directories besides. */
const nodeModules = fileURLToPath(new URL('../../../node_modules', import.meta.url));

/**
 * A bwrap sandbox with its run root in a new temporary directory (its removal pushed on
 * `cleanups`), or undefined, said on the console rather than hidden, where this host cannot
 * make one.
 */
export async function openBwrap(allow: string[], cleanups: (() => Promise<void>)[]): Promise<Sandbox | undefined> {
  const data = await createTempDir('agents-bwrap');
  cleanups.push(() => data.dispose());
  try {
    return await openSandbox(
      {
        mode: 'bwrap',
        network: { mode: 'public', allow },
        readPaths: [nodeModules],
        hiddenPaths: [],
        runRoot: data.path,
      },
      { platform: process.platform, path: process.env.PATH ?? '/usr/bin:/bin' },
    );
  } catch (error) {
    if (!(error instanceof SandboxUnavailableError)) throw error;
    console.warn(`skipped: ${error.message}`);
    return undefined;
  }
}

/**
 * The request fields the pipeline's job runner sets: the sandbox runs the CLI with the
 * working copy as its one writable path. Each sandbox result (which carries the proxy's
 * `networkRefusals`, which the agent's result does not) is pushed on `results`.
 */
export function sandboxed(
  sandbox: Sandbox,
  workdir: string,
  results: ProcessResult[],
): Pick<AgentRunRequest, 'isolated' | 'runner'> {
  return {
    isolated: true,
    runner: async (argv, options) => {
      const { dieWithParent: _guarded, ...rest } = options;
      const result = await sandbox.run(argv, { ...rest, writable: [workdir] });
      results.push(result);
      return result;
    },
  };
}
