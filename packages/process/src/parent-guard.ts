/**
 * The guard, run as `node -e <guardSource> <parent pid> <NODE_OPTIONS as JSON> <file> <args...>`
 * at the head of a guarded child's process group. It starts the real program in the same
 * group and kills the whole group (and, on Linux, the processes that left it but carry the
 * run's mark) as soon as the parent is gone: a worker killed with
 * SIGKILL cannot stop its agent itself, and an orphaned agent would keep writing into a
 * working copy the next job reuses. Polling the parent works the same on Linux and macOS,
 * which have no common parent-death signal.
 *
 * The program's exit facts go back on fd 3 as one JSON line (`{code, signal}` or
 * `{spawnError}`), so nothing is lost in translation (a child killed by SIGPIPE, which
 * Node ignores, is still reported as killed by SIGPIPE). The guard ignores SIGTERM, SIGINT
 * and SIGHUP: the child gets the group's signal anyway and the guard waits for it, so
 * the caller's kill grace applies before its SIGKILL. `NODE_OPTIONS` is meant for the
 * program, not the guard: it arrives as an argument and is put back for the child only.
 */
const guardSource = `
const { spawn } = require('node:child_process');
const { writeSync } = require('node:fs');
const pollMs = 250;
const [parentPid, nodeOptions, file, ...args] = process.argv.slice(1);
const parent = Number(parentPid);
const options = JSON.parse(nodeOptions);
const env = options === null ? process.env : { ...process.env, NODE_OPTIONS: options };
for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(signal, () => {});
const report = (facts) => { try { writeSync(3, JSON.stringify(facts) + '\\n'); } catch {} };
const child = spawn(file, args, { stdio: 'inherit', env });
// What left the group (setsid, a daemon) still carries the run's mark: Linux finds it in /proc.
const killStrays = () => {
  const mark = process.env.CODEFLEET_RUN_MARK;
  if (process.platform !== 'linux' || !mark) return;
  const fs = require('node:fs');
  const needle = Buffer.from('CODEFLEET_RUN_MARK=' + mark + '\\0');
  for (const name of fs.readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(name) || Number(name) === process.pid) continue;
    try { if (fs.readFileSync('/proc/' + name + '/environ').includes(needle)) process.kill(Number(name), 'SIGKILL'); } catch {}
  }
};
const killGroup = () => { killStrays(); try { process.kill(-process.pid, 'SIGKILL'); } catch { process.exit(137); } };
const parentGone = () => {
  if (process.ppid !== parent) return true;
  try { process.kill(parent, 0); return false; } catch (error) { return error.code === 'ESRCH'; }
};
const watch = setInterval(() => { if (parentGone()) killGroup(); }, pollMs);
child.on('error', (error) => { report({ spawnError: error.message }); process.exit(127); });
child.on('exit', (code, signal) => {
  clearInterval(watch);
  report({ code, signal });
  process.exit(code ?? 128);
});
`;

/** What the guard reports about the program it ran. */
export type GuardReport = { code: number | null; signal: string | null } | { spawnError: string };

/** Parses the guard's fd 3 line; undefined when there is none (the guard itself was killed). */
export function parseGuardReport(text: string): GuardReport | undefined {
  const line = text.split('\n').find((l) => l.trim() !== '');
  if (line === undefined) return undefined;
  try {
    const value = JSON.parse(line) as Record<string, unknown>;
    if (typeof value.spawnError === 'string') return { spawnError: value.spawnError };
    const code = typeof value.code === 'number' ? value.code : null;
    const signal = typeof value.signal === 'string' ? value.signal : null;
    return { code, signal };
  } catch {
    return undefined;
  }
}

/** The guarded argument vector for `argv`, run by this Node binary; `nodeOptions` goes to the program. */
export function guardedArgv(
  argv: readonly string[],
  nodeOptions: string | undefined,
  parentPid: number = process.pid,
): string[] {
  // `--no-warnings`: the guard's stderr is the program's; a warning of its own (Node 22's
  // about NODE_USE_ENV_PROXY in a run's environment) would read as the program's output.
  return [
    process.execPath,
    '--no-warnings',
    '-e',
    guardSource,
    String(parentPid),
    JSON.stringify(nodeOptions ?? null),
    ...argv,
  ];
}
