// Text helpers of the feedback renderer: sizes in UTF-8 bytes, cuts that never split a
// surrogate pair (a split pair would turn into U+FFFD in the agent's prompt).

/** UTF-8 size of `text`; lone surrogates count as U+FFFD (3 bytes), as when encoded. */
export function byteLength(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/** The longest prefix of `text` within `maxBytes` of UTF-8, never splitting a surrogate pair. */
export function cutToBytes(text: string, maxBytes: number): string {
  if (byteLength(text) <= maxBytes) return text;
  let bytes = 0;
  let end = 0;
  while (end < text.length) {
    const cp = text.codePointAt(end) ?? 0;
    const units = cp > 0xffff ? 2 : 1;
    const size = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    if (bytes + size > maxBytes) break;
    bytes += size;
    end += units;
  }
  return text.slice(0, end);
}

/** The longest suffix of `text` within `maxBytes` of UTF-8, never splitting a surrogate pair. */
export function cutToBytesFromEnd(text: string, maxBytes: number): string {
  if (byteLength(text) <= maxBytes) return text;
  let bytes = 0;
  let start = text.length;
  while (start > 0) {
    let next = start - 1;
    const low = text.charCodeAt(next);
    if (low >= 0xdc00 && low <= 0xdfff && next > 0) {
      const high = text.charCodeAt(next - 1);
      if (high >= 0xd800 && high <= 0xdbff) next -= 1;
    }
    const size = byteLength(text.slice(next, start));
    if (bytes + size > maxBytes) break;
    bytes += size;
    start = next;
  }
  return text.slice(start);
}

/** The first `maxChars` UTF-16 units of `text`, one fewer when that would split a surrogate pair. */
export function headChars(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const last = text.charCodeAt(maxChars - 1);
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? maxChars - 1 : maxChars);
}

/** The last `maxChars` UTF-16 units of `text`, one fewer when that would split a surrogate pair. */
export function tailChars(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const start = text.length - maxChars;
  const first = text.charCodeAt(start);
  return text.slice(first >= 0xdc00 && first <= 0xdfff ? start + 1 : start);
}
