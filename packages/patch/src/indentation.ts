// When a model's SEARCH lines match a file only ignoring indentation, its REPLACE lines are
// indented the model's way too: spaces where a Makefile recipe needs a tab, or a method
// quoted out of its class. Written as they are, they break the file (`missing separator`,
// an IndentationError). What the SEARCH lines show is how the model's indentation maps onto
// the file's; the new lines are indented through that map, or refused when it cannot say.

const leading = (line: string): string => /^[ \t]*/.exec(line)?.[0] ?? '';

/** A step of indentation the model wrote, and the file's step it stands for. */
interface Unit {
  model: string;
  file: string;
}

/** Puts a new line in the file's indentation; or why that cannot be known. */
export type Reindent = (line: string) => { ok: true; line: string } | { ok: false; error: string };

const describe = (indent: string): string =>
  indent === ''
    ? 'no indentation'
    : indent.includes('\t')
      ? `${indent.length} character(s) with tabs`
      : `${indent.length} space(s)`;

const refusal = (why: string) => ({
  ok: false as const,
  error: `the SEARCH lines match only ignoring indentation, and ${why}; copy the SEARCH lines with the file's exact indentation (tabs or spaces)`,
});

/**
 * How to indent new lines like the file, from the SEARCH lines (`search`) and the file's
 * lines they matched (`matched`), non-blank lines paired in order. Each model indentation
 * seen maps to the file's; a deeper or shallower one is that plus or minus whole steps,
 * a step being learnt from two levels (four spaces for a tab, say), or taken as is when
 * model and file indent with the same character.
 */
export function reindenter(
  search: readonly string[],
  matched: readonly string[],
): { ok: true; reindent: Reindent } | ReturnType<typeof refusal> {
  const map = new Map<string, string>();
  for (const [k, line] of search.entries()) {
    if (line.trim() === '') continue;
    const model = leading(line);
    const file = leading(matched[k] ?? '');
    const known = map.get(model);
    if (known !== undefined && known !== file)
      return refusal(`lines the model indented alike (${describe(model)}) are indented differently in the file`);
    map.set(model, file);
  }
  const keys = [...map.keys()].sort((a, b) => a.length - b.length);
  const unit = stepOf(keys, map);
  const fileChars = new Set([...map.values()].join(''));
  /** The file's indentation for `extra`, indentation the model wrote beyond (or short of) a level it showed. */
  const convert = (extra: string): string | undefined => {
    if (extra === '') return '';
    if (unit !== undefined && unit.model !== '' && extra === unit.model.repeat(extra.length / unit.model.length)) {
      return unit.file.repeat(extra.length / unit.model.length);
    }
    // Same character on both sides: nothing to translate.
    const chars = new Set(extra);
    return [...chars].every((c) => fileChars.size === 0 || fileChars.has(c)) &&
      (unit === undefined || unit.model === unit.file)
      ? extra
      : undefined;
  };
  const reindent: Reindent = (line) => {
    if (line.trim() === '') return { ok: true, line };
    const indent = leading(line);
    const body = line.slice(indent.length);
    const exact = map.get(indent);
    if (exact !== undefined) return { ok: true, line: exact + body };
    const below = [...keys].reverse().find((k) => indent.startsWith(k));
    const deeper = below === undefined ? undefined : convert(indent.slice(below.length));
    if (below !== undefined && deeper !== undefined) return { ok: true, line: (map.get(below) ?? '') + deeper + body };
    const above = keys.find((k) => k.startsWith(indent));
    const less = above === undefined ? undefined : convert(above.slice(indent.length));
    const base = above === undefined ? undefined : map.get(above);
    if (base !== undefined && less !== undefined && base.endsWith(less))
      return { ok: true, line: base.slice(0, base.length - less.length) + body };
    return refusal(
      `a new line's indentation (${describe(indent)}) has no counterpart in the file's, which uses ${fileChars.has('\t') ? 'tabs' : 'spaces'}`,
    );
  };
  return { ok: true, reindent };
}

/**
 * The model's step of indentation and the file's, from two levels one inside the other
 * (`    ` -> `\t`, `        ` -> `\t\t`), or from one level of spaces written for tabs or
 * the reverse (`    ` -> `\t`: a tab for four spaces).
 */
function stepOf(keys: readonly string[], map: ReadonlyMap<string, string>): Unit | undefined {
  for (let i = 1; i < keys.length; i += 1) {
    const inner = keys[i] ?? '';
    const outer = keys[i - 1] ?? '';
    const [fileInner, fileOuter] = [map.get(inner) ?? '', map.get(outer) ?? ''];
    if (inner.startsWith(outer) && fileInner.startsWith(fileOuter) && fileInner.length > fileOuter.length) {
      return { model: inner.slice(outer.length), file: fileInner.slice(fileOuter.length) };
    }
  }
  const only = keys.length === 1 ? (keys[0] ?? '') : '';
  const file = map.get(only) ?? '';
  const uniform = (s: string) => s !== '' && new Set(s).size === 1;
  // Spaces for tabs (or the reverse): one level for one. The same character on both sides
  // is more likely a shift of the whole block than another step: no step is guessed.
  if (uniform(only) && uniform(file) && only[0] !== file[0] && only.length % file.length === 0)
    return { model: only.slice(0, only.length / file.length), file: file.slice(0, 1) };
  return undefined;
}
