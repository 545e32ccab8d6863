/**
 * Figure 4: clone → first pull request, as a newcomer does it: `git clone` of this
 * repository's HEAD into a temp dir (a local clone), `npm ci` (timed, but outside the
 * target: it depends on the network and npm's cache), then `npm run demo`, build included,
 * timed to its end. Nothing is shared with the checkout the bench runs from but git objects
 * and npm's cache (its default place, as a newcomer's machine has it after `npm ci`).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runToExit } from './codefleet-process.js';

/** What figure 4 measured. */
export interface CloneToPr {
  cloneMs: number;
  npmCiMs: number;
  demoMs: number;
  /** The demo's last line: whether it opened its PR. */
  demoVerdict: string;
  /** turbo's summary of the demo's build (`Cached: 0 cached, 17 total`, its time): proof it built from scratch. */
  build: string;
}

/** This checkout's root. */
const checkoutRoot = fileURLToPath(new URL('../../../', import.meta.url));

export async function measureCloneToPr(options: {
  root: string;
  hostEnv: Record<string, string>;
  say(line: string): void;
}): Promise<CloneToPr> {
  const dir = await mkdtemp(join(options.root, 'clone-'));
  const clone = join(dir, 'codefleet');
  // What `npm run bench` itself set (npm_config_*, npm_lifecycle_*) is not a newcomer's.
  const env = Object.fromEntries(
    Object.entries(options.hostEnv).filter(([name]) => !/^npm_/i.test(name) && !/^TURBO_/.test(name)),
  );
  env.TURBO_TELEMETRY_DISABLED = '1';
  try {
    const cloned = await runToExit(['git', 'clone', '--quiet', checkoutRoot, clone], dir, env);
    options.say(`  clone: ${(cloned.ms / 1000).toFixed(1)} s; npm ci ...`);
    const ci = await runToExit(['npm', 'ci', '--no-audit', '--no-fund'], clone, env);
    options.say(`  npm ci: ${(ci.ms / 1000).toFixed(1)} s; npm run demo ...`);
    const demo = await runToExit(['npm', 'run', 'demo'], clone, env);
    const verdict =
      demo.tail
        .split('\n')
        .reverse()
        .find((line) => /^demo (passed|FAILED)/.test(line)) ??
      demo.tail.split('\n').at(-1) ??
      '';
    const summary = (label: string) =>
      demo.tail
        .split('\n')
        .find((line) => line.trim().startsWith(`${label}:`))
        ?.trim();
    const build =
      [summary('Cached'), summary('Time')].filter((line) => line !== undefined).join(', ') || 'no turbo summary found';
    return { cloneMs: cloned.ms, npmCiMs: ci.ms, demoMs: demo.ms, demoVerdict: verdict, build };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
