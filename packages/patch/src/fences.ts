// Fenced code blocks of a Markdown reply, found line by line as CommonMark reads them: a
// run of three or more backticks or tildes opens a block, the same character at least as
// many times on a line of its own closes it. Models indent fences inside list items, so an
// opening fence may be indented by any amount; that indentation is taken off its lines.

/** A fenced block: its info string and body, where it stands, and the line before it. */
export interface Fence {
  info: string;
  body: string;
  /** Line indexes of the opening and closing fence. */
  open: number;
  close: number;
  indent: number;
  /** The nearest non-blank line above the fence (Aider writes the file name there). */
  before: string | undefined;
}

/** What {@link findFences} found: closed blocks, and an opening fence that never closes (its block runs to the end). */
export interface Fences {
  blocks: Fence[];
  unclosed?: { open: number; info: string };
}

const opening = /^([ \t]*)(`{3,}|~{3,})(.*)$/;

/**
 * The fenced blocks of `lines`. `topLevelOnly`: only fences that start in column 0, the
 * only ones a raw diff cannot contain (its lines start with a space, `+` or `-`).
 */
export function findFences(lines: readonly string[], topLevelOnly = false): Fences {
  const blocks: Fence[] = [];
  for (let i = 0; i < lines.length; i += 1) {
    const match = opening.exec(lines[i] ?? '');
    if (match === null) continue;
    const [, lead = '', fence = '', rest = ''] = match;
    if (topLevelOnly && lead !== '') continue;
    // A backtick fence's info string holds no backtick (CommonMark): that is inline code.
    if (fence.startsWith('`') && rest.includes('`')) continue;
    const indent = lead.replaceAll('\t', '    ').length;
    const close = closing(lines, i + 1, fence);
    if (close === -1) return { blocks, unclosed: { open: i, info: rest.trim() } };
    const body = lines.slice(i + 1, close).map((line) => dedent(line, indent));
    blocks.push({
      info: rest.trim(),
      body: body.length === 0 ? '' : `${body.join('\n')}\n`,
      open: i,
      close,
      indent,
      before: lineBefore(lines, i),
    });
    i = close;
  }
  return { blocks };
}

function closing(lines: readonly string[], from: number, fence: string): number {
  const char = fence[0] ?? '`';
  for (let j = from; j < lines.length; j += 1) {
    const line = (lines[j] ?? '').trim();
    if (line.length >= fence.length && [...line].every((c) => c === char)) return j;
  }
  return -1;
}

/** Takes up to `indent` columns of leading white space off `line`. */
function dedent(line: string, indent: number): string {
  let i = 0;
  let width = 0;
  while (i < line.length && width < indent && (line[i] === ' ' || line[i] === '\t')) {
    width += line[i] === '\t' ? 4 : 1;
    i += 1;
  }
  return line.slice(i);
}

function lineBefore(lines: readonly string[], index: number): string | undefined {
  for (let j = index - 1; j >= 0; j -= 1) {
    const line = (lines[j] ?? '').trim();
    if (line !== '') return line;
  }
  return undefined;
}
