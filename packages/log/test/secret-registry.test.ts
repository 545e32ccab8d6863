import { describe, expect, it } from '@jest/globals';
import { maskSecrets, SecretRegistry, secretValues } from '../src/index.js';
import { capture } from './capture.js';

// Shaped like no known token kind, so only the registry can mask it.
const minted = 'opaque.Runtime-Token_7f3a9c2e';

describe('SecretRegistry', () => {
  it('masks a value added after the logger was created, from then on', () => {
    const registry = new SecretRegistry(['configured-secret-value']);
    const { log, lines } = capture({ secrets: registry });
    log.info({ token: minted }, `before ${minted}`);
    registry.add(minted);
    log.info({ token: minted, nested: { list: [minted] } }, `after ${minted}`);
    expect(lines[0]).toContain(minted);
    expect(lines[1]).not.toContain(minted);
    expect(JSON.parse(lines[1] ?? '')).toMatchObject({ token: '***', nested: { list: ['***'] }, msg: 'after ***' });
  });

  it('is read by maskSecrets at each call', () => {
    const registry = new SecretRegistry();
    expect(maskSecrets(`x ${minted} y`, registry)).toBe(`x ${minted} y`);
    registry.add(minted);
    expect(maskSecrets(`x ${minted} y`, registry)).toBe('x *** y');
    // Known token shapes stay masked with their hint whatever the registry holds.
    expect(maskSecrets(`ghp_${'a'.repeat(36)}`, registry)).toBe('ghp_[REDACTED]');
  });

  it('keeps one array until it changes, so a compiled masker is reused', () => {
    const registry = new SecretRegistry(['initial-secret']);
    const first = registry.values();
    expect(registry.values()).toBe(first);
    registry.add('initial-secret');
    registry.add('short');
    expect(registry.values()).toBe(first);
    registry.add(`${minted}\n`);
    expect(registry.values()).not.toBe(first);
    expect(registry.values()).toEqual(['initial-secret', `${minted}\n`, minted]);
    expect(Object.isFrozen(registry.values())).toBe(true);
  });

  it('drops the oldest added values past its bound, never the initial ones', () => {
    const registry = new SecretRegistry(['initial-secret'], { maxAdded: 2 });
    for (const value of ['token-number-1', 'token-number-2', 'token-number-3']) registry.add(value);
    expect(registry.values()).toEqual(['initial-secret', 'token-number-2', 'token-number-3']);
  });

  it('secretValues reads arrays and registries alike', () => {
    expect(secretValues(undefined)).toEqual([]);
    expect(secretValues(['a-secret'])).toEqual(['a-secret']);
    expect(secretValues(new SecretRegistry(['a-secret']))).toEqual(['a-secret']);
  });
});
