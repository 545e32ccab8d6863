import { lstat, open, readdir, realpath } from 'node:fs/promises';
import { join } from 'node:path';
import { agentGitOptions } from '@codefleet/agents';
import { isMemoryFile, memoryDir, summarizeMemory, type MemoryFile, type MemorySummary } from '@codefleet/core';
import { captureProcess } from '@codefleet/process';

/** At most this many memory files are read, each at most this many bytes: the repository is attacker data. */
const maxFiles = 50;
const maxFileBytes = 64 * 1024;

/**
 * The memory bank of the copy at `dir` (`.codefleet/memory/*.md`), summarized within
 * `maxChars` (see `summarizeMemory`). Read before any agent runs, so it is what the
 * repository holds: only regular files with plain names directly in the directory (no
 * symlinks, no directory that leads out of the copy), each bounded, without NUL bytes.
 * Newest first by the last commit that touched each file (git, one call), which a checkout's
 * file times cannot tell. Missing directory or nothing readable: an empty summary.
 */
export async function readMemoryBank(dir: string, maxChars: number, options: { gitPath?: string | undefined; env?: Readonly<Record<string, string>> } = {}): Promise<MemorySummary> {
  if (maxChars <= 0) return summarizeMemory([], 0);
  const root = await realpath(dir);
  const bank = join(root, memoryDir);
  const info = await lstat(bank).catch(() => undefined);
  if (!info?.isDirectory() || (await realpath(bank).catch(() => '')) !== bank) return summarizeMemory([], maxChars);
  const names = (await readdir(bank).catch(() => [] as string[])).map((name) => `${memoryDir}/${name}`).filter(isMemoryFile).sort().slice(0, maxFiles);
  const times = await commitTimes(root, options);
  const files: MemoryFile[] = [];
  for (const path of names) {
    const content = await readSmallFile(join(root, path));
    if (content === undefined) continue;
    const changedMs = times.get(path);
    files.push({ path, content, ...(changedMs === undefined ? {} : { changedMs }) });
  }
  return summarizeMemory(files, maxChars);
}

async function readSmallFile(path: string): Promise<string | undefined> {
  const info = await lstat(path).catch(() => undefined);
  if (!info?.isFile() || info.size > maxFileBytes) return undefined;
  const handle = await open(path, 'r').catch(() => undefined);
  if (!handle) return undefined;
  try {
    const buffer = await handle.readFile();
    if (buffer.length > maxFileBytes || buffer.includes(0)) return undefined;
    return buffer.toString('utf8');
  } finally {
    await handle.close();
  }
}

// The time of the newest commit that touched each memory file; none when git cannot tell.
async function commitTimes(root: string, options: { gitPath?: string | undefined; env?: Readonly<Record<string, string>> }): Promise<Map<string, number>> {
  const times = new Map<string, number>();
  const result = await captureProcess(
    [options.gitPath ?? 'git', ...agentGitOptions, 'log', '-n', '500', '--format=%x00%ct', '--name-only', '--no-renames', '--', `:(literal)${memoryDir}/`],
    { cwd: root, env: { ...(options.env ?? {}), GIT_CONFIG_NOSYSTEM: '1' }, maxBytes: 1024 * 1024 },
  ).catch(() => undefined);
  if (result?.exitCode !== 0) return times;
  let current = 0;
  for (const line of String(result.stdout).split('\n')) {
    if (line.startsWith('\0')) current = Number(line.slice(1)) * 1000;
    else if (line !== '' && !times.has(line)) times.set(line, current);
  }
  return times;
}
