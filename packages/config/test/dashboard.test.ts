import { describe, expect, it } from '@jest/globals';
import { parse, problems, yaml } from './helpers.js';

describe('dashboard config', () => {
  it('binds loopback, writes, and has no token unless its variable is set', () => {
    const { config } = parse('');
    expect(config.dashboard).toEqual({
      enabled: false,
      host: '127.0.0.1',
      token_env: 'CODEFLEET_DASHBOARD_TOKEN',
      token_operator: 'dashboard',
      operators: {},
      operator_tokens: {},
      session_hours: 12,
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

  it("reads each operator's token from the variable it names, masks it, and leaves out unset ones", () => {
    // Names that do not look secret: masked because the config names them as tokens.
    const loaded = parse(yaml('dashboard:', '  operators:', '    alice: DASH_ALICE', '    bob@example.com: DASH_BOB'), {
      DASH_ALICE: 'alice-token-0123456789',
    });
    expect(loaded.config.dashboard.operators).toEqual({ alice: 'DASH_ALICE', 'bob@example.com': 'DASH_BOB' });
    expect(loaded.config.dashboard.operator_tokens).toEqual({ alice: 'alice-token-0123456789' });
    expect(loaded.secrets).toContain('alice-token-0123456789');
  });

  it('refuses an operator name that would not read as one, and a variable that is not a name', () => {
    const found = problems(yaml('dashboard:', '  operators:', '    "<b>x</b>": DASH_X', '    carol: "not a name"'));
    expect(found.map((p) => p.path)).toEqual(
      expect.arrayContaining([expect.stringContaining('dashboard.operators'), 'dashboard.operators.carol']),
    );
  });

  it('believes a proxy header only from the addresses given, which must be addresses or subnets', () => {
    const { config } = parse(yaml('dashboard:', '  trusted_proxy:', '    from: [127.0.0.1, "::1", 10.0.0.0/8]'));
    expect(config.dashboard.trusted_proxy).toEqual({
      header: 'X-Forwarded-User',
      from: ['127.0.0.1', '::1', '10.0.0.0/8'],
    });
    for (const bad of ['[proxy.example]', '[10.0.0.0/33]', '[]', '["127.0.0.1/8/1"]']) {
      expect(problems(yaml('dashboard:', '  trusted_proxy:', `    from: ${bad}`))[0]?.path).toMatch(
        /^dashboard\.trusted_proxy\.from/,
      );
    }
  });

  it('keeps a login at most 30 days', () => {
    expect(parse(yaml('dashboard:', '  session_hours: 1.5')).config.dashboard.session_hours).toBe(1.5);
    expect(problems(yaml('dashboard:', '  session_hours: 1000'))[0]?.path).toBe('dashboard.session_hours');
    expect(problems(yaml('dashboard:', '  session_hours: 0'))[0]?.path).toBe('dashboard.session_hours');
  });
});
