import type { Config } from '@codefleet/config';
import { describeOrigin, loadFleetKeys } from '../fleet-key.js';

/**
 * `codefleet init`: makes the fleet key file when this host has no key, and says where the
 * key is and how to share it. Never prints the key. Running it again changes nothing.
 */
export function init(config: Config): string[] {
  const keys = loadFleetKeys(config, { create: true });
  // create: true always ends with a key or throws; a problem here is unreachable.
  if ('problem' in keys) return [keys.problem];
  const { origin, keyring } = keys;
  const lines = [
    origin.kind === 'file' && origin.created
      ? `made the fleet key ${keyring.current.id} in ${origin.path} (mode 0600)`
      : `fleet key ${keyring.current.id} already in ${describeOrigin(origin)}: nothing to do`,
  ];
  // A local queue is a fleet of one host; a fleet backend's hosts must all hold this key.
  if (config.queue.backend !== 'local') {
    lines.push(
      origin.kind === 'file'
        ? `every host of the fleet needs the same key: copy ${origin.path} to each (mode 0600; or point signing.key_file at it), or set $${config.signing.key_env} from it`
        : `every host of the fleet needs the same key in $${config.signing.key_env} (or in a key file, signing.key_file)`,
    );
  }
  return lines;
}
