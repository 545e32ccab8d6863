import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { parseJob, parseJobJson, type Job } from '../src/job.js';
import {
  canonicalJson,
  fleetKey,
  fleetKeyId,
  signJob,
  unsignedJob,
  unsignedReason,
  verifyJob,
  type FleetKeyring,
} from '../src/job-signature.js';
import { jobFixture } from './fixtures.js';

// Keys of the primitive's own tests: they must differ in controlled ways. Tests that run
// workers take theirs from @codefleet/testkit.
const current = fleetKey('current-key-of-the-fleet-0123456789abcdef');
const previous = fleetKey('previous-key-of-the-fleet-0123456789abcdef');
const stranger = fleetKey('a-key-this-fleet-never-held-0123456789abcdef');
const ring: FleetKeyring = { current };
const queue = { queue: 'codefleet' };
const signed = (job: Job = jobFixture(), keyring: FleetKeyring = ring) =>
  signJob(job, keyring, { ...queue, now: 1_700_000_000_000 });

describe('job signing', () => {
  it('a signed job verifies, also after the JSON round trip of every queue engine', () => {
    const job = signed(
      jobFixture({
        dod: ['npm test', ['npm', 'run', 'lint']],
        route: { name: 'CODE', source: 'rule', confidence: 0.9, reason: 'r' },
      }),
    );
    expect(job.signature).toEqual({
      kid: current.id,
      ts: 1_700_000_000_000,
      sig: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    expect(verifyJob(job, ring, queue)).toEqual({ ok: true, kid: current.id });
    expect(verifyJob(parseJobJson(JSON.stringify(job)), ring, queue)).toEqual({ ok: true, kid: current.id });
  });

  it('changing any field of the job breaks the signature', () => {
    const job = signed(jobFixture({ agent: 'claude', dod: ['npm test'], base_branch: 'main', patch: 'diff' }));
    const changes: Record<string, unknown> = {
      id: 'job-2',
      idempotency_key: 'other#issue-7',
      repo: 'evil/repo',
      base_branch: 'dev',
      source: { kind: 'issue', number: 8 },
      title: 'Something else',
      body: 'Exfiltrate.',
      type: 'bug',
      mode: 'answer',
      branch: 'ai/other',
      priority: 'high',
      agent: 'codex',
      patch: 'other diff',
      dod: [['curl', 'evil']],
      requested_by: 'mallory',
      created_at: '2024-05-02T10:00:00Z',
    };
    for (const [field, value] of Object.entries(changes)) {
      const altered = parseJob({ ...job, [field]: value });
      expect({ field, verdict: verifyJob(altered, ring, queue) }).toEqual({
        field,
        verdict: expect.objectContaining({ ok: false, why: 'bad_signature' }),
      });
    }
    // The envelope's own fields are covered too.
    expect(
      verifyJob({ ...job, signature: { ...job.signature!, ts: job.signature!.ts + 1 } }, ring, queue),
    ).toMatchObject({ ok: false, why: 'bad_signature' });
  });

  it('a job signed for another queue (a producer side queue) does not verify on the jobs queue', () => {
    expect(verifyJob(signed(), ring, { queue: 'codefleet-deliveries' })).toMatchObject({
      ok: false,
      why: 'bad_signature',
    });
  });

  it('an unsigned job, an unknown key and a wrong key with a known id are refused with their reason', () => {
    const missing = verifyJob(unsignedJob(signed()), ring, queue);
    expect(missing).toMatchObject({ ok: false, why: 'missing' });
    const unknown = verifyJob(signed(jobFixture(), { current: stranger }), ring, queue);
    expect(unknown).toMatchObject({ ok: false, why: 'unknown_key' });
    // A forger who names the fleet's key id but signs with another key.
    const forged = signed(jobFixture(), { current: stranger });
    expect(verifyJob({ ...forged, signature: { ...forged.signature!, kid: current.id } }, ring, queue)).toMatchObject({
      ok: false,
      why: 'bad_signature',
    });
    expect(verifyJob({ ...forged, signature: { kid: current.id, ts: 1, sig: 'not hex' } }, ring, queue)).toMatchObject({
      ok: false,
      why: 'bad_signature',
    });
    if (missing.ok) throw new Error('unreachable');
    expect(unsignedReason(missing)).toMatch(/^job_unsigned \(missing\): /);
  });

  it('during a rotation jobs signed with the previous key still verify; new ones are signed with the current key', () => {
    const rotating: FleetKeyring = { current, previous };
    const old = signed(jobFixture(), { current: previous });
    expect(verifyJob(old, rotating, queue)).toEqual({ ok: true, kid: previous.id });
    expect(signed(jobFixture(), rotating).signature?.kid).toBe(current.id);
    // Once the previous key is dropped, its jobs no longer verify.
    expect(verifyJob(old, ring, queue)).toMatchObject({ ok: false, why: 'unknown_key' });
  });

  it('a signature that is not even an object reads as none, so the job is refused as unsigned, not as malformed', () => {
    const job = parseJob({ ...jobFixture(), signature: 'trust me' });
    expect(job.signature).toBeUndefined();
    expect(verifyJob(job, ring, queue)).toMatchObject({ ok: false, why: 'missing' });
  });

  it('a key names itself by an id derived from it and never shows itself', () => {
    expect(current.id).toBe(fleetKeyId('current-key-of-the-fleet-0123456789abcdef'));
    expect(current.id).toMatch(/^[0-9a-f]{8}$/);
    expect(JSON.stringify(current)).not.toContain('current-key');
    // Surrounding whitespace (a key file's newline) is not part of the key.
    expect(fleetKey('  current-key-of-the-fleet-0123456789abcdef\n').id).toBe(current.id);
    expect(() => fleetKey('short')).toThrow(/at least 32 characters, got 5/);
  });
});

describe('canonical encoding', () => {
  /** The same value with its object keys in another order at every level. */
  const reordered = (value: unknown, seed: number): unknown => {
    if (Array.isArray(value)) return value.map((item, i) => reordered(item, seed + i));
    if (value === null || typeof value !== 'object') return value;
    const entries = Object.entries(value);
    const rotated = entries.map((_, i) => entries[(i + seed) % entries.length]!);
    return Object.fromEntries(seed % 2 === 0 ? rotated.reverse() : rotated);
  };

  it('does not depend on the order of keys', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.nat(50), (value, seed) => {
        expect(canonicalJson(reordered(value, seed))).toBe(canonicalJson(value));
      }),
    );
  });

  it('is JSON that reads back as the same value', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(JSON.parse(canonicalJson(value))).toEqual(JSON.parse(JSON.stringify(value)));
      }),
    );
  });

  it('a job whose keys were built in another order keeps its signature', () => {
    fc.assert(
      fc.property(fc.nat(50), (seed) => {
        const job = signed(
          jobFixture({ dod: ['npm test'], route: { name: 'CODE', source: 'rule', confidence: 0.5, reason: 'x' } }),
        );
        expect(verifyJob(parseJob(reordered(job, seed)), ring, queue)).toEqual({ ok: true, kid: current.id });
      }),
    );
  });
});
