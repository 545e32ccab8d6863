import { describe, expect, it } from '@jest/globals';
import { parse, yaml } from './helpers.js';

describe('dashboard config', () => {
  it('binds loopback, writes, and has no token unless its variable is set', () => {
    const { config } = parse('');
    expect(config.dashboard).toEqual({
      enabled: false,
      host: '127.0.0.1',
      token_env: 'CODEFLEET_DASHBOARD_TOKEN',
      read_only: false,
    });
  });

  it('reads the token from the variable token_env names, and masks it', () => {
    const loaded = parse(yaml('dashboard:', '  token_env: DASH_TOKEN', '  read_only: true'), {
      DASH_TOKEN: 'dash-token-abcdef',
    });
    expect(loaded.config.dashboard).toMatchObject({ token: 'dash-token-abcdef', read_only: true });
    expect(loaded.secrets).toContain('dash-token-abcdef');
  });
});
