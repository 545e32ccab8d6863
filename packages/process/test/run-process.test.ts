import { chmod, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import { createTempDir, isAlive, startFixture, waitFor, withTimeoutsUntil } from '@codefleet/testkit';
import { boundTail } from '@codefleet/core';
import { runProcess } from '../src/index.js';

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));
const env = { PATH: process.env.PATH ?? '' };
const pidsOf = (tail: string) => (/pids (\d+) (\d+)/.exec(tail) ?? []).slice(1).map(Number);
/**
 * Timeouts for a run of `family.mjs hang`: what is asserted is that a tree with a grandchild
 * is killed, so a run stopped before the fixture started its grandchild and printed both pids
 * (a loaded machine can take longer than the first) is repeated with the next.
 */
const familyTimeoutsMs = [500, 5_000, 30_000];
const printedPids = (result: { outputTail: string }) => pidsOf(result.outputTail).length === 2;

describe('runProcess', () => {
  it('keeps exit code, duration and the tail of combined output', async () => {
    const result = await runProcess([process.execPath, fixture('chatty.mjs'), '5000'], {
      cwd: '/',
      env: { ...env, FOO: 'bar' },
      tailBytes: 200,
    });
    expect(result.exitCode).toBe(0);
    expect(result.timedOut).toBe(false);
    expect(result.outputTail).toContain('line 5000');
    expect(result.outputTail).toContain('env FOO=bar SECRET=\n');
    expect(result.outputTail).not.toContain('line 1\n');
    expect(Buffer.byteLength(result.outputTail)).toBeLessThanOrEqual(260);
  });

  it('its tail says how many bytes of a long output were dropped, also once a record bounds it again', async () => {
    // 70,000 bytes of two-byte characters, in several pipe chunks: the runner trims its
    // buffer while reading, and the marker must count those bytes too.
    const script = "for (let i = 0; i < 7; i += 1) process.stdout.write('é'.repeat(5000))";
    const result = await runProcess([process.execPath, '-e', script], { cwd: '/', env, tailBytes: 8192 });
    expect(result.exitCode).toBe(0);
    expect(result.outputTail).toBe(`…[truncated 61,808 bytes]\n${'é'.repeat(4096)}`);
    // The run record bounds every tail again (8 KiB by default): the count must survive.
    expect(boundTail(result.outputTail, 8192)).toBe(result.outputTail);
    expect(boundTail(result.outputTail, 1000)).toBe(`…[truncated 69,000 bytes]\n${'é'.repeat(500)}`);
  });

  it('gives what the child writes on fd 3 to onStatus, apart from its output', async () => {
    const status: string[] = [];
    const result = await runProcess(['sh', '-c', 'echo "{ \\"exit-code\\": 0 }" >&3; echo out'], {
      cwd: '/',
      env,
      onStatus: (chunk) => status.push(chunk),
    });
    expect(result.exitCode).toBe(0);
    expect(status.join('')).toBe('{ "exit-code": 0 }\n');
    expect(result.outputTail).toBe('out\n');
  });

  it('passes only the given environment', async () => {
    process.env.GITHUB_TOKEN = 'ghp_should_not_leak_into_children';
    try {
      const result = await runProcess([process.execPath, fixture('chatty.mjs'), '1'], { cwd: '/', env });
      expect(result.outputTail).toContain('SECRET=\n');
    } finally {
      delete process.env.GITHUB_TOKEN;
    }
  });

  it('a timeout kills the whole process group, grandchildren included, and records 124', async () => {
    const { result } = await withTimeoutsUntil(
      familyTimeoutsMs,
      (timeoutMs) =>
        runProcess([process.execPath, fixture('family.mjs'), 'hang'], { cwd: '/', env, timeoutMs, killGraceMs: 200 }),
      printedPids,
    );
    expect(result).toMatchObject({ exitCode: 124, timedOut: true, cancelled: false });
    const [parent, grandchild] = pidsOf(result.outputTail);
    expect(grandchild).toBeGreaterThan(0);
    await waitFor(() => !isAlive(parent!) && !isAlive(grandchild!), { what: 'no survivors' });
  });

  it('kills what a process left behind when it exits by itself', async () => {
    const result = await runProcess([process.execPath, fixture('family.mjs'), 'exit'], { cwd: '/', env });
    expect(result.exitCode).toBe(3);
    expect(result.outputTail).toContain('to stderr');
    const [, grandchild] = pidsOf(result.outputTail);
    await waitFor(() => !isAlive(grandchild!), { what: 'grandchild killed' });
  });

  it('an abort signal stops the process and says so', async () => {
    const controller = new AbortController();
    // Aborted once the tree is up (its pids printed), however long starting took.
    const result = await runProcess([process.execPath, fixture('family.mjs'), 'hang'], {
      cwd: '/',
      env,
      signal: controller.signal,
      killGraceMs: 200,
      onOutput: (chunk) => {
        if (chunk.includes('pids ')) controller.abort();
      },
    });
    expect(result.cancelled).toBe(true);
    expect(result.timedOut).toBe(false);
    expect(result.signal).toBe('SIGTERM');
  });

  it('keeps output that is still in the pipes when the process exits', async () => {
    const result = await runProcess([process.execPath, '-e', "process.stdout.write('x'.repeat(1 << 20) + 'THE END')"], {
      cwd: '/',
      env,
      tailBytes: 100,
    });
    expect(result.exitCode).toBe(0);
    expect(result.outputTail.endsWith('xTHE END')).toBe(true);
  });

  it('a process that left the group holding the pipes does not hold up the result', async () => {
    const result = await runProcess([process.execPath, fixture('escape.mjs')], { cwd: '/', env });
    const holder = Number(/holder (\d+)/.exec(result.outputTail)?.[1]);
    try {
      expect(result.exitCode).toBe(0);
      expect(holder).toBeGreaterThan(0);
      // Out of the group: not killed with it, and still holding the pipes it was given.
      expect(isAlive(holder)).toBe(true);
    } finally {
      if (holder > 0) process.kill(holder, 'SIGKILL');
    }
  });

  (process.platform === 'linux' ? it : it.skip)(
    'dieWithParent: what left the group is killed when the run ends (Linux)',
    async () => {
      const result = await runProcess([process.execPath, fixture('escape.mjs')], {
        cwd: '/',
        env,
        dieWithParent: true,
      });
      const holder = Number(/holder (\d+)/.exec(result.outputTail)?.[1]);
      expect(holder).toBeGreaterThan(0);
      expect(result).toMatchObject({ exitCode: 0, strays: 1 });
      await waitFor(() => !isAlive(holder), { what: 'the stray killed' });
    },
  );

  (process.platform === 'linux' ? it : it.skip)(
    'dieWithParent: what left the group dies with a parent killed by SIGKILL too (Linux)',
    async () => {
      const parent = startFixture(fixture('guarded-escaper.mjs'), [], { env });
      const holder = Number(/holder (\d+)/.exec(await parent.waitForLine(/holder \d+/))?.[1]);
      expect(isAlive(holder)).toBe(true);
      parent.kill('SIGKILL');
      await parent.exited;
      await waitFor(() => !isAlive(holder), { what: 'the stray killed by the guard' });
    },
  );

  it('out of file descriptors: every spawn reports an error, and nothing crashes', async () => {
    // The shell line is the test's own; `ulimit -n` has no other portable spelling.
    const result = await runProcess(
      ['sh', '-c', `ulimit -n 256 && exec "$0" "$1"`, process.execPath, fixture('out-of-fds.mjs')],
      { cwd: '/', env },
    );
    expect(result.exitCode).toBe(0);
    const reported = JSON.parse(result.outputTail.trim().split('\n').at(-1) ?? '{}') as Record<string, unknown>;
    expect(reported.held).toBeGreaterThan(0);
    for (const key of ['plain', 'guarded', 'capture']) expect(reported[key]).toMatch(/EMFILE|ENFILE|could not start/);
  });

  it('reports a missing binary instead of throwing', async () => {
    const result = await runProcess(['definitely-not-a-binary-xyz'], { cwd: '/', env });
    expect(result.exitCode).toBeNull();
    expect(result.spawnError).toMatch(/ENOENT|not found/i);
  });

  it('never runs a shell: metacharacters are plain arguments', async () => {
    const result = await runProcess(['echo', '$(touch /tmp/codefleet-pwned)', '; rm -rf ~', '`id`'], { cwd: '/', env });
    expect(result.outputTail).toBe('$(touch /tmp/codefleet-pwned) ; rm -rf ~ `id`\n');
  });

  it('dieWithParent: a parent killed with SIGKILL takes the child group with it; without it the group is orphaned', async () => {
    for (const mode of ['guarded', 'unguarded'] as const) {
      const parent = startFixture(fixture('guarded-parent.mjs'), [mode], { env });
      const line = await parent.waitForLine(/pids \d+ \d+/);
      const [child, grandchild] = pidsOf(line);
      parent.kill('SIGKILL');
      await parent.exited;
      if (mode === 'guarded') {
        await waitFor(() => !isAlive(child!) && !isAlive(grandchild!), { what: 'the orphaned group killed' });
      } else {
        // The control: without the guard both survive their parent; clean them up here.
        await new Promise((resolve) => setTimeout(resolve, 600));
        expect([isAlive(child!), isAlive(grandchild!)]).toEqual([true, true]);
        process.kill(-child!, 'SIGKILL');
      }
    }
  });

  it('dieWithParent keeps exit codes, signals, timeouts and a missing program as without it', async () => {
    const exit = await runProcess([process.execPath, fixture('family.mjs'), 'exit'], {
      cwd: '/',
      env,
      dieWithParent: true,
    });
    expect(exit).toMatchObject({ exitCode: 3, signal: null, timedOut: false });
    expect(exit.outputTail).toContain('to stderr');
    const killed = await runProcess([process.execPath, '-e', "process.kill(process.pid, 'SIGSEGV')"], {
      cwd: '/',
      env,
      dieWithParent: true,
    });
    expect(killed).toMatchObject({ exitCode: null, signal: 'SIGSEGV' });
    const { result: hung } = await withTimeoutsUntil(
      familyTimeoutsMs,
      (timeoutMs) =>
        runProcess([process.execPath, fixture('family.mjs'), 'hang'], {
          cwd: '/',
          env,
          timeoutMs,
          killGraceMs: 200,
          dieWithParent: true,
        }),
      printedPids,
    );
    expect(hung).toMatchObject({ exitCode: 124, timedOut: true });
    const [child, grandchild] = pidsOf(hung.outputTail);
    expect(grandchild).toBeGreaterThan(0);
    await waitFor(() => !isAlive(child!) && !isAlive(grandchild!), { what: 'no survivors' });
    const missing = await runProcess(['codefleet-no-such-program'], { cwd: '/', env, dieWithParent: true });
    expect(missing).toMatchObject({ exitCode: null, spawnError: 'spawn codefleet-no-such-program ENOENT' });
    // Killed by a signal Node itself ignores: still reported as that signal, not exit 0.
    const piped = await runProcess(['sh', '-c', 'kill -PIPE $$'], { cwd: '/', env, dieWithParent: true });
    expect(piped).toMatchObject({ exitCode: null, signal: 'SIGPIPE' });
  });

  it('dieWithParent keeps the kill grace: a child cleaning up after SIGTERM finishes before SIGKILL', async () => {
    // The SIGTERM must come after the fixture set its trap (it prints "ready" then), and the
    // grace is long: what is tested is that the grace is kept, not how fast a loaded machine
    // runs the cleanup. The run still ends as soon as the cleanup does.
    const { result } = await withTimeoutsUntil(
      [1_500, 15_000, 60_000],
      (timeoutMs) =>
        runProcess([process.execPath, fixture('trap.mjs')], {
          cwd: '/',
          env,
          timeoutMs,
          killGraceMs: 120_000,
          dieWithParent: true,
        }),
      (run) => run.outputTail.includes('ready'),
    );
    expect(result).toMatchObject({ exitCode: 124, timedOut: true });
    expect(result.outputTail).toContain('cleaned up');
  });

  it('dieWithParent: a program that exists but cannot be executed is not started, not a failure', async () => {
    const dir = await createTempDir('bad-shebang');
    try {
      const script = join(dir.path, 'agent');
      await writeFile(script, '#!/nonexistent/interpreter\n');
      await chmod(script, 0o755);
      const result = await runProcess([script], { cwd: dir.path, env, dieWithParent: true });
      expect(result).toMatchObject({ exitCode: null, spawnError: expect.stringMatching(/ENOENT|EACCES/) });
    } finally {
      await dir.dispose();
    }
  });

  it('dieWithParent: NODE_OPTIONS reaches the program, not the guard', async () => {
    const result = await runProcess(['sh', '-c', 'echo "options=$NODE_OPTIONS"'], {
      cwd: '/',
      env: { ...env, NODE_OPTIONS: '--no-such-node-flag' },
      dieWithParent: true,
    });
    expect(result).toMatchObject({ exitCode: 0 });
    expect(result.outputTail).toContain('options=--no-such-node-flag');
  });
});
