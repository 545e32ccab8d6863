import { describe, expect, it } from '@jest/globals';
import { captureProcess } from '../src/index.js';

const env = { PATH: process.env.PATH ?? '' };
const node = (source: string) => [process.execPath, '-e', source];

describe('captureProcess', () => {
  it('keeps all of stdout and stderr apart, byte for byte, and the exit code', async () => {
    const result = await captureProcess(
      node("process.stdout.write('a\\0b\\n'.repeat(100000)); process.stderr.write('warn\\n'); process.exitCode = 4"),
      { cwd: '/', env },
    );
    expect(result.exitCode).toBe(4);
    expect(result.stdout).toBe('a\0b\n'.repeat(100_000));
    expect(result.stderr).toBe('warn\n');
    expect(result.spawnError).toBeUndefined();
  });

  it('passes only the given environment, with stdin closed', async () => {
    process.env.GITHUB_TOKEN = 'ghp_should_not_leak_into_children';
    try {
      const result = await captureProcess(
        node(
          "process.stdin.on('end', () => console.log('stdin closed', process.env.GITHUB_TOKEN ?? 'none', process.env.ONLY)).resume()",
        ),
        { cwd: '/', env: { ...env, ONLY: 'this' } },
      );
      expect(result.stdout).toBe('stdin closed none this\n');
    } finally {
      delete process.env.GITHUB_TOKEN;
    }
  });

  it('reports a missing binary or an impossible argument instead of throwing', async () => {
    expect(await captureProcess(['definitely-not-a-binary-xyz'], { cwd: '/', env })).toMatchObject({
      exitCode: null,
      spawnError: expect.stringMatching(/ENOENT/),
    });
    expect(await captureProcess(['echo', 'nul\0byte'], { cwd: '/', env })).toMatchObject({
      exitCode: null,
      spawnError: expect.any(String),
    });
  });

  it('stops a process that prints more than maxBytes', async () => {
    const result = await captureProcess(
      node("const chunk = 'x'.repeat(65536); const go = () => process.stdout.write(chunk, go); go()"),
      { cwd: '/', env, maxBytes: 1_000_000 },
    );
    expect(result).toMatchObject({ exitCode: null, spawnError: 'printed more than 1000000 bytes; stopped' });
  });

  it('never runs a shell: metacharacters are plain arguments', async () => {
    const result = await captureProcess(['echo', '$(touch /tmp/codefleet-pwned)', '; rm -rf ~', '`id`'], {
      cwd: '/',
      env,
    });
    expect(result.stdout).toBe('$(touch /tmp/codefleet-pwned) ; rm -rf ~ `id`\n');
  });
});
