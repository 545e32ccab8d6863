import { DiffUnreadable, readDiff } from './diff-headers.js';
import { stripFromNames } from './diff-strip.js';
import { PatchParseError } from './errors.js';
import { looksLikeJson, parseJson } from './json.js';
import { parseMarkdown } from './markdown.js';
import { rawDiffSpans, type Span } from './raw-diffs.js';
import { recountHunks } from './recount.js';
import type { PatchCommand, ParsedPatch } from './types.js';

/** Largest patch the parser reads, in characters (bytes for bytes); a model's answer is far below it. */
export const maxPatchChars = 2 * 1024 * 1024;

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Parses a patch (text, or the bytes of a file) in any of its formats: a JSON
 * command list; a unified diff (git's forms, `format-patch` mail, `diff -ruN`; prose
 * around it is ignored, as git ignores it); or Markdown, whose blocks are read in order
 * (see `parseMarkdown`), with SEARCH/REPLACE blocks and `*** Begin Patch` sections. A diff
 * outside any fence is the whole input when nothing else in it edits a file, and one edit
 * among the others when something does; one inside a file block is that file's content.
 * Hunk line counts that do not fit their hunk are recounted, with a warning.
 * Bytes that are not UTF-8 can only be a diff: git applies them as they are. An empty
 * patch has no commands. Throws only {@link PatchParseError}, whatever the input.
 */
export function parsePatch(input: unknown): ParsedPatch {
  try {
    const { text, bytes } = decode(input);
    const trimmed = text.trim();
    if (trimmed === '') return { format: 'empty', commands: [], warnings: [] };
    if (bytes === undefined && looksLikeJson(trimmed)) return parseJson(trimmed);
    const spans = rawDiffSpans(text.split('\n'));
    if (spans.length > 0) {
      const mixed = bytes === undefined ? readMixed(text, spans) : undefined;
      if (mixed !== undefined) return mixed;
      return { format: 'diff', ...parseDiff(text, bytes) };
    }
    if (bytes !== undefined)
      throw new PatchParseError('the patch is not UTF-8 text, and only a unified diff may carry other bytes');
    return parseMarkdown(text, (body) => parseDiff(body, undefined));
  } catch (error) {
    if (error instanceof PatchParseError) throw error;
    // Anything else is a bug in a parser, not a reason to crash the worker.
    throw new PatchParseError(`patch could not be parsed: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** The text to read; `bytes` too when they are not UTF-8 (read then as latin1: one character a byte). */
function decode(input: unknown): { text: string; bytes?: Uint8Array } {
  if (input instanceof Uint8Array) {
    if (input.length > maxPatchChars)
      throw new PatchParseError(`patch too large: ${input.length} bytes, the limit is ${maxPatchChars}`);
    try {
      return { text: utf8.decode(input).replace(/^\uFEFF/, '') };
    } catch {
      return { text: Buffer.from(input).toString('latin1'), bytes: input };
    }
  }
  if (typeof input !== 'string')
    throw new PatchParseError(`a patch is text, got ${input === null ? 'null' : typeof input}`);
  if (input.length > maxPatchChars)
    throw new PatchParseError(`patch too large: ${input.length} characters, the limit is ${maxPatchChars}`);
  return { text: input.replace(/^\uFEFF/, '') };
}

/**
 * A reply with unfenced diffs next to other edits (SEARCH/REPLACE blocks, Begin Patch
 * sections, file or diff blocks): every one of them, in order. Undefined when the diffs are
 * the only edits: then the whole text is one diff, prose and shell blocks around it
 * ignored as git ignores them.
 */
function readMixed(text: string, spans: readonly Span[]): ParsedPatch | undefined {
  const fromSpans = new Set<PatchCommand>();
  const readSpan = (body: string) => {
    const parsed = parseDiff(body, undefined);
    for (const command of parsed.commands) fromSpans.add(command);
    return parsed;
  };
  const parsed = parseMarkdown(text, (body) => parseDiff(body, undefined), { spans, readSpan });
  const others = parsed.commands.some((c) => c.type === 'file_edit' || (c.type === 'diff' && !fromSpans.has(c)));
  return others ? parsed : undefined;
}

/**
 * A unified diff is one command; its `paths` are every file it names, read as `git apply`
 * reads the headers with the `-p` the names suggest (the engine reads the diff again, and
 * checks it, when it applies it). Hunks whose counts do not fit are recounted first.
 */
function parseDiff(text: string, bytes: Uint8Array | undefined): { commands: PatchCommand[]; warnings: string[] } {
  const source = bytes === undefined ? text : Buffer.from(bytes).toString('latin1');
  const { text: recounted, recounted: hunks } = recountHunks(source);
  const encode = (s: string) => (bytes === undefined ? s : Buffer.from(s, 'latin1'));
  let chosen = encode(recounted);
  let usedRecount = hunks > 0;
  let paths: string[];
  try {
    paths = namesIn(chosen);
  } catch (error) {
    if (!(error instanceof DiffUnreadable)) throw error;
    if (hunks === 0) throw new PatchParseError(`unified diff: ${error.message}`);
    // The recount misjudged where a hunk ends: the counts as written, if git can read them.
    try {
      chosen = encode(source);
      usedRecount = false;
      paths = namesIn(chosen);
    } catch (second) {
      if (second instanceof DiffUnreadable) throw new PatchParseError(`unified diff: ${error.message}`);
      throw second;
    }
  }
  if (paths.length === 0) throw new PatchParseError('unified diff without file headers');
  const warnings = usedRecount
    ? [`hunk line counts did not fit their hunks and were recounted (${hunks} hunk${hunks === 1 ? '' : 's'})`]
    : [];
  const content = usedRecount ? recounted : source;
  return {
    commands: [
      {
        type: 'diff',
        action: 'apply',
        target: paths[0] ?? '',
        content,
        paths,
        ...(typeof chosen === 'string' ? {} : { bytes: chosen }),
      },
    ],
    warnings,
  };
}

function namesIn(diff: string | Uint8Array): string[] {
  return [...new Set(readDiff(diff, { strip: stripFromNames(diff) }).flatMap((file) => file.paths))];
}
