import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { hostname as osHostname } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { ConfigError } from './errors.js';
import { type Env, readVariable } from './expand.js';
import { detectHardware, type HostHardware } from './host-model.js';
import { parseConfig } from './parse.js';
import type { LoadedConfig } from './types.js';

/** Options of {@link loadConfig}; each defaults to the real process, so tests pass their own. */
export interface LoadConfigOptions {
  /** Config file; default `$CODEFLEET_CONFIG`, else `config.yaml` in `cwd` if present, else none. */
  path?: string;
  /** Directory `path` is relative to and where `config.yaml` is looked for. Default: `process.cwd()`. */
  cwd?: string;
  /** Environment. Default: `process.env` (this is the one place that reads it). */
  env?: Env;
  /** Default worker id. Default: `os.hostname()`. */
  hostname?: string;
  /** The host's hardware for `agents.ollama.model: auto`. Default: {@link detectHardware} on this process's host. */
  hardware?: HostHardware;
}

/** Name of the variable that points at the config file. */
export const CONFIG_PATH_VARIABLE = 'CODEFLEET_CONFIG';

/** File looked for in the working directory when no path is given. */
export const DEFAULT_CONFIG_FILE = 'config.yaml';

/**
 * Finds, reads and validates the configuration. With no file at all the embedded defaults
 * are used, so a fresh checkout runs without setup.
 *
 * @throws {ConfigError} when the file named by `path` or `$CODEFLEET_CONFIG` cannot be read,
 *   or the configuration is invalid.
 */
export async function loadConfig(options: LoadConfigOptions = {}): Promise<LoadedConfig> {
  const env = options.env ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  const hostname = options.hostname ?? osHostname();
  const hardware =
    options.hardware ??
    detectHardware({
      platform: process.platform,
      arch: process.arch,
      exists: existsSync,
      path: readVariable(env, 'PATH'),
    });
  const fromEnv = readVariable(env, CONFIG_PATH_VARIABLE);
  const explicit = options.path ?? (fromEnv === '' ? undefined : fromEnv);

  if (explicit !== undefined) {
    const file = resolve(cwd, explicit);
    const text = await readConfigFile(file);
    if (text === undefined) {
      const via = options.path === undefined ? ` (from $${CONFIG_PATH_VARIABLE})` : '';
      throw new ConfigError([{ path: '', message: `config file ${file}${via} does not exist` }], file);
    }
    return parseConfig(text, { env, baseDir: dirname(file), hostname, hardware, sourceName: file });
  }

  const candidate = join(resolve(cwd), DEFAULT_CONFIG_FILE);
  const text = await readConfigFile(candidate);
  if (text === undefined) return parseConfig('', { env, baseDir: resolve(cwd), hostname, hardware });
  return parseConfig(text, { env, baseDir: dirname(candidate), hostname, hardware, sourceName: candidate });
}

/** The file's text, or undefined when it does not exist; other read errors become a ConfigError. */
async function readConfigFile(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    const reason = error instanceof Error ? error.message : String(error);
    throw new ConfigError([{ path: '', message: `cannot read config file: ${reason}` }], file);
  }
}
