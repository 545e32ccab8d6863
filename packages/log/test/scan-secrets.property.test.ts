import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { scanForSecrets } from '../src/index.js';

const secretArb = fc
  .oneof(
    fc.stringMatching(/^[A-Za-z0-9_\-+/=.]{8,48}$/),
    fc.string({ minLength: 8, maxLength: 32, unit: 'grapheme' }),
    fc.string({ minLength: 8, maxLength: 32, unit: 'binary' }),
  )
  .filter((s) => s.trim().length >= 8);
const bytesArb = (max: number) => fc.uint8Array({ maxLength: max }).map((bytes) => Buffer.from(bytes));
const textArb = fc.string({ maxLength: 40 });
const caseAs = (style: string, text: string) => (style === 'upper' ? text.toUpperCase() : text.toLowerCase());

const kindsFound = (added: string | Buffer, secret: string) =>
  scanForSecrets([{ file: 'f', added }], [secret])
    .filter((hit) => hit.kind === 'secret')
    .map((hit) => hit.encoding);

describe('scanForSecrets properties', () => {
  it('finds a secret inside any base64 blob, at every byte alignment, in both alphabets, wrapped or not', () => {
    fc.assert(
      fc.property(
        secretArb,
        bytesArb(20),
        bytesArb(20),
        fc.constantFrom('base64', 'base64url') as fc.Arbitrary<BufferEncoding>,
        fc.constantFrom(0, 60, 76),
        (secret, before, after, alphabet, width) => {
          let blob = Buffer.concat([before, Buffer.from(secret, 'utf8'), after]).toString(alphabet);
          if (width > 0) blob = blob.replace(new RegExp(`(.{${width}})`, 'g'), '$1\n');
          expect(kindsFound(`data = "${blob}"`, secret)).toContain('base64');
        },
      ),
      { numRuns: 600 },
    );
  });

  it('finds a secret percent-encoded, as encodeURIComponent does it or byte by byte in either case', () => {
    fc.assert(
      fc.property(
        secretArb,
        textArb,
        textArb,
        fc.constantFrom('component', 'lower', 'upper'),
        (secret, before, after, style) => {
          const bytes = [...Buffer.from(secret, 'utf8')];
          const encoded =
            style === 'component'
              ? encodeURIComponent(secret.replace(/[\uD800-\uDFFF]/g, 'x'))
              : caseAs(style, bytes.map((b) => `%${b.toString(16).padStart(2, '0')}`).join(''));
          const target = style === 'component' ? secret.replace(/[\uD800-\uDFFF]/g, 'x') : secret;
          const found = kindsFound(`${before}?q=${encoded}&${after}`, target);
          // Encoding can leave the secret whole inside its encoded form (`a%` becomes `a%25`):
          // then finding it plainly is finding it.
          expect(found).toContain(encoded.includes(target) ? 'plain' : 'url');
        },
      ),
      { numRuns: 600 },
    );
  });

  it('finds a secret hex-encoded in any dump layout: wrapped, spaced, colon-separated, 0x or \\x per byte, either case', () => {
    // Each layout writes the bytes as 2-digit groups; xxd -p wraps at 60 columns, od-style dumps at 32.
    const layouts: Record<string, (digits: string[]) => string> = {
      flat: (d) => d.join(''),
      xxdPlain: (d) => d.join('').replace(/(.{60})/g, '$1\n'),
      wrapped32: (d) => d.join('').replace(/(.{32})/g, '$1\r\n'),
      spaced: (d) => d.join(' '),
      grouped: (d) => d.join('').replace(/(.{4})/g, '$1 '),
      colons: (d) => d.join(':'),
      cArray: (d) => d.map((x) => `0x${x}`).join(', '),
      escaped: (d) => d.map((x) => `\\x${x}`).join(''),
    };
    fc.assert(
      fc.property(
        secretArb,
        bytesArb(12),
        bytesArb(12),
        fc.constantFrom(...Object.keys(layouts)),
        fc.boolean(),
        textArb,
        (secret, before, after, layout, upper, prose) => {
          const digits = [...Buffer.concat([before, Buffer.from(secret, 'utf8'), after])].map((b) =>
            b.toString(16).padStart(2, '0'),
          );
          const dump = layouts[layout]!(digits);
          const found = kindsFound(`${prose}\n${upper ? dump.toUpperCase() : dump}\n`, secret);
          expect(found).toContain('hex');
        },
      ),
      { numRuns: 800 },
    );
  });

  it('finds a token shape in a wrapped hex dump', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[A-Za-z0-9]{36}$/), fc.constantFrom(30, 60), (tail, width) => {
        const dump = Buffer.from(`token=ghp_${tail}\n`)
          .toString('hex')
          .replace(new RegExp(`(.{${width}})`, 'g'), '$1\n');
        expect(scanForSecrets([{ file: 'f', added: dump }])).toContainEqual(
          expect.objectContaining({ kind: 'token_shape', encoding: 'hex', shape: 'github' }),
        );
      }),
      { numRuns: 200 },
    );
  });

  it('a hex id that is not a secret (a commit sha, a UUID, a dump of other bytes) is no hit', () => {
    fc.assert(
      fc.property(
        fc.stringMatching(/^[A-Z0-9]{8,24}$/),
        fc.uint8Array({ minLength: 16, maxLength: 64 }),
        fc.uuid(),
        (secret, bytes, uuid) => {
          const other = Buffer.from(bytes).toString('hex');
          fc.pre(!other.includes(Buffer.from(secret).toString('hex')));
          const text = `commit ${other}\nid: ${uuid}\n${other.replace(/(..)/g, '$1:')}\n`;
          expect(scanForSecrets([{ file: 'notes.md', added: text }], [secret])).toEqual([]);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('never names the value, even when a file name holds it', () => {
    // What every report says anyway: a value made of it would be "found" in any report.
    const skeleton = JSON.stringify([
      { file: '(the name of changed file 1)', where: 'content', kind: 'token_shape', encoding: 'plain' },
    ]);
    fc.assert(
      fc.property(
        secretArb.filter((s) => !skeleton.includes(s)),
        textArb,
        textArb,
        (secret, before, after) => {
          const hits = scanForSecrets([{ file: `${before}${secret}${after}`, added: `${before}${secret}` }], [secret]);
          expect(hits.length).toBeGreaterThan(0);
          expect(JSON.stringify(hits)).not.toContain(JSON.stringify(secret).slice(1, -1));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('finds nothing in text that does not hold the value in any form', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[A-Z0-9]{8,24}$/), fc.stringMatching(/^[a-z ,.\n]{0,400}$/), (secret, text) => {
        expect(scanForSecrets([{ file: 'notes.md', added: text }], [secret])).toEqual([]);
      }),
      { numRuns: 300 },
    );
  });
});
