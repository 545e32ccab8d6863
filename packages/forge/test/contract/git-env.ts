import { gitTestEnv } from '@codefleet/testkit';

/** What git needs to run under an adapter's harness: the hermetic test config plus PATH to find the binary. */
export function forgeGitEnv(): Record<string, string> {
  return gitTestEnv({ PATH: process.env.PATH ?? '/usr/bin:/bin' });
}
