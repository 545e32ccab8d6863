// The sandbox conformance suite: what every mode promises (runProcess's contract), and what
// every isolating mode adds. Run against each mode this machine has (bwrap and none here).
import { spawn } from 'node:child_process';
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createTempDir, isAlive, waitFor, type TempDir } from '@codefleet/testkit';
import { openSandbox, type NetworkPolicy, type Sandbox, type SandboxMode, type SandboxSettings } from '../src/index.js';

const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C' };
const node = process.execPath;
const host = { platform: process.platform, path: env.PATH };

/** Host processes whose command line holds `marker` (the sandbox's own are host processes too). */
async function processesWith(marker: string): Promise<number[]> {
  const found: number[] = [];
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    const cmdline = await readFile(`/proc/${name}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.includes(marker)) found.push(Number(name));
  }
  return found;
}

/** The suite for `mode`; every mode but `none` is held to the isolation promises too. */
export function sandboxConformance(mode: SandboxMode): void {
  const open = (settings: SandboxSettings) => openSandbox({ ...settings, mode }, host);
  describe(`sandbox conformance: ${mode}`, () => {
    let dir: TempDir;
    let copy: string;
    let outside: string;
    let shownDir: string;
    let sandbox: Sandbox;
    const run = (argv: string[], extra: Partial<Parameters<Sandbox['run']>[1]> = {}) =>
      sandbox.run(argv, { cwd: copy, env, writable: [copy], timeoutMs: 60_000, ...extra });
    const sh = (script: string, extra: Partial<Parameters<Sandbox['run']>[1]> = {}) => run(['sh', '-c', script], extra);

    beforeAll(async () => {
      dir = await createTempDir('sandbox');
      copy = join(dir.path, 'data', 'copies', 'job-1');
      outside = join(dir.path, 'data', 'copies', 'job-2');
      shownDir = join(dir.path, 'toolchain');
      await mkdir(join(copy, '.github', 'workflows'), { recursive: true });
      await mkdir(outside, { recursive: true });
      await mkdir(join(shownDir, 'secret'), { recursive: true });
      await writeFile(join(copy, 'a.txt'), 'in the copy\n');
      await writeFile(join(copy, '.github', 'workflows', 'ci.yml'), 'on: push\n');
      await writeFile(join(outside, 'token'), 'ghs_other_job_token\n');
      await writeFile(join(shownDir, 'tool.sh'), '#!/bin/sh\necho tool ran\n', { mode: 0o755 });
      await writeFile(join(shownDir, 'secret', 'key'), 'hidden key\n');
      sandbox = await open({
        mode: 'auto',
        network: { mode: 'public', allow: [] },
        readPaths: [shownDir],
        hiddenPaths: [join(dir.path, 'data'), join(shownDir, 'secret')],
        runRoot: join(dir.path, 'data', 'sandbox'),
      });
    });
    afterAll(async () => dir.dispose());

    it('runs an argument vector in cwd with exactly the given environment, and keeps the facts', async () => {
      const result = await run(
        [
          node,
          '-e',
          'console.log(process.cwd(), process.env.FOO, process.env.GITHUB_TOKEN ?? "none"); process.exit(3)',
        ],
        { env: { ...env, FOO: 'bar $(id)' } },
      );
      expect(result.exitCode).toBe(3);
      expect(result.outputTail).toContain(`${copy} bar $(id) none`);
      expect(result.command[0]).toBe(node);
    });

    it('writes into the working copy land on the host', async () => {
      const result = await sh('echo changed > a.txt && mkdir -p new && echo x > new/b.txt');
      expect(result.exitCode).toBe(0);
      expect(await readFile(join(copy, 'a.txt'), 'utf8')).toBe('changed\n');
      expect(await readFile(join(copy, 'new', 'b.txt'), 'utf8')).toBe('x\n');
    });

    it('a program that is not on PATH is a spawn error, not an exit code', async () => {
      const result = await run(['codefleet-no-such-program', '--version']);
      expect(result.exitCode).toBeNull();
      expect(result.spawnError).toMatch(/not found|ENOENT/);
    });

    it('a program that prints what a failed sandbox prints is a failed program, not a failed start', async () => {
      const result = await sh('echo "bwrap: Can\'t find source path /x: No such file or directory" >&2; exit 1');
      expect(result).toMatchObject({ exitCode: 1, signal: null });
      expect(result.spawnError).toBeUndefined();
    });

    it('a timeout stops the run and records 124', async () => {
      const result = await run([node, '-e', 'setInterval(() => {}, 1000)'], { timeoutMs: 1_000, killGraceMs: 200 });
      expect(result).toMatchObject({ timedOut: true, exitCode: 124 });
    });

    it('everything inside dies when the worker is killed with SIGKILL', async () => {
      const marker = `codefleet-orphan-${process.pid}-${Date.now()}`;
      const script = fileURLToPath(new URL('./fixtures/sandboxed-parent.mjs', import.meta.url));
      const settings = JSON.stringify({
        mode,
        network: { mode: 'public', allow: [] },
        readPaths: [],
        hiddenPaths: [],
        runRoot: join(dir.path, 'data', 'sandbox'),
      });
      const parent = spawn(node, [script, settings, copy, marker], { stdio: ['ignore', 'pipe', 'inherit'], env });
      await waitFor(async () => (await processesWith(marker)).length >= 2, {
        what: 'the sandboxed processes to start',
      });
      const inside = await processesWith(marker);
      parent.kill('SIGKILL');
      await waitFor(() => inside.every((pid) => !isAlive(pid)), {
        what: 'every sandboxed process to die with the worker',
      });
    });

    // none cannot promise this: a process that clears its environment loses the run's mark.
    if (mode === 'none') return;

    it('a process that leaves with setsid and a cleared environment does not outlive the run', async () => {
      const marker = `codefleet-escape-${process.pid}-${Date.now()}`;
      const result = await sh(
        `setsid env -i ${node} -e "setInterval(() => {}, 1000)" ${marker} >/dev/null 2>&1 & sleep 0.5; echo started`,
      );
      expect(result.outputTail).toContain('started');
      await waitFor(async () => (await processesWith(marker)).length === 0, {
        what: 'the escaped process to be gone',
      });
    });

    it('shows no process of the host: the worker and its environment are invisible', async () => {
      // stderr silenced: it arrives on its own pipe, in no fixed order with stdout.
      const result = await sh(
        `kill -0 ${process.pid} 2>/dev/null && echo SEEN-WORKER; cat /proc/${process.pid}/environ 2>/dev/null && echo READ-ENVIRON; echo "pids=$(ls /proc | grep -c '^[0-9]')"`,
      );
      expect(result.outputTail).not.toContain('SEEN-WORKER');
      expect(result.outputTail).not.toContain('READ-ENVIRON');
      const count = Number(/pids=(\d+)/.exec(result.outputTail)?.[1]);
      expect(count).toBeLessThan(10);
    });

    it('gets a fresh, empty HOME and /tmp per run, gone afterwards', async () => {
      const first = await sh(
        'ls -A "$HOME" | wc -l; echo planted > "$HOME/.gitconfig"; echo x > /tmp/left; echo "$HOME $TMPDIR"',
      );
      expect(first.outputTail.trim().split('\n')[0]).toBe('0');
      const home = first.outputTail.trim().split('\n').at(-1)!.split(' ')[0]!;
      expect(home).not.toBe(process.env.HOME);
      const second = await sh('cat "$HOME/.gitconfig" /tmp/left 2>&1; ls -A /tmp');
      expect(second.outputTail).not.toContain('planted');
      expect(second.outputTail).toMatch(/No such file/);
      const root = join(dir.path, 'data', 'sandbox');
      const own = (await readdir(root)).filter((name) => name.startsWith(`w${process.pid}-`));
      expect(own.length).toBeGreaterThan(0);
      for (const name of own) expect(await readdir(join(root, name))).toEqual([]);
    });

    it('shows nothing of the host outside system directories and read paths', async () => {
      const result = await sh(
        `cat ${join(outside, 'token')} 2>&1; ls ${join(dir.path, 'data', 'copies')} 2>&1; cat ${join(shownDir, 'secret', 'key')} 2>&1; ls ${process.env.HOME ?? '/root'} 2>&1 | head -3; ${join(shownDir, 'tool.sh')}`,
      );
      expect(result.outputTail).not.toContain('ghs_other_job_token');
      expect(result.outputTail).not.toContain('hidden key');
      expect(result.outputTail).not.toMatch(/^job-2$/m);
      expect(result.outputTail).toContain('tool ran');
    });

    it('writes only to the working copy: system directories, read paths and read-only parts refuse', async () => {
      const result = await sh(
        `for f in /usr/codefleet-x /etc/codefleet-x ${join(shownDir, 'x')} ${join(copy, '.github', 'workflows', 'ci.yml')} ${join(copy, '.github', 'workflows', 'new.yml')}; do (echo evil > "$f") 2>/dev/null && echo "WROTE $f"; done; echo ok > ok.txt && echo copy-writable`,
        {
          readOnly: [join(copy, '.github', 'workflows')],
        },
      );
      expect(result.outputTail).not.toContain('WROTE');
      expect(result.outputTail).toContain('copy-writable');
      expect(await readFile(join(copy, '.github', 'workflows', 'ci.yml'), 'utf8')).toBe('on: push\n');
    });

    it('has no capabilities, even when the worker is root: no mount, no mknod, kernel settings read-only', async () => {
      // Writing the current value back: harmless should the sandbox ever let it through.
      const result = await sh(
        'grep CapEff /proc/self/status; mkdir -p /tmp/m; mount -t tmpfs none /tmp/m 2>/dev/null && echo MOUNTED; mknod /tmp/d b 1 3 2>/dev/null && echo MKNOD; (cat /proc/sys/kernel/hostname > /proc/sys/kernel/hostname) 2>/dev/null && echo SYSCTL; echo end',
      );
      expect(result.outputTail).toMatch(/CapEff:\s+0+\n/);
      expect(result.outputTail).not.toMatch(/MOUNTED|MKNOD|SYSCTL/);
      expect(result.outputTail).toContain('end');
    });

    it('a read-only path a run turned into a symlink never shows its target', async () => {
      const { rm, symlink } = await import('node:fs/promises');
      const link = join(copy, 'docs-link');
      await rm(link, { force: true });
      await symlink(outside, link);
      const result = await sh(`cat ${join(link, 'token')} 2>&1; echo end`, { readOnly: [link] });
      expect(result.outputTail).not.toContain('ghs_other_job_token');
      expect(result.outputTail).toContain('end');
      await rm(link);
    });

    it("scratch: tools write where they do in real life, beside read-only dependencies, and no run sees another run's writes", async () => {
      const { symlink } = await import('node:fs/promises');
      const modules = join(copy, 'node_modules');
      await mkdir(join(modules, 'dep'), { recursive: true });
      await writeFile(join(modules, 'dep', 'index.js'), 'module.exports = 1;\n');
      // A symlink an install script left where a scratch directory would go: left alone.
      await symlink('dep', join(modules, '.nx'));
      const scratch = ['.vite-temp', '.cache', '.nx'].map((name) => join(modules, name));
      const options = { readOnly: [modules], scratch };
      const first = await sh(
        `mkdir -p .vite-temp/x && echo cfg > .vite-temp/x/c.mjs && echo wrote-temp; echo c > .cache/a && echo wrote-cache;
        (echo evil > dep/index.js) 2>/dev/null && echo WROTE-DEP; (echo x > .nx/f) 2>/dev/null && echo WROTE-LINK; echo end`,
        { ...options, cwd: modules },
      );
      expect(first.outputTail).toMatch(/wrote-temp\nwrote-cache\nend/);
      const second = await sh('ls -A .vite-temp .cache; echo end', { ...options, cwd: modules });
      expect(second.outputTail).toBe('.cache:\n\n.vite-temp:\nend\n');
      // The host's copy: empty mount points, the dependency as installed, nothing in the link's target.
      expect([
        await readdir(join(modules, '.vite-temp')),
        await readdir(join(modules, '.cache')),
        await readdir(join(modules, 'dep')),
      ]).toEqual([[], [], ['index.js']]);
      expect(await readFile(join(modules, 'dep', 'index.js'), 'utf8')).toBe('module.exports = 1;\n');
      // Without scratch the same directory is as read-only as the rest.
      const without = await sh('(echo x > .vite-temp/y) 2>/dev/null && echo WROTE; echo end', {
        readOnly: [modules],
        cwd: modules,
      });
      expect(without.outputTail).toBe('end\n');
    });

    it('a program the sandbox does not show is named with the fix', async () => {
      const hiddenTool = join(outside, 'tool');
      await writeFile(hiddenTool, '#!/bin/sh\necho should not run\n', { mode: 0o755 });
      const result = await run([hiddenTool]);
      expect(result.spawnError).toMatch(/sandbox does not show.*sandbox\.read_paths/);
    });

    it('a program in a hidden directory runs when a read-only mount shows that directory where it is', async () => {
      // As the package managers fetched into the (hidden) cache directory are shown to runs.
      const tools = join(dir.path, 'data', 'tools');
      await mkdir(tools, { recursive: true });
      await writeFile(join(tools, 'pm'), '#!/bin/sh\necho pm ran\n', { mode: 0o755 });
      const result = await run(['pm'], {
        env: { ...env, PATH: `${tools}:${env.PATH}` },
        mounts: [{ source: tools, target: tools, writable: false }],
      });
      expect([result.spawnError, result.outputTail.trim()]).toEqual([undefined, 'pm ran']);
      const write = await sh(`echo x > ${join(tools, 'pm')} 2>/dev/null || echo refused`, {
        mounts: [{ source: tools, target: tools, writable: false }],
      });
      expect(write.outputTail).toContain('refused');
    });

    it('a mount shows a host directory at another path', async () => {
      const source = join(dir.path, 'private-git');
      await mkdir(source, { recursive: true });
      const target = join(outside, 'view');
      await mkdir(target, { recursive: true });
      const result = await sh(`echo mounted > ${join(target, 'f')} && echo done`, {
        mounts: [{ source, target, writable: true }],
      });
      expect(result.outputTail).toContain('done');
      expect(await readFile(join(source, 'f'), 'utf8')).toBe('mounted\n');
      await expect(readFile(join(target, 'f'))).rejects.toThrow();
    });

    it('a sandbox that cannot set itself up is a spawn error naming why', async () => {
      const result = await sh('echo ran', {
        mounts: [{ source: join(dir.path, 'no-such-source'), target: join(outside, 'view2'), writable: true }],
      });
      expect(result.outputTail).not.toContain('ran\n');
      expect(result.spawnError).toMatch(/sandbox could not start it.*no-such-source/);
    });

    it('reports a program killed by a signal as killed by that signal', async () => {
      const result = await sh('kill -9 $$');
      expect(result).toMatchObject({ exitCode: null, signal: 'SIGKILL' });
    });

    it('the host loopback is out of reach unless allow names it (then at its own address); network none: nothing', async () => {
      const server = createServer((socket) => socket.end('hello\n'));
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const port = (server.address() as { port: number }).port;
      const connect = [
        node,
        '-e',
        `require('net').connect(${port}, '127.0.0.1').on('data', (d) => { console.log('GOT', String(d).trim()); process.exit(0); }).on('error', (e) => { console.log('ERR', e.code); process.exit(1); })`,
      ];
      const settings = (network: NetworkPolicy) => ({
        mode: 'auto' as const,
        network,
        readPaths: [],
        hiddenPaths: [],
        runRoot: join(dir.path, 'data', 'sandbox'),
      });
      const runIn = async (network: NetworkPolicy) =>
        (await open(settings(network))).run(connect, { cwd: copy, env, writable: [copy], timeoutMs: 30_000 });
      try {
        expect((await run(connect)).outputTail).toMatch(/ERR (ECONNREFUSED|ENETUNREACH)/);
        expect((await runIn({ mode: 'public', allow: [`127.0.0.1:${port}`] })).outputTail).toContain('GOT hello');
        expect((await runIn({ mode: 'allowlist', allow: [`127.0.0.1:${port}`] })).outputTail).toContain('GOT hello');
        expect((await runIn({ mode: 'none', allow: [`127.0.0.1:${port}`] })).outputTail).toMatch(
          /ERR (ECONNREFUSED|ENETUNREACH)/,
        );
      } finally {
        server.close();
      }
    });
  });
}
