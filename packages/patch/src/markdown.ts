import { isAiderUdiff, parseAiderUdiff } from './aider-udiff.js';
import { hasBeginPatch, parseBeginPatch } from './begin-patch.js';
import { PatchParseError } from './errors.js';
import { namedBlock, refuseCutShort, refuseElided } from './file-blocks.js';
import { findFences, type Fence, type Fences } from './fences.js';
import { workspacePath } from './json.js';
import type { Span } from './raw-diffs.js';
import { findSearchReplace, hasSearchReplace, type SearchReplace } from './search-replace.js';
import type { PatchCommand, ParsedPatch } from './types.js';

/** Reads a unified diff; the parser's own, passed in so this module does not import it back. */
export type DiffReader = (text: string) => { commands: PatchCommand[]; warnings: string[] };

const shellLangs = new Set(['bash', 'sh', 'shell', 'zsh']);
/** Transcripts of a terminal: prompts and output, never a script to run. */
const transcriptLangs = new Set(['console', 'shell-session', 'sh-session', 'terminal', 'shellsession', 'pwsh-session']);
const diffLangs = new Set(['diff', 'patch', 'udiff', 'git-diff']);

/** `lang:path rest`: the language and the first token after the colon (quotes allowed); no path without a colon. */
function splitInfo(info: string): { lang: string; path?: string } {
  const colon = info.indexOf(':');
  const word = info.split(/\s/)[0] ?? '';
  if (colon <= 0 || colon > word.length) return { lang: word.toLowerCase() };
  const rest = info.slice(colon + 1).trimStart();
  const quoted = /^(["'])(.*?)\1/.exec(rest);
  return { lang: info.slice(0, colon).toLowerCase(), path: quoted ? (quoted[2] ?? '') : (rest.split(/\s/)[0] ?? '') };
}

/**
 * Reads a Markdown reply, in order of appearance: ```` ```lang:path ```` blocks write the
 * file `path` with the block as its content (whatever it shows, a diff included), and so
 * do blocks whose path is in `title=`, on the line above or in a first-line comment (see
 * `namedBlock`), unless they hold placeholders for lines left out (refused);
 * ```` ```diff ```` blocks (or unlabelled ones holding a diff) are diffs, Aider's udiff
 * (hunks without line numbers) among them; ```` ```bash ````
 * and ```` ```sh ```` blocks run; SEARCH/REPLACE blocks and `*** Begin Patch` sections,
 * fenced or not, edit files. ```` ```console ```` transcripts never run. Fences indented in
 * list items count. Anything else is skipped with a warning, and so is a block never closed.
 */
export function parseMarkdown(text: string, readDiff: DiffReader, raw?: RawDiffs): ParsedPatch {
  const original = text.split('\n');
  const {
    lines,
    spans,
    fences: { blocks, unclosed },
  } = layout(original, raw?.spans ?? []);
  const found: { line: number; commands: PatchCommand[] }[] = [];
  const warnings: string[] = [];
  const kinds = new Set<'blocks' | 'search-replace' | 'begin-patch'>();

  // Between the blocks: raw SEARCH/REPLACE blocks and Begin Patch sections.
  const bounds = [
    ...blocks.map((b) => [b.open, b.close] as const),
    [unclosed?.open ?? lines.length, lines.length] as const,
  ];
  let from = 0;
  for (const [open, close] of bounds) {
    const segment = lines.slice(from, open);
    if (hasBeginPatch(segment.join('\n'))) {
      found.push({ line: from, commands: parseBeginPatch(segment, from) });
      kinds.add('begin-patch');
    } else if (hasSearchReplace(segment.join('\n'))) {
      const { blocks: edits, problems } = findSearchReplace(segment);
      found.push({ line: from, commands: edits.map(replaceCommand) });
      warnings.push(...problems);
      kinds.add('search-replace');
    }
    from = close + 1;
  }
  // A reply with unfenced diffs among its edits is no single format.
  if (spans.length > 0) kinds.add('blocks');
  for (const span of spans) {
    const body = `${original.slice(span.start, span.end).join('\n')}\n`;
    found.push({
      line: span.start,
      commands: diffAt(`diff at line ${span.start + 1}`, body, raw?.readSpan ?? readDiff, warnings),
    });
  }
  for (const block of blocks) {
    const commands = readBlock(block, readDiff, warnings);
    if (commands.length > 0) found.push({ line: block.open, commands });
  }
  if (blocks.length > 0) kinds.add('blocks');
  if (unclosed !== undefined) {
    warnings.push(
      `the block opened at line ${unclosed.open + 1} ("${unclosed.info || 'no language'}") is never closed (a reply cut off?); skipped`,
    );
  }
  const commands = found.sort((a, b) => a.line - b.line).flatMap((f) => f.commands);
  if (commands.length === 0 && warnings.length === 0) {
    warnings.push('no patch in it: no diff, no fenced block, no SEARCH/REPLACE block and no *** Begin Patch section');
  }
  const only = kinds.size === 1 ? [...kinds][0] : undefined;
  return { format: only === 'search-replace' || only === 'begin-patch' ? only : 'markdown', commands, warnings };
}

/** Unfenced diffs the caller found in the reply, and how to read one. */
export interface RawDiffs {
  spans: readonly Span[];
  readSpan: DiffReader;
}

/**
 * The reply's lines with its unfenced diffs blanked out (their lines form no fence, no
 * SEARCH block), and its fences. A diff that turns out to lie inside a fence (one indented
 * in a list item) is that block's and is not read on its own.
 */
function layout(
  original: readonly string[],
  all: readonly Span[],
): { lines: string[]; spans: readonly Span[]; fences: Fences } {
  const mask = (spans: readonly Span[]) =>
    original.map((line, i) => (spans.some((s) => i >= s.start && i < s.end) ? '' : line));
  let lines = mask(all);
  let fences = findFences(lines);
  const spans = all.filter((s) => !fences.blocks.some((b) => b.open < s.start && s.start < b.close));
  if (spans.length < all.length) {
    lines = mask(spans);
    fences = findFences(lines);
  }
  return { lines, spans, fences };
}

/** A diff's commands, its warnings and errors said with where it stands. */
function diffAt(where: string, body: string, readDiff: DiffReader, warnings: string[]): PatchCommand[] {
  try {
    const parsed = readDiff(body);
    warnings.push(...parsed.warnings.map((w) => `${where}: ${w}`));
    return parsed.commands;
  } catch (error) {
    if (error instanceof PatchParseError) throw new PatchParseError(`${where}: ${error.message}`);
    throw error;
  }
}

const replaceCommand = (edit: SearchReplace): PatchCommand => ({
  type: 'file_edit',
  action: 'replace',
  target: workspacePath(edit.path),
  edits: [{ search: edit.search, replace: edit.replace }],
});

const isDiffText = (body: string) => /^(diff --git |--- \S.*\n\+\+\+ \S.*\n@@ -)/m.test(body);

function readBlock(block: Fence, readDiff: DiffReader, warnings: string[]): PatchCommand[] {
  const { lang, path } = splitInfo(block.info);
  const where = `block at line ${block.open + 1} ("${block.info || 'no language'}")`;
  const asDiff = () => diffAt(where, block.body, readDiff, warnings);
  if (path !== undefined) {
    if (path === '') {
      warnings.push(`${where} names no path; skipped`);
      return [];
    }
    // ```diff:src/a.ts holding a diff is that diff, not src/a.ts's new content.
    if (diffLangs.has(lang) && !/\.(diff|patch)$/i.test(path) && isDiffText(block.body)) return asDiff();
    refuseElided(where, path, block.body);
    refuseCutShort(where, path, block.body);
    return [{ type: 'file_edit', action: 'create', target: workspacePath(path), content: block.body }];
  }
  if (hasSearchReplace(block.body)) {
    const { blocks, problems } = findSearchReplace(block.body.split('\n'), block.before);
    warnings.push(...problems.map((p) => `${where}: ${p}`));
    return blocks.map(replaceCommand);
  }
  if (hasBeginPatch(block.body)) return parseBeginPatch(block.body.split('\n'), block.open + 1);
  if ((diffLangs.has(lang) || lang === '') && isAiderUdiff(block.body))
    return diffAt(where, block.body, (body) => ({ commands: parseAiderUdiff(body), warnings: [] }), warnings);
  if (diffLangs.has(lang) || (lang === '' && isDiffText(block.body))) return asDiff();
  const named = transcriptLangs.has(lang) ? undefined : namedBlock(block);
  if (named !== undefined) {
    refuseElided(where, named.path, named.body);
    refuseCutShort(where, named.path, named.body);
    if (named.note !== undefined) warnings.push(`${where}: ${named.note}`);
    return [{ type: 'file_edit', action: 'create', target: workspacePath(named.path), content: named.body }];
  }
  if (shellLangs.has(lang))
    return block.body.trim() === '' ? [] : [{ type: 'shell_command', action: 'run', content: block.body.trimEnd() }];
  if (transcriptLangs.has(lang)) {
    warnings.push(`${where} is a terminal transcript, not a script; not run`);
    return [];
  }
  warnings.push(`${where} is neither lang:path, a diff nor a shell block; skipped`);
  return [];
}
