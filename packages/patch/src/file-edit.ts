import { appendFile, copyFile, lstat, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { PathRefused, resolveInside } from './paths.js';
import { applyEdits } from './text-edits.js';
import type { FileAction, TextEdit } from './types.js';

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** One file edit, its paths already resolved inside `root` (absolute). */
export interface FileEdit {
  action: FileAction;
  target: string;
  content: string;
  destination?: string | undefined;
  edits?: readonly TextEdit[] | undefined;
  fileOnly?: boolean | undefined;
}

/** The path relative to the workspace root, for messages. */
export const relativeTo = (root: string, path: string): string => path.slice(root.length + 1);

/**
 * Carries out `edit` inside `root`; resolves to notes on how a `replace` matched. With
 * `check`, writes nothing: only what can be known beforehand is checked (a `replace`
 * matches, an `update` has a file). Writes never go through a symlink at the target.
 */
export async function fileEdit(edit: FileEdit, root: string, check = false): Promise<string[]> {
  const { action, target, content, destination } = edit;
  const parent = async (path: string) => {
    await mkdir(dirname(path), { recursive: true });
    // mkdir may have followed nothing new, but check again after creating: still inside.
    await resolveInside(root, relativeTo(root, path));
  };
  const refuseLink = async (path: string) => {
    const info = await lstat(path).catch(() => undefined);
    if (info?.isSymbolicLink())
      throw new PathRefused(relativeTo(root, path), 'is a symlink; it is not written through');
  };
  const isFile = (path: string) =>
    lstat(path).then(
      (s) => s.isFile(),
      () => false,
    );
  if (action === 'replace') {
    const edited = await replaced(root, target, edit.edits ?? []);
    if (check) return edited.notes;
    await parent(target);
    await refuseLink(target);
    await writeFile(target, edited.text);
    if (destination !== undefined) await moveTo(target, destination);
    return edited.notes;
  }
  if (action === 'update' && !(await isFile(target)))
    throw new Error(`update: ${relativeTo(root, target)} is not an existing file`);
  if (action === 'delete' && edit.fileOnly === true) await mustBeFile(root, target);
  if (check) return [];
  switch (action) {
    case 'create':
    case 'update':
      await parent(target);
      await refuseLink(target);
      await writeFile(target, content);
      return [];
    case 'append':
      await parent(target);
      await refuseLink(target);
      await appendFile(target, content);
      return [];
    case 'delete':
      await rm(target, { recursive: true, force: true });
      return [];
    case 'mkdir':
      await mkdir(target, { recursive: true });
      return [];
    case 'rename':
    case 'copy':
      if (!destination) throw new Error(`${action} needs a destination`);
      await parent(destination);
      await refuseLink(destination);
      if (action === 'rename') await rename(target, destination);
      else await copyFile(target, destination);
      return [];
    default:
      throw new Error(`unknown file_edit action ${String(action)}`);
  }

  async function moveTo(from: string, to: string): Promise<void> {
    await parent(to);
    await refuseLink(to);
    await rename(from, to);
  }
}

/** A delete of one file (Begin Patch's `Delete File`): never a directory and all in it, never nothing. */
async function mustBeFile(root: string, target: string): Promise<void> {
  const info = await lstat(target).catch(() => undefined);
  const name = relativeTo(root, target);
  if (info === undefined) throw new Error(`delete: ${name} does not exist`);
  if (info.isDirectory())
    throw new Error(`delete: ${name} is a directory; Delete File deletes one file, so name each file to delete`);
}

/** The target's text after the edits, or throws why they do not apply. */
async function replaced(
  root: string,
  target: string,
  edits: readonly TextEdit[],
): Promise<{ text: string; notes: string[] }> {
  const info = await lstat(target).catch(() => undefined);
  if (info !== undefined && !info.isFile())
    throw new Error(`replace: ${relativeTo(root, target)} is not a regular file`);
  let text: string | undefined;
  if (info !== undefined) {
    try {
      text = utf8.decode(await readFile(target));
    } catch {
      throw new Error(`replace: ${relativeTo(root, target)} is not UTF-8 text; change it with a diff`);
    }
  }
  const result = applyEdits(text, edits);
  if (!result.ok) throw new Error(`replace in ${relativeTo(root, target)}: ${result.error}`);
  return result;
}
