/** Default size of a kept output tail: enough for a compiler error, small in a record. */
export const defaultTailBytes = 8192;

/** UTF-8 size of one code point; a lone surrogate is encoded as U+FFFD, also 3 bytes. */
function codePointBytes(cp: number): number {
  if (cp < 0x80) return 1;
  if (cp < 0x800) return 2;
  if (cp < 0x10000) return 3;
  return 4;
}

/** Number of bytes `text` takes as UTF-8 (lone surrogates count as U+FFFD, like TextEncoder). */
export function utf8ByteLength(text: string): number {
  let bytes = 0;
  for (const ch of text) bytes += codePointBytes(ch.codePointAt(0) ?? 0);
  return bytes;
}

const isHighSurrogate = (unit: number) => unit >= 0xd800 && unit <= 0xdbff;
const isLowSurrogate = (unit: number) => unit >= 0xdc00 && unit <= 0xdfff;

/** The longest start of `text` within `maxBytes` of UTF-8, never splitting a surrogate pair. */
export function utf8Prefix(text: string, maxBytes: number): string {
  let bytes = 0;
  let end = 0;
  while (end < text.length) {
    const cp = text.codePointAt(end) ?? 0;
    const size = codePointBytes(cp);
    if (bytes + size > maxBytes) break;
    bytes += size;
    end += cp > 0xffff ? 2 : 1;
  }
  return text.slice(0, end);
}

/** The longest end of `text` within `maxBytes` of UTF-8, never splitting a surrogate pair. */
export function utf8Suffix(text: string, maxBytes: number): string {
  let bytes = 0;
  let start = text.length;
  while (start > 0) {
    let next = start - 1;
    if (isLowSurrogate(text.charCodeAt(next)) && next > 0 && isHighSurrogate(text.charCodeAt(next - 1))) next -= 1;
    const size = codePointBytes(text.codePointAt(next) ?? 0);
    if (bytes + size > maxBytes) break;
    bytes += size;
    start = next;
  }
  return text.slice(start);
}

/** Options of {@link boundTail}. */
export interface BoundTailOptions {
  /**
   * Bytes of output already dropped before `text` starts (a runner that keeps only a
   * window of a long output): counted in the marker, so it says what was really lost.
   */
  dropped?: number;
}

// The marker boundTail writes. Read back when a bounded tail is bounded again (the process
// runner's tail, then the run record's), so the second marker adds up both cuts instead of
// counting only the first marker it dropped ("truncated 27 bytes" for 62 KB lost).
const markerPattern = /^…\[truncated (\d{1,3}(?:,\d{3}){1,5}|\d{1,16}) bytes\]\n/;

/** `62113` as `62,113`: fixed grouping, whatever the host's locale. */
function groupDigits(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

function marker(dropped: number): string {
  return `…[truncated ${groupDigits(dropped)} bytes]\n`;
}

/**
 * Bytes a tail made by {@link boundTail} says were dropped before it, and the kept text
 * after its marker; `{ dropped: 0, kept: text }` when `text` has no marker. An output that
 * itself starts with a marker line is read the same way: it could only misstate the count.
 */
export function splitTailMarker(text: string): { dropped: number; kept: string } {
  const match = markerPattern.exec(text);
  if (match === null) return { dropped: 0, kept: text };
  const dropped = Number((match[1] ?? '0').replace(/,/g, ''));
  return Number.isSafeInteger(dropped) ? { dropped, kept: text.slice(match[0].length) } : { dropped: 0, kept: text };
}

/**
 * Keeps the end of `text` within `maxBytes` of UTF-8, cutting only between code points,
 * and prefixes `…[truncated N bytes]\n` when something was dropped. The end is kept
 * because that is where a compiler or test runner prints the failure. The marker is not
 * counted in `maxBytes`. A `text` that is itself a bounded tail (it starts with a marker)
 * is bounded again by its kept part, and N counts both cuts; so does `options.dropped`.
 */
export function boundTail(text: string, maxBytes: number = defaultTailBytes, options: BoundTailOptions = {}): string {
  if (!Number.isFinite(maxBytes) || maxBytes < 0)
    throw new RangeError(`maxBytes must be a non-negative number, got ${maxBytes}`);
  const before = splitTailMarker(text);
  const earlier = before.dropped + Math.max(0, Math.floor(options.dropped ?? 0));
  const body = before.kept;
  const total = utf8ByteLength(body);
  if (total <= maxBytes) {
    if (earlier === before.dropped) return text;
    return `${marker(earlier)}${body}`;
  }
  const kept = utf8Suffix(body, maxBytes);
  return `${marker(earlier + total - utf8ByteLength(kept))}${kept}`;
}

const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' });
/** How far before a cut to look for the start of its grapheme: a cluster longer than this (zalgo) is cut inside. */
const graphemeWindow = 64;

/**
 * The longest start of `text` of at most `maxChars` UTF-16 units that ends between two
 * graphemes (user-perceived characters, `Intl.Segmenter`): an emoji with its skin tone or
 * a family joined by ZWJ, a flag, a letter with combining accents is kept whole or not at
 * all. Only the window before the cut is segmented, so a megabyte costs no more than a line.
 */
export function graphemePrefix(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  if (maxChars <= 0) return '';
  const from = Math.max(0, maxChars - graphemeWindow);
  let end = from;
  for (const { index } of graphemes.segment(text.slice(from, maxChars + graphemeWindow))) {
    if (from + index > maxChars) break;
    end = from + index;
  }
  // A cluster longer than the window: cut inside it, but never inside a surrogate pair.
  if (end === from && from > 0) end = isHighSurrogate(text.charCodeAt(maxChars - 1)) ? maxChars - 1 : maxChars;
  return text.slice(0, end);
}

/**
 * The last `maxChars` UTF-16 units of `text`, one fewer when that would split a surrogate
 * pair. Output tails are cut so: the end is where a failure is printed.
 */
export function charSuffix(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  if (maxChars <= 0) return '';
  const start = text.length - maxChars;
  return text.slice(isLowSurrogate(text.charCodeAt(start)) ? start + 1 : start);
}

/**
 * Cuts `text` to at most `maxChars` UTF-16 units from the start, never splitting a
 * grapheme ({@link graphemePrefix}), adding `…` when cut (the ellipsis is counted).
 */
export function truncateHead(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  if (maxChars <= 0) return '';
  return `${graphemePrefix(text, maxChars - 1)}…`;
}

/**
 * Keeps the last `maxChars` UTF-16 units of `text`, never splitting a surrogate pair,
 * with a `…` prefix when cut (counted).
 */
export function truncateTail(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  if (maxChars <= 0) return '';
  return `…${charSuffix(text, maxChars - 1)}`;
}

// Bounded repetitions: with `*` a megabyte of letters made this regex quadratic (each
// start position re-scanned the rest of the text looking for `://`).
const urlCredentials = /\b([a-z][a-z0-9+.-]{0,31}:\/\/)[^/@\s]{1,1024}@/gi;

/** Replaces `user:token@` in any URL inside `text` with `***@` so it can be logged. */
export function redactUrlCredentials(text: string): string {
  return text.replace(urlCredentials, '$1***@');
}

/** Default number of characters of a value shown in an error message. */
const defaultPreviewChars = 80;

/**
 * Renders any value as short JSON for an error message: credentials in URLs redacted,
 * cut to `maxChars`, and never throwing (getters, cycles, BigInt, symbols).
 */
export function previewValue(value: unknown, maxChars: number = defaultPreviewChars): string {
  let rendered: string;
  try {
    if (value === undefined) rendered = 'undefined';
    else if (typeof value === 'bigint') rendered = `${value}n`;
    else if (typeof value === 'function') rendered = '[function]';
    else if (typeof value === 'symbol') rendered = value.toString();
    else if (typeof value === 'number' && !Number.isFinite(value)) rendered = String(value);
    // Redact before cutting: a cut could drop the `@` that marks the credentials.
    else if (typeof value === 'string')
      rendered = JSON.stringify(truncateHead(redactUrlCredentials(value), maxChars + 1));
    else rendered = redactUrlCredentials(JSON.stringify(value) ?? String(value));
  } catch {
    rendered = '[unrenderable value]';
  }
  return truncateHead(rendered, maxChars);
}

/** Default length of a one-line reason summary. */
export const defaultSummaryChars = 200;

// A label that introduces what follows ("Last feedback:", "Its last output:"): the last
// sentence of a line when it ends with a colon.
const trailingLabel = /(?:^|(?<=[.!?;])\s*)[^.!?;\n]*:\s*$/;

/** `line` without a trailing label, and whether there was one. */
function dropTrailingLabel(line: string): { text: string; labelled: boolean } {
  const match = trailingLabel.exec(line);
  if (match === null) return { text: line.trim(), labelled: false };
  return { text: line.slice(0, match.index).trim(), labelled: true };
}

/**
 * A one-line summary of a multi-line failure reason, for a list: the first line, and when
 * it ends in a label ("… still failing after 3 attempts. Last feedback:") the label is
 * dropped and the first meaningful line under it is added after ` — ` (once: what comes
 * under a second label is output, not a reason). Never ends in a dangling label; cut to
 * `maxChars` with `…`. Line breaks and runs of blanks become one space.
 */
export function summarizeReason(reason: string, maxChars: number = defaultSummaryChars): string {
  const lines = reason
    .split(/\r\n|[\n\r\u0085\u2028\u2029]/)
    .map((l) => l.replace(/\s+/g, ' ').trim())
    .filter((l) => l !== '');
  const parts: string[] = [];
  for (const line of lines) {
    const { text, labelled } = dropTrailingLabel(line);
    if (text !== '') parts.push(text);
    // Stop at the first line that stands alone, or once a second piece is in.
    if (!labelled || parts.length >= 2) break;
  }
  // "… after 3 attempts — Step test failed": the dash ends the first sentence.
  const summary = parts.map((p, i) => (i < parts.length - 1 ? p.replace(/[.;]$/, '') : p)).join(' — ');
  // Only labels (a reason that is just "Last feedback:"): the first one, without its colon.
  const fallback = (lines[0] ?? '').replace(/[\s:]+$/, '');
  return truncateHead(summary === '' ? fallback : summary, maxChars);
}
