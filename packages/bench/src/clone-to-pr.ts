/**
 * Figure 4: clone → first pull request, as a newcomer does it: `git clone` of this
 * repository's HEAD into a temp dir (a local clone), `npm ci` (timed, but outside the
 * target: it depends on the network and npm's cache), then `npm run demo`, build included,
 * timed to its end. Nothing is shared with the checkout the bench runs from but git objects
 * and npm's cache (its default place, as a newcomer's machine has it after `npm ci`).
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

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

/** Runs `argv` in `cwd`; resolves its wall time and the tail of its output, rejects on a non-zero exit. */
function timed(argv: string[], cwd: string, env: Record<string, string>): Promise<{ ms: number; tail: string }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0] ?? '', argv.slice(1), { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const keep = (chunk: Buffer) => {
      output = (output + chunk.toString('utf8')).slice(-20_000);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.on('error', reject);
    child.on('exit', (code) => {
      const tail = output.trimEnd();
      if (code === 0) resolve({ ms: performance.now() - started, tail });
      else reject(new Error(`${argv.join(' ')} exited ${String(code)}:\n${tail.split('\n').slice(-30).join('\n')}`));
    });
  });
}

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
    const cloned = await timed(['git', 'clone', '--quiet', checkoutRoot, clone], dir, env);
    options.say(`  clone: ${(cloned.ms / 1000).toFixed(1)} s; npm ci ...`);
    const ci = await timed(['npm', 'ci', '--no-audit', '--no-fund'], clone, env);
    options.say(`  npm ci: ${(ci.ms / 1000).toFixed(1)} s; npm run demo ...`);
    const demo = await timed(['npm', 'run', 'demo'], clone, env);
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
