import { randomBytes } from 'node:crypto';
import { statSync } from 'node:fs';
import type { Config } from '@codefleet/config';
import { CodefleetError, fleetKey, type FleetKey, type FleetKeyring } from '@codefleet/core';
import { createSecretFile, readSecretFile } from './secret-file.js';

/**
 * Where this host's fleet key comes from. The key itself never leaves {@link FleetKey}'s
 * closure: this says only where it was found, for `doctor` and the error that names the fix.
 */
export type FleetKeyOrigin =
  /** The variable named by `signing.key_env`. */
  | { kind: 'env'; name: string }
  /** The key file, found or (`created`) made now. */
  | { kind: 'file'; path: string; created: boolean };

/** The fleet keys this host holds, or why it holds none. */
export type FleetKeys =
  { keyring: FleetKeyring; origin: FleetKeyOrigin; previousOrigin?: FleetKeyOrigin | undefined } | { problem: string };

/**
 * Reads the fleet key: `signing.key_env` first, then `signing.key_file`. With `create`
 * (`codefleet init`, or a host whose queue is local and so is its own whole fleet) a
 * missing key file is made, 32 random bytes in hex, mode 0600, created exclusively so two
 * processes starting at once end with the same key. A fleet backend never makes one: a key
 * made on one host alone would sign jobs no other worker verifies. The previous key
 * (rotation) comes from `signing.previous_key_env` or `previous_key_file`.
 *
 * Throws `invalid_config` for a key that exists but cannot be used (too short, unreadable);
 * a key that is simply missing is `{problem}`, so commands that only read (doctor, runs)
 * still work.
 */
export function loadFleetKeys(config: Config, options: { create: boolean }): FleetKeys {
  const { signing } = config;
  const current = readKey(signing.key, signing.key_env, signing.key_file, options.create);
  if (current === undefined) {
    return {
      problem:
        `no fleet key: set $${signing.key_env}, or run \`codefleet init\` on one host and copy ${signing.key_file} (mode 0600) to every ` +
        'host of the fleet (or set signing.key_file); workers run only jobs signed with it',
    };
  }
  const previous = readKey(signing.previous_key, signing.previous_key_env, signing.previous_key_file, false);
  return {
    keyring: { current: current.key, ...(previous === undefined ? {} : { previous: previous.key }) },
    origin: current.origin,
    ...(previous === undefined ? {} : { previousOrigin: previous.origin }),
  };
}

/** How errors about the key file name it. */
const keyFileName = 'the fleet key file';

function readKey(
  value: string | undefined,
  envName: string,
  path: string | undefined,
  create: boolean,
): { key: FleetKey; origin: FleetKeyOrigin } | undefined {
  if (value !== undefined) return { key: parseKey(value, `$${envName}`), origin: { kind: 'env', name: envName } };
  if (path === undefined) return undefined;
  const text = readSecretFile(path, keyFileName);
  if (text !== undefined) return { key: parseKey(text, path), origin: { kind: 'file', path, created: false } };
  if (!create) return undefined;
  // Made once, exclusively: two processes starting at once end with the same key.
  const made = createSecretFile(path, `${randomBytes(32).toString('hex')}\n`, keyFileName);
  return { key: parseKey(made.text, path), origin: { kind: 'file', path, created: made.created } };
}

function parseKey(text: string, where: string): FleetKey {
  try {
    return fleetKey(text);
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    throw new CodefleetError(
      'invalid_config',
      `the fleet key in ${where} cannot be used: ${why}; make one with \`codefleet init\` (or \`openssl rand -hex 32\`)`,
    );
  }
}

/** True when others than the owner may read the key file (doctor warns). */
export function keyFileIsOpen(path: string): boolean {
  try {
    return (statSync(path).mode & 0o077) !== 0;
  } catch {
    return false;
  }
}

/** Where a key came from, for people: never the key. */
export function describeOrigin(origin: FleetKeyOrigin): string {
  return origin.kind === 'env' ? `$${origin.name}` : `${origin.path}${origin.created ? ' (made now)' : ''}`;
}
