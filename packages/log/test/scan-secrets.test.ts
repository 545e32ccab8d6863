import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import { maskSecrets, scanForSecrets, SecretRegistry, type ChangedContent } from '../src/index.js';

const secret = 'hunter2-but-LONGER-and-0ne-of-ours';
// A token in a known shape, random so that nothing else could contain it by chance.
const alphanumeric = (length: number) =>
  [...randomBytes(length)]
    .map((byte) => 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'[byte % 62])
    .join('');
const ghp = `ghp_${alphanumeric(36)}`;

const scan = (files: ChangedContent[], secrets: readonly string[] = [secret]) => scanForSecrets(files, secrets);

describe('scanForSecrets: our own secret values', () => {
  it('finds a secret value and names the file, never the value', () => {
    const hits = scan([
      { file: 'src/ok.ts', added: 'export const x = 1;\n' },
      { file: 'src/config.ts', added: `const key = "${secret}";\n` },
    ]);
    expect(hits).toEqual([{ file: 'src/config.ts', where: 'content', kind: 'secret', encoding: 'plain' }]);
    expect(JSON.stringify(hits)).not.toContain(secret);
  });

  it('finds it base64-encoded, hex-encoded in either case, and percent-encoded', () => {
    const encodings = {
      'b64.txt': Buffer.from(`prefix:${secret}:suffix`).toString('base64'),
      'b64url.txt': Buffer.from(`xy${secret}`).toString('base64url'),
      'hex.txt': `0x${Buffer.from(secret).toString('hex').toUpperCase()}`,
      'url.txt': `https://evil.example/?q=${[...Buffer.from(secret)].map((b) => `%${b.toString(16)}`).join('')}`,
    };
    const hits = scan(Object.entries(encodings).map(([file, added]) => ({ file, added })));
    expect(hits.map((hit) => [hit.file, hit.encoding])).toEqual([
      ['b64.txt', 'base64'],
      ['b64url.txt', 'base64'],
      ['hex.txt', 'hex'],
      ['url.txt', 'url'],
    ]);
  });

  it('finds a base64 blob wrapped over indented lines, and in binary content', () => {
    const blob = Buffer.concat([randomBytes(50), Buffer.from(secret), randomBytes(50)]).toString('base64');
    const wrapped = `key: |\n${
      blob
        .match(/.{1,60}/g)
        ?.map((line) => `  ${line}`)
        .join('\n') ?? ''
    }\n`;
    const binary = Buffer.concat([randomBytes(100), Buffer.from(secret), randomBytes(100)]);
    const hits = scan([
      { file: 'values.yaml', added: wrapped },
      { file: 'image.png', added: binary },
    ]);
    expect(hits).toEqual([
      { file: 'values.yaml', where: 'content', kind: 'secret', encoding: 'base64' },
      { file: 'image.png', where: 'content', kind: 'secret', encoding: 'plain' },
    ]);
  });

  it('withholds a file name that holds the value', () => {
    const hits = scan([{ file: `leak/${secret}.txt`, added: 'nothing here' }]);
    expect(hits).toEqual([{ file: '(the name of changed file 1)', where: 'name', kind: 'secret', encoding: 'plain' }]);
  });

  it('reads a SecretRegistry, and skips values too short to be told from chance', () => {
    const registry = new SecretRegistry(['admin12']);
    const files = [{ file: 'a.txt', added: 'user admin12 logged in' }];
    expect(scanForSecrets(files, registry)).toEqual([]);
    registry.add('minted-token-value-123');
    expect(scanForSecrets([{ file: 'a.txt', added: 'minted-token-value-123' }], registry)).toHaveLength(1);
    expect(scanForSecrets(files, ['admin12'], { minSecretLength: 6 })).toHaveLength(1);
    expect(scanForSecrets([{ file: 'a.ts', added: '          indented' }], [' '.repeat(10)])).toEqual([]);
  });
});

describe('scanForSecrets: known token shapes', () => {
  it('finds a GitHub token, plainly and encoded, and names its kind', () => {
    const hits = scan(
      [
        { file: 'plain.env', added: `GITHUB_TOKEN=${ghp}\n` },
        { file: 'b64.txt', added: Buffer.from(`{"token":"${ghp}"}`).toString('base64') },
        { file: 'hex.txt', added: Buffer.from(ghp).toString('hex') },
        { file: 'url.txt', added: [...Buffer.from(ghp)].map((b) => `%${b.toString(16).toUpperCase()}`).join('') },
      ],
      [],
    );
    expect(hits).toEqual([
      { file: 'plain.env', where: 'content', kind: 'token_shape', encoding: 'plain', shape: 'github' },
      { file: 'b64.txt', where: 'content', kind: 'token_shape', encoding: 'base64', shape: 'github' },
      { file: 'hex.txt', where: 'content', kind: 'token_shape', encoding: 'hex', shape: 'github' },
      { file: 'url.txt', where: 'content', kind: 'token_shape', encoding: 'url', shape: 'github' },
    ]);
  });

  it('finds other kinds: an AWS key id, a PEM private key, a Slack token', () => {
    const hits = scan(
      [
        { file: 'aws.cfg', added: `aws_access_key_id = AKIA${alphanumeric(16).toUpperCase()}\n` },
        { file: 'key.pem', added: '-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----\n' },
        { file: 'slack.json', added: `{"token":"xoxb-${alphanumeric(24)}"}` },
        // The masker's output holds no key; a key block with that marker inside still does.
        {
          file: 'masked.md',
          added: maskSecrets('-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----\n'),
        },
        { file: 'marked.pem', added: '-----BEGIN PRIVATE KEY-----[REDACTED]\nMIIEow\n-----END PRIVATE KEY-----\n' },
      ],
      [],
    );
    expect(hits.map((hit) => [hit.file, hit.shape])).toEqual([
      ['aws.cfg', 'aws'],
      ['key.pem', 'pem'],
      ['slack.json', 'slack'],
      ['marked.pem', 'pem'],
    ]);
  });

  it('leaves near misses alone', () => {
    const nearMisses = [
      `ghp_${alphanumeric(35)}`, // one character short
      `xghp_${alphanumeric(36)}`, // part of a longer word
      `ghp_${alphanumeric(18)}-${alphanumeric(18)}`, // a character GitHub tokens never hold
      'AKIAIOSFODNN7EXAMPLE', // AWS's documented example
      'className="sk-navigation-drawer-item-active"', // sk- and 20 characters, but a name
      'const token = process.env.GITHUB_TOKEN; // ghp_… goes here',
    ];
    expect(
      scan(
        nearMisses.map((added, index) => ({ file: `f${index}.ts`, added })),
        [],
      ),
    ).toEqual([]);
  });

  it('finds nothing in ordinary source, lockfiles included', () => {
    const root = fileURLToPath(new URL('../../../', import.meta.url));
    const files: ChangedContent[] = [
      { file: 'package-lock.json', added: readFileSync(join(root, 'package-lock.json')) },
    ];
    for (const pkg of readdirSync(join(root, 'packages'))) {
      const src = join(root, 'packages', pkg, 'src');
      for (const name of readdirSync(src, { recursive: true, encoding: 'utf8' }).filter((n) => n.endsWith('.ts'))) {
        files.push({ file: `packages/${pkg}/src/${name}`, added: readFileSync(join(src, name)) });
      }
    }
    expect(files.length).toBeGreaterThan(50);
    expect(scanForSecrets(files, [secret, 'another-configured-secret'])).toEqual([]);
  });
});
