import { DiffUnreadable, readDiff } from './diff-headers.js';
import { PatchParseError } from './errors.js';
import { fileActions, gitActions, type PatchCommand, type ParsedPatch } from './types.js';

/** Largest patch the parser reads; a model's answer is far below it. */
export const maxPatchChars = 2 * 1024 * 1024;

/**
 * Parses a patch in any of the three formats (PC 000): a JSON array of commands, a unified
 * diff, or Markdown whose ```` ```lang:path ```` blocks write files and ```` ```bash ````
 * / ```` ```sh ```` blocks run commands, in order of appearance. An empty patch has no
 * commands; unknown Markdown blocks are skipped with a warning. Throws only
 * {@link PatchParseError}, whatever the input.
 */
export function parsePatch(input: unknown): ParsedPatch {
  try {
    if (typeof input !== 'string') throw new PatchParseError(`a patch is text, got ${input === null ? 'null' : typeof input}`);
    if (input.length > maxPatchChars) throw new PatchParseError(`patch too large: ${input.length} characters, the limit is ${maxPatchChars}`);
    const text = input.replace(/^\uFEFF/, '');
    const trimmed = text.trim();
    if (trimmed === '') return { format: 'empty', commands: [], warnings: [] };
    if (trimmed.startsWith('[') || trimmed.startsWith('{')) return parseJson(trimmed);
    // A git diff may have no ---/+++ at all (a rename, a mode change, a binary patch).
    const isDiff = /^diff --git /m.test(trimmed) || (/^--- \S/m.test(trimmed) && /^\+\+\+ \S/m.test(trimmed));
    if (isDiff && !trimmed.startsWith('```')) return parseDiff(text);
    return parseMarkdown(text);
  } catch (error) {
    if (error instanceof PatchParseError) throw error;
    // Anything else is a bug in a parser, not a reason to crash the worker.
    throw new PatchParseError(`patch could not be parsed: ${error instanceof Error ? error.message : String(error)}`);
  }
}

function parseJson(text: string): ParsedPatch {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    const at = /position (\d+)/.exec(String((error as Error).message))?.[1];
    throw new PatchParseError(`invalid JSON patch${at === undefined ? '' : ` at position ${at}`}: ${(error as Error).message}`, at === undefined ? undefined : Number(at));
  }
  const list = Array.isArray(raw) ? raw : [raw];
  return { format: 'json', commands: list.map((item, i) => toCommand(item, i)), warnings: [] };
}

const str = (value: unknown): value is string => typeof value === 'string';

function toCommand(item: unknown, index: number): PatchCommand {
  const fail = (why: string): never => { throw new PatchParseError(`command ${index}: ${why}`, index); };
  if (typeof item !== 'object' || item === null || Array.isArray(item)) fail('expected an object');
  const c = item as Record<string, unknown>;
  const target = c.target;
  switch (c.type) {
    case 'file_edit': {
      if (!fileActions.includes(c.action as never)) fail(`unknown file_edit action ${JSON.stringify(c.action)}; expected ${fileActions.join(', ')}`);
      if (!str(target) || target === '') fail('file_edit needs a target path');
      if (c.content !== undefined && !str(c.content)) fail('content must be text');
      const metadata = c.metadata as { destination?: unknown } | undefined;
      const destination = metadata?.destination;
      if ((c.action === 'rename' || c.action === 'copy') && !str(destination)) fail(`${String(c.action)} needs metadata.destination`);
      return {
        type: 'file_edit', action: c.action as (typeof fileActions)[number], target: target as string,
        ...(str(c.content) ? { content: c.content } : {}), ...(str(destination) ? { metadata: { destination } } : {}),
      };
    }
    case 'shell_command': {
      const command = str(c.content) ? c.content : str(target) ? target : undefined;
      if (c.action !== undefined && c.action !== 'run') fail(`unknown shell_command action ${JSON.stringify(c.action)}; expected run`);
      if (command === undefined || command.trim() === '') fail('shell_command needs the command in content');
      const env = c.env as Record<string, unknown> | undefined;
      if (env !== undefined && (typeof env !== 'object' || Object.values(env).some((v) => !str(v)))) fail('env must map names to text');
      return {
        type: 'shell_command', action: 'run', content: command as string,
        ...(env === undefined ? {} : { env: env as Record<string, string> }),
        ...(str(c.workdir) ? { workdir: c.workdir } : {}), ...(str(c.shell) ? { shell: c.shell } : {}),
      };
    }
    case 'git_operation': {
      if (!gitActions.includes(c.action as never)) fail(`unknown git_operation action ${JSON.stringify(c.action)}; expected ${gitActions.join(', ')}`);
      return { type: 'git_operation', action: c.action as (typeof gitActions)[number], ...(str(target) ? { target } : {}), ...(str(c.content) ? { content: c.content } : {}) };
    }
    default:
      return fail(`unknown command type ${JSON.stringify(c.type)}; expected file_edit, shell_command or git_operation`);
  }
}

/**
 * A unified diff is one command; its `paths` are every file it names, read as `git apply`
 * reads the headers (the engine checks the diff's text again when it applies it).
 */
function parseDiff(text: string): ParsedPatch {
  let paths: string[];
  try {
    paths = [...new Set(readDiff(text).flatMap((file) => file.paths))];
  } catch (error) {
    if (error instanceof DiffUnreadable) throw new PatchParseError(`unified diff: ${error.message}`);
    throw error;
  }
  if (paths.length === 0) throw new PatchParseError('unified diff without file headers');
  return { format: 'diff', commands: [{ type: 'diff', action: 'apply', target: paths[0] ?? '', content: text, paths }], warnings: [] };
}

const shellLangs = new Set(['bash', 'sh', 'shell', 'zsh', 'console']);

function parseMarkdown(text: string): ParsedPatch {
  const commands: PatchCommand[] = [];
  const warnings: string[] = [];
  // A fence: three or more backticks or tildes, an info string, the body, the same fence.
  const fence = /^(`{3,}|~{3,})([^\n`]*)\n([\s\S]*?)^\1[ \t]*$/gm;
  for (const match of text.matchAll(fence)) {
    const info = (match[2] ?? '').trim();
    const body = match[3] ?? '';
    const colon = info.indexOf(':');
    if (colon > 0) {
      const path = info.slice(colon + 1).trim();
      if (path === '') { warnings.push(`block "${info}" names no path; skipped`); continue; }
      commands.push({ type: 'file_edit', action: 'create', target: path, content: body });
    } else if (shellLangs.has(info.toLowerCase())) {
      if (body.trim() !== '') commands.push({ type: 'shell_command', action: 'run', content: body.trimEnd() });
    } else {
      warnings.push(`block "${info || '(no language)'}" is neither lang:path nor a shell block; skipped`);
    }
  }
  return { format: commands.length === 0 && warnings.length === 0 ? 'empty' : 'markdown', commands, warnings };
}
