import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { appendFile, mkdir, readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { LoadedConfig } from '@codefleet/config';
import { formatSuite, mineCommits, parseSuite, type MineProgress } from '@codefleet/eval';
import { runProcess } from '@codefleet/process';
import type { Io } from '../program/context.js';
import { gitEnvFrom } from '../runtime.js';

/** Options of `codefleet eval mine`. */
export interface MineCliOptions {
  repo: string;
  out: string;
  name?: string;
  ref?: string;
  since?: Date;
  max?: number;
  maxCommits?: number;
  holdout?: number;
}

/** A clone of a remote kept for mining, fetched again at each run; its deadline. */
const cloneTimeoutMs = 30 * 60_000;

// A local path is read in place; a URL is cloned (bare) into the data directory once, then fetched.
async function historyOf(config: LoadedConfig, repo: string, io: Io, env: Record<string, string>): Promise<string> {
  const local = resolve(io.cwd, repo);
  if (existsSync(local)) return local;
  const dir = join(
    config.config.data_dir,
    'eval',
    'repos',
    createHash('sha256').update(repo).digest('hex').slice(0, 16),
  );
  await mkdir(join(dir, '..'), { recursive: true });
  const argv = existsSync(dir)
    ? ['git', '-C', dir, 'fetch', '--quiet', '--prune', 'origin', '+refs/heads/*:refs/heads/*']
    : ['git', 'clone', '--quiet', '--bare', '--', repo, dir];
  io.err(`eval mine: ${existsSync(dir) ? 'fetching' : 'cloning'} ${repo}`);
  const run = await runProcess(argv, { cwd: join(dir, '..'), env, timeoutMs: cloneTimeoutMs });
  if (run.exitCode !== 0)
    throw new Error(`could not read ${repo}: ${run.spawnError ?? run.outputTail.trim().split('\n').at(-1) ?? ''}`);
  return dir;
}

function progressLine(p: MineProgress): string {
  const skipped = Object.entries(p.skipped)
    .map(([reason, n]) => `${n} ${reason}`)
    .join(', ');
  return `eval mine: read ${p.read} of ${p.total} commits; ${p.mined} tasks${skipped === '' ? '' : `; passed over: ${skipped}`}`;
}

/**
 * `codefleet eval mine`: appends the tasks mined from `--repo`'s history to `--out`, skipping
 * those already there (a stopped run resumes). Resolves the exit code.
 */
export async function evalMine(loaded: LoadedConfig, options: MineCliOptions, io: Io): Promise<number> {
  const out = resolve(io.cwd, options.out);
  // Read before anything is fetched: a suite that does not parse is not appended to.
  const done = existsSync(out) ? parseSuite(await readFile(out, 'utf8')).instances.map((i) => i.instance_id) : [];
  const env = { ...gitEnvFrom(loaded.env), PATH: loaded.env.PATH ?? '' };
  const gitDir = await historyOf(loaded, options.repo, io, env);
  let lastLine = 0;
  let added = 0;
  const progress = await mineCommits({
    gitDir,
    repo: options.name ?? options.repo,
    env,
    done: new Set(done),
    ...(options.ref === undefined ? {} : { ref: options.ref }),
    ...(options.since === undefined ? {} : { since: options.since }),
    ...(options.max === undefined ? {} : { max: options.max }),
    ...(options.maxCommits === undefined ? {} : { maxCommits: options.maxCommits }),
    ...(options.holdout === undefined ? {} : { holdoutShare: options.holdout }),
    onInstance: async (instance) => {
      await appendFile(out, formatSuite([instance]));
      added += 1;
    },
    onProgress: (p) => {
      // A line every 100 commits read, and the last one: progress without flooding a log.
      if (p.read - lastLine >= 100 || p.read === p.total) {
        lastLine = p.read;
        io.err(progressLine(p));
      }
    },
  });
  io.out(`${progressLine(progress)} (${added} new) in ${out}`);
  return 0;
}
