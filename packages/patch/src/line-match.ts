// Finding a model's lines in a file. Models copy the lines they mean to change, but not
// always exactly: trailing white space goes, indentation shifts when a block is quoted out
// of its context, and quotes and dashes come back typographic (Codex's apply_patch reads
// those as ASCII in its last pass; so does this).

type Compare = (a: string, b: string) => boolean;

/** Typographic dashes, quotes and spaces as their ASCII counterparts (Codex's `normalise`). */
export const asciiPunctuation = (s: string): string =>
  s
    .replace(/[\u2010-\u2015\u2212]/g, '-')
    .replace(/[\u2018-\u201B]/g, "'")
    .replace(/[\u201C-\u201F]/g, '"')
    .replace(/[\u00A0\u2002-\u200A\u202F\u205F\u3000]/g, ' ');

/** The passes, strictest first. Pass 2 and later ignore indentation; the last, punctuation too. */
export const passes: readonly { compare: Compare; note?: string }[] = [
  { compare: (a, b) => a === b },
  { compare: (a, b) => a.trimEnd() === b.trimEnd(), note: 'matched ignoring trailing white space' },
  { compare: (a, b) => a.trim() === b.trim(), note: 'matched ignoring indentation' },
  {
    compare: (a, b) => asciiPunctuation(a).trim() === asciiPunctuation(b).trim(),
    note: 'matched reading typographic quotes, dashes and spaces as ASCII',
  },
];
export const indentationPass = 2;
export const punctuationPass = 3;

/** A match of some lines: where, and in which pass. */
export interface Match {
  at: number;
  pass: number;
}

/**
 * Where `search` first matches in `lines`, pass by pass: looking from `from` on, and then,
 * with `wrap`, from the top.
 */
export function locate(
  lines: readonly string[],
  search: readonly string[],
  from: number,
  wrap: boolean,
): Match | undefined {
  for (const [pass, { compare }] of passes.entries()) {
    for (const start of wrap && from > 0 ? [from, 0] : [from]) {
      for (let at = start; at + search.length <= lines.length; at += 1) {
        if (search.every((line, k) => compare(lines[at + k] ?? '', line))) return { at, pass };
      }
    }
  }
  return undefined;
}

/** How many places from `from` on `search` matches in the given pass. */
export function countMatches(lines: readonly string[], search: readonly string[], from: number, pass: number): number {
  const compare = passes[pass]?.compare ?? passes[0]?.compare ?? ((a, b) => a === b);
  let count = 0;
  for (let at = from; at + search.length <= lines.length; at += 1)
    if (search.every((line, k) => compare(lines[at + k] ?? '', line))) count += 1;
  return count;
}

/** The first line from `from` on (then, with `wrap`, from the top) that is, or holds, `anchor`; -1 when none does. */
export function findAnchor(lines: readonly string[], anchor: string, from: number, wrap = true): number {
  const want = asciiPunctuation(anchor).trim();
  for (const start of wrap && from > 0 ? [from, 0] : [from]) {
    const at = lines.findIndex((line, i) => i >= start && asciiPunctuation(line).includes(want));
    if (at !== -1) return at;
  }
  return -1;
}

/**
 * Pairs the lines an edit keeps (the same in its search and its replacement) by a longest
 * common subsequence: replacement index -> search index. Past a size no edit reaches, none.
 */
export function keptLines(search: readonly string[], replace: readonly string[]): Map<number, number> {
  const pairs = new Map<number, number>();
  const n = search.length;
  const m = replace.length;
  if (n === 0 || m === 0 || n * m > 4_000_000) return pairs;
  const table = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i -= 1) {
    const row = table[i] as Uint32Array;
    const next = table[i + 1] as Uint32Array;
    for (let j = m - 1; j >= 0; j -= 1)
      row[j] = search[i] === replace[j] ? (next[j + 1] ?? 0) + 1 : Math.max(next[j] ?? 0, row[j + 1] ?? 0);
  }
  for (let i = 0, j = 0; i < n && j < m;) {
    if (search[i] === replace[j]) {
      pairs.set(j, i);
      i += 1;
      j += 1;
    } else if ((table[i + 1]?.[j] ?? 0) >= (table[i]?.[j + 1] ?? 0)) i += 1;
    else j += 1;
  }
  return pairs;
}
