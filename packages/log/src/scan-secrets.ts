import { REDACTED, tokenShapes } from './mask.js';
import { secretValues, type SecretSource } from './secret-registry.js';

/** One changed file of a diff: its path and the content the change adds to it. */
export interface ChangedContent {
  /** Path in the repository, as the diff names it. */
  file: string;
  /** The added lines (or the whole new file); bytes for binary files. */
  added: string | Uint8Array;
}

/** How a value was written where it was found. */
export type SecretEncoding = 'plain' | 'base64' | 'url' | 'hex';

/**
 * One finding, without the value found: it is meant for a failure reason posted in public.
 * `kind` is `secret` for one of codefleet's own secret values, `token_shape` for a credential
 * recognisable by its form (`ghp_…`, `AKIA…`, a PEM private key), then named by `shape`.
 */
export interface SecretHit {
  /** The file's path, or `(the name of changed file N)` when the name itself holds the value. */
  file: string;
  /** Whether the value is in the file's content or in its name. */
  where: 'content' | 'name';
  kind: 'secret' | 'token_shape';
  encoding: SecretEncoding;
  /** For `token_shape`: which kind (`github`, `githubPat`, `aws`, `pem`, ...). */
  shape?: string;
}

/** Options of {@link scanForSecrets}. */
export interface ScanOptions {
  /**
   * Secret values shorter than this are not looked for: a short value turns up by chance
   * (`admin`, `123456`), and a false hit fails the job for good. Default: 8.
   */
  minSecretLength?: number;
}

const defaultMinSecretLength = 8;
// AWS's documented example key id, found in docs and tests everywhere; it opens nothing.
const harmlessTokens = new Set(['AKIAIOSFODNN7EXAMPLE']);
// The masker's own output for a private key holds none: a report or PR body quoting it is clean.
const redactedPem = new RegExp(
  `^-----BEGIN ([A-Z ]*)PRIVATE KEY-----${REDACTED.replace(/[[\]]/g, '\\$&')}-----END \\1PRIVATE KEY-----$`,
);
// The shortest token shape is 15 bytes (a Slack token): runs shorter than that many encoded
// characters cannot hold one.
const minBase64Run = 20;
const minHexRun = 30;

/**
 * Looks for codefleet's own secret values and for known token shapes in what a change adds,
 * written plainly, base64 (standard or URL alphabet, at any byte alignment inside a longer
 * blob, wrapped over lines or not), percent-encoded (`encodeURIComponent` or every byte, in
 * either case) or as hex (either case, flat or separated by whitespace and line breaks, `:`,
 * `,`, `0x` or `\x`). Run it on the diff before pushing: a hit means the push must not
 * happen. Each (file, place, kind, encoding, shape) is reported once.
 *
 * What it cannot see: a value split, reversed, encrypted, compressed or encoded twice, or a
 * hex dump with offsets and a text column (`xxd` without `-p`). It is a net for mistakes and
 * crude exfiltration by the agent, not a proof that nothing leaks.
 */
export function scanForSecrets(
  files: readonly ChangedContent[],
  secrets?: SecretSource,
  options: ScanOptions = {},
): SecretHit[] {
  const minLength = options.minSecretLength ?? defaultMinSecretLength;
  const needles = secretValues(secrets)
    // Measured without surrounding whitespace: eight spaces are indentation, not a secret.
    .filter((value) => value.trim().length >= minLength)
    .map(secretNeedles);
  const hits: SecretHit[] = [];
  files.forEach((changed, index) => {
    const inName = findings(Buffer.from(changed.file, 'utf8'), needles);
    const file = inName.length > 0 ? `(the name of changed file ${index + 1})` : changed.file;
    const seen = new Set<string>();
    const add = (where: SecretHit['where'], found: Finding[]) => {
      for (const finding of found) {
        const key = `${where}|${finding.kind}|${finding.encoding}|${finding.shape ?? ''}`;
        if (seen.has(key)) continue;
        seen.add(key);
        hits.push({ file, where, ...finding });
      }
    };
    add('name', inName);
    add('content', findings(toBuffer(changed.added), needles));
  });
  return hits;
}

type Finding = Omit<SecretHit, 'file' | 'where'>;

/** The byte strings that betray one secret value, by encoding. */
interface Needles {
  plain: Buffer[];
  base64: string[];
  hex: string;
}

function secretNeedles(value: string): Needles {
  const bytes = Buffer.from(value, 'utf8');
  const plain = [bytes];
  // As it appears inside a JSON string when it holds quotes, backslashes or control characters.
  const escaped = JSON.stringify(value).slice(1, -1);
  if (escaped !== value) plain.push(Buffer.from(escaped, 'utf8'));
  return { plain, base64: base64Middles(bytes), hex: bytes.toString('hex') };
}

/**
 * The parts of the base64 encoding of `bytes` that do not depend on what surrounds it, for
 * each of the 3 byte alignments it can have inside a longer blob, in both alphabets. With k
 * bytes before it, the characters that also encode those bytes (the first ceil(8k/6)) or the
 * bytes after it (past floor(8(k+n)/6)) are left out.
 */
function base64Middles(bytes: Buffer): string[] {
  const middles = new Set<string>();
  for (const k of [0, 1, 2]) {
    const encoded = Buffer.concat([Buffer.alloc(k), bytes]).toString('base64');
    const middle = encoded.slice(Math.ceil((8 * k) / 6), Math.floor((8 * (k + bytes.length)) / 6));
    middles.add(middle);
    middles.add(middle.replace(/\+/g, '-').replace(/\//g, '_'));
  }
  return [...middles];
}

function findings(content: Buffer, needles: readonly Needles[]): Finding[] {
  const found: Finding[] = [];
  const percentDecoded = content.includes(0x25) ? percentDecode(content) : undefined;
  // Base64 is often wrapped (PEM, MIME, YAML block scalars): the blob is searched unwrapped.
  const unwrapped = stripWhitespace(content);
  const hex = hexDigits(content);
  // Decoding keeps what was plain, so the decoded view counts only for what was not found plain.
  for (const needle of needles) {
    if (needle.plain.some((form) => content.includes(form))) found.push({ kind: 'secret', encoding: 'plain' });
    else if (percentDecoded !== undefined && needle.plain.some((form) => percentDecoded.includes(form))) {
      found.push({ kind: 'secret', encoding: 'url' });
    }
    if (needle.base64.some((middle) => unwrapped.includes(middle))) found.push({ kind: 'secret', encoding: 'base64' });
    if (hex.includes(needle.hex)) found.push({ kind: 'secret', encoding: 'hex' });
  }
  const text = content.toString('latin1');
  const plainShapes = shapesIn(text);
  for (const shape of plainShapes) found.push({ kind: 'token_shape', encoding: 'plain', shape });
  if (percentDecoded !== undefined) {
    for (const shape of shapesIn(percentDecoded.toString('latin1'))) {
      if (!plainShapes.includes(shape)) found.push({ kind: 'token_shape', encoding: 'url', shape });
    }
  }
  for (const decoded of decodedRuns(unwrapped.toString('latin1'), /[A-Za-z0-9+/_-]+/g, minBase64Run, 4, 'base64')) {
    for (const shape of shapesIn(decoded)) found.push({ kind: 'token_shape', encoding: 'base64', shape });
  }
  for (const decoded of decodedRuns(hex, /[0-9a-f]+/g, minHexRun, 2, 'hex')) {
    for (const shape of shapesIn(decoded)) found.push({ kind: 'token_shape', encoding: 'hex', shape });
  }
  return found;
}

const shapeRegexes = tokenShapes.map((shape) => ({ kind: shape.kind, regex: new RegExp(shape.pattern, 'g') }));

/** The kinds of token shape in `text`, each once. */
function shapesIn(text: string): string[] {
  const kinds: string[] = [];
  for (const { kind, regex } of shapeRegexes) {
    for (const match of text.matchAll(regex)) {
      if (harmlessTokens.has(match[0]) || redactedPem.test(match[0])) continue;
      // `sk-` plus 20 characters is also a kebab-case name; real keys are random and hold digits.
      if (kind === 'openai' && !/\d/.test(match[0])) continue;
      kinds.push(kind);
      break;
    }
  }
  return kinds;
}

/**
 * Every long run of `alphabet` in `text` decoded at each of its `period` possible offsets:
 * where a blob starts inside a run is unknown when other text ran into it.
 */
function* decodedRuns(
  text: string,
  alphabet: RegExp,
  minLength: number,
  period: number,
  encoding: 'base64' | 'hex',
): Generator<string> {
  for (const match of text.matchAll(alphabet)) {
    const run = match[0];
    if (run.length < minLength) continue;
    for (let offset = 0; offset < period; offset += 1)
      yield Buffer.from(run.slice(offset), encoding).toString('latin1');
  }
}

/** `%XX` sequences (either case) decoded to their bytes; everything else kept. */
function percentDecode(content: Buffer): Buffer {
  const out = Buffer.alloc(content.length);
  let length = 0;
  for (let i = 0; i < content.length; i += 1) {
    const byte = content[i] ?? 0;
    const high = byte === 0x25 ? hexValue(content[i + 1]) : -1;
    const low = high >= 0 ? hexValue(content[i + 2]) : -1;
    if (low >= 0) {
      out[length] = high * 16 + low;
      i += 2;
    } else {
      out[length] = byte;
    }
    length += 1;
  }
  return out.subarray(0, length);
}

function hexValue(byte: number | undefined): number {
  if (byte === undefined) return -1;
  if (byte >= 0x30 && byte <= 0x39) return byte - 0x30;
  if (byte >= 0x41 && byte <= 0x46) return byte - 0x41 + 10;
  if (byte >= 0x61 && byte <= 0x66) return byte - 0x61 + 10;
  return -1;
}

function stripWhitespace(content: Buffer): Buffer {
  return Buffer.from(content.filter((byte) => byte !== 0x20 && byte !== 0x09 && byte !== 0x0a && byte !== 0x0d));
}

// What separates or prefixes the bytes of a hex dump: whitespace and line breaks (`xxd -p`
// wraps at 60 columns), `:` (`aa:bb:cc`), `,` and `0x` (a C array), `\x` (an escaped string).
const hexSeparators = /0x|\\x|[\s:,]/g;

/**
 * `content` lower-cased with every hex separator removed: a dump in any of those layouts
 * reads as one flat run. Whatever else the text holds stays, so a value is found only when
 * its hex digits follow each other with nothing but separators between them.
 */
function hexDigits(content: Buffer): string {
  return content.toString('latin1').toLowerCase().replace(hexSeparators, '');
}

function toBuffer(added: string | Uint8Array): Buffer {
  return typeof added === 'string'
    ? Buffer.from(added, 'utf8')
    : Buffer.from(added.buffer, added.byteOffset, added.byteLength);
}
