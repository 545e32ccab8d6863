// Aider's SEARCH/REPLACE blocks: the file name on a line of its own, then
//   <<<<<<< SEARCH
//   lines as they are
//   =======
//   lines as they become
//   >>>>>>> REPLACE
// usually inside a fence. An empty SEARCH starts a new file or adds to the end of one.

/** One SEARCH/REPLACE block; `path` as written (the parser maps it to the workspace). */
export interface SearchReplace {
  path: string;
  search: string;
  replace: string;
}

const searchMarker = /^<{5,9} SEARCH\s*$/;
const divider = /^={5,9}\s*$/;
const replaceMarker = /^>{5,9} REPLACE\s*$/;
const fenceLine = /^\s*(`{3,}|~{3,})/;

/** True when `text` holds a SEARCH marker line. */
export const hasSearchReplace = (text: string): boolean => /^<{5,9} SEARCH\s*$/m.test(text);

/**
 * The blocks in `lines`, in order. A block's file is named on one of the three lines above
 * its SEARCH marker (fence lines skipped, `**`, backticks, `#` and a trailing `:` taken
 * off), else by `pathBefore` (the line above the fence), else by the block before it.
 * `problems`: blocks without a file name or without their end marker.
 */
export function findSearchReplace(
  lines: readonly string[],
  pathBefore?: string,
): { blocks: SearchReplace[]; problems: string[] } {
  const blocks: SearchReplace[] = [];
  const problems: string[] = [];
  let previous = pathBefore === undefined ? undefined : fileName(pathBefore);
  let after = 0;
  for (let i = 0; i < lines.length; i += 1) {
    if (!searchMarker.test(lines[i] ?? '')) continue;
    // Never a line of the block before: its REPLACE text is no file name.
    const path =
      lines
        .slice(Math.max(after, i - 3), i)
        .reverse()
        .map(fileName)
        .find((p) => p !== undefined) ?? previous;
    const mid = findFrom(lines, i + 1, divider);
    const end = mid === -1 ? -1 : findFrom(lines, mid + 1, replaceMarker);
    if (end === -1) {
      problems.push(
        `a SEARCH block${path === undefined ? '' : ` for ${path}`} has no ${mid === -1 ? '=======' : '>>>>>>> REPLACE'} line; skipped`,
      );
      break;
    }
    if (path === undefined)
      problems.push('a SEARCH/REPLACE block names no file (write the path on the line above it); skipped');
    else blocks.push({ path, search: joined(lines.slice(i + 1, mid)), replace: joined(lines.slice(mid + 1, end)) });
    previous = path;
    i = end;
    after = end + 1;
  }
  return { blocks, problems };
}

const findFrom = (lines: readonly string[], from: number, pattern: RegExp) => {
  for (let j = from; j < lines.length; j += 1) if (pattern.test(lines[j] ?? '')) return j;
  return -1;
};

const joined = (lines: readonly string[]) => (lines.length === 0 ? '' : `${lines.join('\n')}\n`);

/** The file name a line gives, when it gives one: one word, decorations off. */
export function fileName(line: string | undefined): string | undefined {
  if (
    line === undefined ||
    fenceLine.test(line) ||
    searchMarker.test(line) ||
    replaceMarker.test(line) ||
    divider.test(line)
  )
    return undefined;
  const name = line
    .trim()
    .replace(/^#+\s*/, '')
    .replace(/^(?:file|path):\s*/i, '')
    .replaceAll('*', '')
    .replaceAll('`', '')
    .replace(/:$/, '')
    .trim();
  return name === '' || /\s/.test(name) ? undefined : name;
}
