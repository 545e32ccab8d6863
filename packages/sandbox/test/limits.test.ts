// Per-run limits, for real: a fork bomb, a memory bomb, a full /tmp and /dev/shm, a file past
// its size, each in a real bubblewrap run, each ended with the limit named, and the same
// sandbox running the next program normally afterwards. Small limits keep the bombs short.
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createTempDir, type TempDir } from '@codefleet/testkit';
import { defaultLimits, openSandbox, type Sandbox, type SandboxLimits } from '../src/index.js';

// Each bomb ends in well under a second on an idle host; the package's timeout only guards
// against a hang.

const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C' };
const node = process.execPath;

let dir: TempDir;
let copy: string;
let sandbox: Sandbox;
const limits: SandboxLimits = {
  ...defaultLimits,
  processes: 64,
  memoryMb: 256,
  tmpMb: 16,
  tmpFiles: 2000,
  shmMb: 8,
  fileSizeMb: 32,
};

const run = (argv: string[]) => sandbox.run(argv, { cwd: copy, env, writable: [copy], timeoutMs: 120_000 });

beforeAll(async () => {
  dir = await createTempDir('sandbox-limits');
  copy = join(dir.path, 'copy');
  await mkdir(copy);
  sandbox = await openSandbox(
    {
      mode: 'bwrap',
      network: { mode: 'none', allow: [] },
      limits,
      readPaths: [],
      hiddenPaths: [],
      runRoot: join(dir.path, 'sandbox'),
    },
    { platform: process.platform, path: env.PATH },
  );
});

afterAll(async () => {
  await dir?.dispose();
});

describe('a bwrap run past a limit ends with resource_limit, and the next run is unharmed', () => {
  it('a fork bomb: processes', async () => {
    // exec: a shell that forked its sleep could find no fork left and exit at once, ending
    // the run before any look saw the bomb.
    const result = await run(['sh', '-c', 'bomb() { bomb | bomb & }; bomb; exec sleep 600']);
    expect(result.timedOut).toBe(false);
    expect(result.resourceLimit).toMatchObject({ limit: 'processes', max: 64 });
    expect(result.resourceLimit!.seen).toBeGreaterThan(64);
    expect(result).toMatchObject({ exitCode: null, signal: 'SIGKILL' });
    expect(result.outputTail).toMatch(
      /codefleet: resource_limit: processes — \d+ seen, the limit is 64 \(sandbox\.limits\.processes\); the run was stopped\n$/,
    );
    expect((await run(['sh', '-c', 'echo fine'])).outputTail).toBe('fine\n');
  });

  it('a memory bomb: memory', async () => {
    const result = await run([node, '-e', 'const kept = []; for (;;) kept.push(Buffer.alloc(8 << 20, 1));']);
    expect(result.timedOut).toBe(false);
    expect(result.resourceLimit).toMatchObject({ limit: 'memory', max: 256 * 1024 * 1024 });
    expect(result.outputTail).toContain('resource_limit: memory');
    expect((await run([node, '-e', 'console.log(Buffer.alloc(32 << 20, 1).length)'])).outputTail).toBe(`${32 << 20}\n`);
  });

  it('/tmp full: tmp_size (a tmpfs of its own, in no way the host disk)', async () => {
    const result = await run(['sh', '-c', 'head -c 64000000 /dev/zero > /tmp/fill; sleep 600']);
    expect(result.resourceLimit).toMatchObject({ limit: 'tmp_size', max: 16 * 1024 * 1024 });
    // The stop can land before head has printed its ENOSPC, so the mount itself shows whose
    // space ran out: a tmpfs of exactly tmp_mb.
    const mount = await run(['stat', '-f', '-c', '%T %b %S', '/tmp']);
    const [type, blocks, blockSize] = mount.outputTail.trim().split(' ');
    expect(type).toBe('tmpfs');
    expect(Number(blocks) * Number(blockSize)).toBe(16 * 1024 * 1024);
  });

  it('/dev/shm full: shm_size; files in /tmp: tmp_files', async () => {
    expect(
      (await run(['sh', '-c', 'head -c 64000000 /dev/zero > /dev/shm/fill; sleep 600'])).resourceLimit,
    ).toMatchObject({ limit: 'shm_size' });
    const files = await run([
      'sh',
      '-c',
      'mkdir /tmp/many && cd /tmp/many && i=0; while [ $i -lt 5000 ]; do : > f$i; i=$((i+1)); done; sleep 600',
    ]);
    expect(files.resourceLimit).toMatchObject({ limit: 'tmp_files', max: 2000 });
  });

  it('a file past file_size_mb: the kernel stops the writer (SIGXFSZ), named file_size; Node gets EFBIG', async () => {
    const result = await run(['dd', 'if=/dev/zero', 'of=big', 'bs=1M', 'count=64']);
    expect(result.resourceLimit).toMatchObject({ limit: 'file_size', max: 32 * 1024 * 1024 });
    expect(result.signal).toBe('SIGXFSZ');
    // Node ignores SIGXFSZ: the write fails instead, and says why.
    const fromNode = await run([node, '-e', `require('fs').writeFileSync('big', Buffer.alloc(64 << 20))`]);
    expect(fromNode.outputTail).toContain('EFBIG: file too large');
  });

  it('a run within its limits is not touched, and sees the per-process limits', async () => {
    const result = await run(['sh', '-c', 'ulimit -n; ulimit -t; df -k /tmp | tail -n 1']);
    expect(result.resourceLimit).toBeUndefined();
    expect(result.exitCode).toBe(0);
    const [nofile, cpu, df] = result.outputTail.trim().split('\n');
    expect(nofile).toBe(String(limits.openFiles));
    expect(cpu).toBe(String(limits.cpuSeconds));
    expect(df).toMatch(/^tmpfs\s+16384\s/);
  });
});
