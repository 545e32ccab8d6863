import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { ConfigError, loadConfig } from '../src/index.js';

describe('loadConfig', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'codefleet-config-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('reads config.yaml from cwd and resolves paths against its directory', async () => {
    await writeFile(join(dir, 'config.yaml'), 'data_dir: state\nworker:\n  concurrency: ${N:-2}\n');
    const loaded = await loadConfig({ cwd: dir, env: {}, hostname: 'mini-02' });
    expect(loaded.source).toBe(join(dir, 'config.yaml'));
    expect(loaded.config.data_dir).toBe(join(dir, 'state'));
    expect(loaded.config.worker).toMatchObject({ concurrency: 2, worker_id: 'mini-02' });
  });

  it('uses an explicit path relative to cwd, resolving paths against the file', async () => {
    await mkdir(join(dir, 'etc'));
    await writeFile(join(dir, 'etc', 'fleet.yaml'), 'queue:\n  local:\n    path: jobs.sqlite\n');
    const { config, source } = await loadConfig({ path: 'etc/fleet.yaml', cwd: dir, env: {}, hostname: 'h' });
    expect(source).toBe(join(dir, 'etc', 'fleet.yaml'));
    expect(config.queue.local.path).toBe(join(dir, 'etc', 'jobs.sqlite'));
  });

  it('follows $CODEFLEET_CONFIG', async () => {
    const file = join(dir, 'from-env.yaml');
    await writeFile(file, 'queue:\n  name: from-env\n');
    const { config, source } = await loadConfig({ cwd: '/', env: { CODEFLEET_CONFIG: file }, hostname: 'h' });
    expect(source).toBe(file);
    expect(config.queue.name).toBe('from-env');
  });

  it('uses the embedded defaults when there is no file', async () => {
    const { config, source } = await loadConfig({ cwd: dir, env: {}, hostname: 'h' });
    expect(source).toBeUndefined();
    expect(config.data_dir).toBe(join(dir, '.codefleet-data'));
  });

  it('fails clearly when a named file does not exist', async () => {
    const missing = join(dir, 'nope.yaml');
    const error = await loadConfig({ cwd: dir, env: { CODEFLEET_CONFIG: missing }, hostname: 'h' }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([
      { path: '', message: `config file ${missing} (from $CODEFLEET_CONFIG) does not exist` },
    ]);
  });

  it('reports problems with the file name', async () => {
    await writeFile(join(dir, 'config.yaml'), 'worker:\n  concurency: 2\n');
    const error = await loadConfig({ cwd: dir, env: {}, hostname: 'h' }).catch((e: unknown) => e);
    expect((error as ConfigError).message).toBe(
      `invalid configuration in ${join(dir, 'config.yaml')} (1 problem):\n  worker.concurency: unknown key (did you mean concurrency?)`,
    );
  });
});
