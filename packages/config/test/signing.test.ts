import { describe, expect, it } from '@jest/globals';
import { BASE_DIR, parse, problems, yaml } from './helpers.js';

describe('signing', () => {
  it('defaults: the key in $CODEFLEET_FLEET_KEY, else <data_dir>/fleet.key', () => {
    const { config } = parse('');
    expect(config.signing).toEqual({
      key_env: 'CODEFLEET_FLEET_KEY',
      previous_key_env: 'CODEFLEET_FLEET_KEY_PREVIOUS',
      key_file: `${BASE_DIR}/.codefleet-data/fleet.key`,
    });
  });

  it('reads the keys from their variables and masks them in logs, whatever the variables are called', () => {
    const key = 'k'.repeat(40);
    const old = 'o'.repeat(40);
    const loaded = parse(yaml('signing:', '  key_env: MY_FLEET', '  previous_key_file: keys/old.key'), {
      MY_FLEET: key,
      CODEFLEET_FLEET_KEY_PREVIOUS: old,
    });
    expect(loaded.config.signing).toMatchObject({
      key,
      previous_key: old,
      previous_key_file: `${BASE_DIR}/keys/old.key`,
    });
    expect(loaded.secrets).toEqual(expect.arrayContaining([key, old]));
  });

  it('refuses to pass the key variables to agents or checks', () => {
    expect(
      problems(
        yaml(
          'agents:',
          '  env:',
          '    pass: [CODEFLEET_FLEET_KEY]',
          'verification:',
          '  env:',
          '    pass: [CODEFLEET_FLEET_KEY_PREVIOUS]',
        ),
      ),
    ).toEqual([
      {
        path: 'agents.env.pass',
        message: expect.stringContaining('must not pass CODEFLEET_FLEET_KEY: it holds the fleet key'),
      },
      { path: 'verification.env.pass', message: expect.stringContaining('must not pass CODEFLEET_FLEET_KEY_PREVIOUS') },
    ]);
  });
});
