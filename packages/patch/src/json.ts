import { PatchParseError } from './errors.js';
import { fileActions, gitActions, type PatchCommand, type ParsedPatch, type TextEdit } from './types.js';

/**
 * A path as the patch gives it, made relative to the workspace: PicoClaw's commands name
 * files from the worker's workspace root as `/workspace/...`. Every other path is left as
 * written; the engine refuses what leaves the workspace when it applies the command.
 */
export function workspacePath(path: string): string {
  if (path === '/workspace' || path === '/workspace/') return '.';
  return path.startsWith('/workspace/') ? path.slice('/workspace/'.length) : path;
}

/** Does the text start like a JSON patch (an array of objects, or one object), not a Markdown link? */
export const looksLikeJson = (text: string): boolean => /^(\[\s*(\{|\]|$)|\{\s*("|\}|$))/.test(text);

/** A JSON patch: one command object, or an array of them. */
export function parseJson(text: string): ParsedPatch {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    const at = /position (\d+)/.exec(String((error as Error).message))?.[1];
    throw new PatchParseError(
      `invalid JSON patch${at === undefined ? '' : ` at position ${at}`}: ${(error as Error).message}`,
      at === undefined ? undefined : Number(at),
    );
  }
  const list = Array.isArray(raw) ? raw : [raw];
  return { format: 'json', commands: list.map((item, i) => toCommand(item, i)), warnings: [] };
}

const str = (value: unknown): value is string => typeof value === 'string';

function toCommand(item: unknown, index: number): PatchCommand {
  const fail = (why: string): never => {
    throw new PatchParseError(`command ${index}: ${why}`, index);
  };
  if (typeof item !== 'object' || item === null || Array.isArray(item)) fail('expected an object');
  const c = item as Record<string, unknown>;
  const target = c.target;
  switch (c.type) {
    case 'file_edit': {
      if (!fileActions.includes(c.action as never))
        fail(`unknown file_edit action ${JSON.stringify(c.action)}; expected ${fileActions.join(', ')}`);
      if (!str(target) || target === '') fail('file_edit needs a target path');
      if (c.content !== undefined && !str(c.content)) fail('content must be text');
      const action = c.action as (typeof fileActions)[number];
      const metadata = c.metadata as { destination?: unknown } | undefined;
      // PicoClaw writes a rename's or copy's destination in `content`.
      const moves = action === 'rename' || action === 'copy';
      const destination = str(metadata?.destination)
        ? metadata.destination
        : moves && str(c.content) && c.content.trim() !== ''
          ? c.content.trim()
          : undefined;
      if (moves && destination === undefined)
        fail(`${action} needs the destination path, in metadata.destination or in content`);
      const edits = action === 'replace' ? readEdits(c, fail) : undefined;
      return {
        type: 'file_edit',
        action,
        target: workspacePath(target as string),
        ...(str(c.content) && !moves && action !== 'replace' ? { content: c.content } : {}),
        ...(destination === undefined ? {} : { metadata: { destination: workspacePath(destination) } }),
        ...(edits === undefined ? {} : { edits }),
      };
    }
    case 'shell_command': {
      const command = str(c.content) ? c.content : str(target) ? target : undefined;
      if (c.action !== undefined && c.action !== 'run')
        fail(`unknown shell_command action ${JSON.stringify(c.action)}; expected run`);
      if (command === undefined || command.trim() === '') fail('shell_command needs the command in content');
      const env = c.env as Record<string, unknown> | undefined;
      if (env !== undefined && (typeof env !== 'object' || Object.values(env).some((v) => !str(v))))
        fail('env must map names to text');
      return {
        type: 'shell_command',
        action: 'run',
        content: command as string,
        ...(env === undefined ? {} : { env: env as Record<string, string> }),
        ...(str(c.workdir) ? { workdir: workspacePath(c.workdir) } : {}),
        ...(str(c.shell) ? { shell: c.shell } : {}),
      };
    }
    case 'git_operation': {
      if (!gitActions.includes(c.action as never))
        fail(`unknown git_operation action ${JSON.stringify(c.action)}; expected ${gitActions.join(', ')}`);
      return {
        type: 'git_operation',
        action: c.action as (typeof gitActions)[number],
        ...(str(target) ? { target: workspacePath(target) } : {}),
        ...(str(c.content) ? { content: c.content } : {}),
      };
    }
    default:
      return fail(`unknown command type ${JSON.stringify(c.type)}; expected file_edit, shell_command or git_operation`);
  }
}

/** `edits: [{search, replace, anchor?}]`, or one edit as `search` and `replace` on the command. */
function readEdits(c: Record<string, unknown>, fail: (why: string) => never): TextEdit[] {
  const list = c.edits === undefined ? [{ search: c.search, replace: c.replace }] : c.edits;
  if (!Array.isArray(list) || list.length === 0) fail('replace needs edits: [{ "search": ..., "replace": ... }]');
  return (list as unknown[]).map((edit, i) => {
    const e = (typeof edit === 'object' && edit !== null ? edit : {}) as Record<string, unknown>;
    if (!str(e.search) || !str(e.replace)) fail(`replace edit ${i}: search and replace must be text`);
    if (e.anchor !== undefined && !str(e.anchor)) fail(`replace edit ${i}: anchor must be text`);
    return { search: e.search as string, replace: e.replace as string, ...(str(e.anchor) ? { anchor: e.anchor } : {}) };
  });
}
