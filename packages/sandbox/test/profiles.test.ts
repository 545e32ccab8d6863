import { describe, expect, it } from '@jest/globals';
import {
  autoMode,
  bwrapArgs,
  containerArgs,
  defaultLimits,
  openSandbox,
  seatbeltArgs,
  seatbeltProfile,
  SandboxUnavailableError,
} from '../src/index.js';
import { createSeatbeltSandbox } from '../src/seatbelt-sandbox.js';

describe('bwrap arguments', () => {
  const plan = {
    system: [
      { path: '/usr', kind: 'dir' as const },
      { path: '/bin', kind: 'symlink' as const, target: 'usr/bin' },
      { path: '/opt', kind: 'dir' as const },
    ],
    readPaths: ['/opt/rust', '/home/w/.cargo'],
    hidden: [
      { path: '/opt/codefleet', kind: 'dir' as const },
      { path: '/home/w', kind: 'dir' as const },
      { path: '/opt/key.pem', kind: 'file' as const },
    ],
    runDir: '/data/sandbox/run-1',
    writable: ['/opt/codefleet/copies/c1'],
    readOnly: ['/opt/codefleet/copies/c1/.github/workflows'],
    mounts: [{ source: '/data/git-1', target: '/opt/codefleet/mirrors/m/worktrees/c1', writable: true }],
    cwd: '/opt/codefleet/copies/c1',
    network: 'public' as const,
    tmpBytes: 1 << 30,
    shmBytes: 1 << 26,
    warden: { script: '/opt/codefleet/dist/warden.js', socket: '/data/sandbox/run-1/proxy.sock' },
  };
  const args = bwrapArgs(plan);
  const at = (...needle: string[]) => args.findIndex((_, i) => needle.every((part, j) => args[i + j] === part));

  it('isolates PID, IPC, UTS and the network (whatever the policy: the proxy is reached by a socket), and dies with the worker', () => {
    for (const flag of [
      '--die-with-parent',
      '--unshare-pid',
      '--unshare-ipc',
      '--unshare-uts',
      '--unshare-net',
      '--new-session',
    ])
      expect(args).toContain(flag);
    expect(bwrapArgs({ ...plan, network: 'none' })).toContain('--unshare-net');
  });

  it('sizes /tmp and /dev/shm, binds the warden and the proxy socket, and makes / and /dev read-only last', () => {
    expect(at('--size', String(1 << 30), '--tmpfs', '/tmp', '--dir', '/tmp/home')).toBeGreaterThanOrEqual(0);
    expect(at('--size', String(1 << 26), '--tmpfs', '/dev/shm')).toBeGreaterThan(at('--dev', '/dev'));
    expect(at('--ro-bind', plan.warden.script, '/run/codefleet/warden.mjs')).toBeGreaterThan(0);
    expect(at('--bind', plan.warden.socket, '/run/codefleet/proxy.sock')).toBeGreaterThan(0);
    expect(args.slice(-6)).toEqual(['--remount-ro', '/dev', '--remount-ro', '/', '--chdir', plan.cwd]);
    expect(args).not.toContain(plan.runDir);
  });

  it('applies /tmp, system, hides, the copy and its read-only parts in that order', () => {
    const tmp = at('--tmpfs', '/tmp');
    const usr = at('--ro-bind', '/usr', '/usr');
    const hideData = at('--tmpfs', '/opt/codefleet');
    const hideKey = at('--ro-bind', '/dev/null', '/opt/key.pem');
    const copy = at('--bind', plan.writable[0]!, plan.writable[0]!);
    const workflows = at('--ro-bind', plan.readOnly[0]!, plan.readOnly[0]!);
    const mount = at('--bind', '/data/git-1', plan.mounts[0]!.target);
    expect([tmp, usr, hideData, copy, workflows, mount].every((i) => i >= 0)).toBe(true);
    expect(tmp).toBeLessThan(usr);
    expect(usr).toBeLessThan(hideData);
    expect(hideKey).toBeGreaterThan(usr);
    expect(hideData).toBeLessThan(copy);
    expect(copy).toBeLessThan(workflows);
    expect(workflows).toBeLessThan(mount);
    expect(at('--symlink', 'usr/bin', '/bin')).toBeGreaterThanOrEqual(0);
    expect(args.slice(-2)).toEqual(['--chdir', plan.cwd]);
  });

  it('hides only what something shown would reveal, and shows a read path inside a hidden one again', () => {
    // /home/w is not under a shown directory: nothing to hide; its .cargo is bound on its own.
    expect(at('--tmpfs', '/home/w')).toBe(-1);
    expect(at('--ro-bind', '/home/w/.cargo', '/home/w/.cargo')).toBeGreaterThanOrEqual(0);
    const nested = bwrapArgs({ ...plan, readPaths: ['/opt/codefleet/tools'] });
    const idx = nested.lastIndexOf('/opt/codefleet/tools');
    expect(idx).toBeGreaterThan(nested.indexOf('/opt/codefleet'));
  });
});

describe('sandbox-exec profile (macOS; generated and checked here)', () => {
  const plan = {
    readPaths: ['/Users/w/.cargo'],
    hidden: ['/Users/w/.codefleet'],
    runDir: '/private/var/folders/x/run-1',
    writable: ['/Users/w/.codefleet/copies/c1"); (allow default) ("'],
    readOnly: ['/Users/w/.codefleet/copies/c1/.github/workflows'],
    mounts: [],
    network: 'none' as const,
  };
  const { profile, params } = seatbeltProfile(plan);

  it('denies by default and keeps every path out of the profile text', () => {
    expect(profile.startsWith('(version 1)\n(deny default)\n')).toBe(true);
    for (const path of [...plan.readPaths, ...plan.hidden, plan.runDir, ...plan.writable, ...plan.readOnly])
      expect(profile).not.toContain(path);
    expect(Object.values(params)).toEqual(expect.arrayContaining([...plan.writable, ...plan.readOnly, plan.runDir]));
    expect(profile).not.toContain('(allow default)');
  });

  it('writes only to the copy and the run directory, never to its read-only parts; no network but its own unix sockets', () => {
    expect(profile).toMatch(
      /\(allow file-write\* \(require-all \(require-any \(subpath \(param "WRITE_0"\)\) \(subpath \(param "RUN"\)\)\) \(require-not \(require-any \(subpath \(param "READONLY_0"\)\)\)\)\)\)/,
    );
    expect(profile).toMatch(
      /\(allow file-read\* \(require-all \(require-any [^\n]*\(param "READ_0"\)[^\n]*\(require-not \(require-any \(subpath \(param "HIDDEN_0"\)\)\)\)\)\)/,
    );
    expect(profile).toContain('(allow signal (target same-sandbox))');
    expect(profile).not.toMatch(/\(allow network\*/);
    expect(profile).not.toContain('remote ip');
    expect(profile).toContain('(allow network-outbound (subpath (param "RUN")) (subpath (param "WRITE_0")))');
  });

  it('with a proxy: connects out only to its port and the allowed loopback ports; listens on loopback', () => {
    const proxied = seatbeltProfile({ ...plan, network: 'public', proxyPort: 41000, loopbackPorts: [11434] }).profile;
    expect(proxied).toContain('(allow network-outbound (remote ip "localhost:41000") (remote ip "localhost:11434"))');
    expect(proxied).toContain('(allow network-bind network-inbound (local ip "localhost:*"))');
    expect(proxied).not.toMatch(/\(allow network\*|remote ip "\*/);
  });

  it("cannot show a path elsewhere: the job's git directory is writable where it is, a moved mount is refused", async () => {
    const own = '/Users/w/.codefleet/copies/c1.view/git';
    const withGit = seatbeltProfile({ ...plan, mounts: [{ source: own, target: own, writable: true }] });
    expect(withGit.params.MOUNT_0).toBe(own);
    expect(withGit.profile).toMatch(
      /\(allow file-write\* \(require-all \(require-any [^\n]*\(subpath \(param "MOUNT_0"\)\)\)/,
    );
    const sandbox = createSeatbeltSandbox({
      program: '/usr/bin/sandbox-exec',
      readPaths: [],
      hidden: [],
      runRoot: '/tmp',
      network: { mode: 'public', allow: [] },
    });
    expect(sandbox.remapsPaths).toBe(false);
    await expect(
      sandbox.run(['git', 'status'], {
        cwd: '/tmp',
        env: {},
        timeoutMs: 1000,
        writable: ['/tmp'],
        mounts: [{ source: own, target: '/Users/w/.codefleet/mirrors/m.git/worktrees/c1', writable: true }],
      }),
    ).rejects.toThrow(/cannot show/);
  });

  it('passes paths as -D parameters', () => {
    const args = seatbeltArgs(profile, params);
    expect(args.slice(0, 2)).toEqual(['-p', profile]);
    expect(args).toContain(`WRITE_0=${plan.writable[0]}`);
  });
});

describe('container arguments (generated and checked here; no engine on these machines)', () => {
  const plan = {
    runtime: 'podman' as const,
    image: 'node:22',
    name: 'codefleet-ab',
    runDir: '/d/run-1',
    writable: ['/d/copies/c1'],
    readOnly: ['/d/copies/c1/.github/workflows'],
    mounts: [],
    cwd: '/d/copies/c1',
    network: 'public' as const,
    envNames: ['ANTHROPIC_API_KEY', 'LANG'],
    user: { uid: 1000, gid: 1000 },
    limits: defaultLimits,
    warden: { script: '/d/dist/warden.js', socket: '/d/run-1/proxy.sock', nodePrefix: '/usr/local' },
  };

  it('passes variables by name only, mounts the copy, has no network but the proxy socket, and the limits', () => {
    const args = containerArgs(plan);
    expect(args).toEqual(
      expect.arrayContaining(['--rm', '--init', '--network', 'none', '--user', '1000:1000', '-e', 'ANTHROPIC_API_KEY']),
    );
    expect(args).toEqual(
      expect.arrayContaining([
        '--pids-limit',
        '512',
        '--memory',
        '8192m',
        '--shm-size',
        '512m',
        '--ulimit',
        'nofile=8192:8192',
      ]),
    );
    expect(args).toContain(`type=tmpfs,destination=/tmp,tmpfs-size=${4096 * 1024 * 1024}`);
    expect(args).toContain('type=bind,source=/d/run-1/proxy.sock,target=/run/codefleet/proxy.sock');
    expect(args).toContain('type=bind,source=/usr/local,target=/run/codefleet/node,readonly');
    expect(args.join(' ')).not.toMatch(/ANTHROPIC_API_KEY=/);
    expect(args).toContain('type=bind,source=/d/copies/c1,target=/d/copies/c1');
    expect(args).toContain(
      'type=bind,source=/d/copies/c1/.github/workflows,target=/d/copies/c1/.github/workflows,readonly',
    );
    expect(args.at(-1)).toBe('node:22');
  });

  it('refuses a path a comma would break', () => {
    expect(() => containerArgs({ ...plan, writable: ['/d/a,readonly=false'] })).toThrow(/comma/);
  });
});

describe('choosing a mode', () => {
  it('auto is bwrap on Linux and sandbox-exec on macOS', () => {
    expect(autoMode('linux')).toBe('bwrap');
    expect(autoMode('darwin')).toBe('sandbox-exec');
    expect(autoMode('win32')).toBeUndefined();
  });

  it('refuses a mode this host cannot run, naming the fix', async () => {
    const settings = {
      network: { mode: 'public' as const, allow: [] },
      readPaths: [],
      hiddenPaths: [],
      runRoot: '/tmp/codefleet-unused',
    };
    await expect(
      openSandbox({ ...settings, mode: 'bwrap' }, { platform: 'linux', path: '/nonexistent' }),
    ).rejects.toThrow(/apt-get install bubblewrap/);
    await expect(
      openSandbox({ ...settings, mode: 'sandbox-exec' }, { platform: 'linux', path: '/usr/bin' }),
    ).rejects.toBeInstanceOf(SandboxUnavailableError);
    await expect(
      openSandbox({ ...settings, mode: 'container' }, { platform: 'linux', path: '/usr/bin' }),
    ).rejects.toThrow(/sandbox.container.image/);
    await expect(openSandbox({ ...settings, mode: 'auto' }, { platform: 'win32', path: '' })).rejects.toThrow(
      /sandbox.mode: none/,
    );
    expect((await openSandbox({ ...settings, mode: 'none' }, { platform: 'linux', path: '' })).mode).toBe('none');
  });
});
