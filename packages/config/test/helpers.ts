import { ConfigError, type ConfigProblem, type LoadedConfig, parseConfig } from '../src/index.js';
import type { Env } from '../src/index.js';

/** Directory the test configs pretend to live in. */
export const BASE_DIR = '/srv/codefleet';

/** Parses YAML text in a fixed, empty-by-default environment. */
export function parse(text: string, env: Env = {}): LoadedConfig {
  return parseConfig(text, { env, baseDir: BASE_DIR, hostname: 'mini-01', sourceName: `${BASE_DIR}/config.yaml` });
}

/** The ConfigError thrown by `run`; fails the test when nothing is thrown. */
export function configError(run: () => unknown): ConfigError {
  try {
    run();
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

/** The problems reported for `text`. */
export function problems(text: string, env: Env = {}): ConfigProblem[] {
  return [...configError(() => parse(text, env)).problems];
}

/** Joins lines into a YAML document, so tests need no indentation tricks. */
export function yaml(...lines: string[]): string {
  return `${lines.join('\n')}\n`;
}
