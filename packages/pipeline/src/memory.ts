import { agentGitOptions } from '@codefleet/agents';
import { isMemoryFile, memoryDir } from '@codefleet/core';
import { captureProcess } from '@codefleet/process';
import { summarizeMemory, type MemoryFile, type MemorySummary } from './memory-summary.js';

/** At most this many memory files are read, each at most this many bytes: the repository is attacker data. */
const maxFiles = 50;
const maxFileBytes = 64 * 1024;

/** How {@link readMemoryBank} runs git. */
export interface MemoryReadOptions {
  /** The git binary the worker resolved at start; default `git`. */
  gitPath?: string | undefined;
  /** git's environment (PATH at least); nothing is inherited. */
  env?: Readonly<Record<string, string>>;
}

/**
 * The memory bank (`.codefleet/memory/*.md`) as the base commit `baseSha` holds it, read
 * from git's objects in the copy at `dir` and summarized within `maxChars` (see
 * `summarizeMemory`). From the base, not the working tree: a retry that starts from the
 * work branch an earlier attempt pushed must not take that attempt's unreviewed notes as
 * the repository's. Only regular files (no symlinks) with plain names directly in the
 * directory, each at most 64 KiB and without NUL bytes, at most 50; newest first by the
 * last commit that touched each. Nothing there, or git cannot tell: an empty summary.
 */
export async function readMemoryBank(
  dir: string,
  baseSha: string,
  maxChars: number,
  options: MemoryReadOptions = {},
): Promise<MemorySummary> {
  if (maxChars <= 0 || !/^[0-9a-f]{40,64}$/.test(baseSha)) return summarizeMemory([], 0);
  const run = (args: readonly string[]) =>
    captureProcess([options.gitPath ?? 'git', ...agentGitOptions, ...args], {
      cwd: dir,
      env: { ...(options.env ?? {}), GIT_CONFIG_NOSYSTEM: '1' },
      maxBytes: 4 * 1024 * 1024,
    }).catch(() => undefined);
  const listing = await run(['ls-tree', '-l', '-z', baseSha, '--', `${memoryDir}/`]);
  if (listing?.exitCode !== 0) return summarizeMemory([], maxChars);
  const entries = String(listing.stdout)
    .split('\0')
    .map((entry) => /^100644 blob ([0-9a-f]+) +(\d+)\t(.+)$/s.exec(entry))
    .filter((m): m is RegExpExecArray => m !== null && isMemoryFile(m[3] ?? '') && Number(m[2]) <= maxFileBytes)
    .slice(0, maxFiles);
  const times = await commitTimes(run, baseSha);
  const files: MemoryFile[] = [];
  for (const [, object, , path] of entries) {
    const blob = await run(['cat-file', 'blob', object!]);
    if (blob?.exitCode !== 0 || blob.stdout.includes('\0')) continue;
    const changedMs = times.get(path!);
    files.push({ path: path!, content: blob.stdout, ...(changedMs === undefined ? {} : { changedMs }) });
  }
  return summarizeMemory(files, maxChars);
}

// The time of the newest commit (up to the base) that touched each memory file.
async function commitTimes(
  run: (args: readonly string[]) => Promise<{ exitCode: number | null; stdout: string } | undefined>,
  baseSha: string,
): Promise<Map<string, number>> {
  const times = new Map<string, number>();
  const result = await run([
    'log',
    '-n',
    '500',
    '--format=%x00%ct',
    '--name-only',
    '--no-renames',
    baseSha,
    '--',
    `:(literal)${memoryDir}/`,
  ]);
  if (result?.exitCode !== 0) return times;
  let current = 0;
  for (const line of String(result.stdout).split('\n')) {
    if (line.startsWith('\0')) current = Number(line.slice(1)) * 1000;
    else if (line !== '' && !times.has(line)) times.set(line, current);
  }
  return times;
}
