import { CodefleetError } from '@codefleet/core';
import { splitNul } from './git.js';
import type { OpenCopy } from './open-copy.js';
import { listingBytes } from './working-copy.js';

/** The most a file's diff may add and still be scanned for secrets (over it: not pushed). */
const maxScannedBytes = 32 * 1024 * 1024;

/** See `Workspace.addedContent`. */
export async function addedContent(
  copy: OpenCopy,
  options: { maxFiles?: number },
): Promise<{ file: string; added: string }[]> {
  await copy.restore();
  const range = [copy.forkSha, 'HEAD'];
  const files = splitNul(
    await copy.ctx.git.stdout(['diff', '--name-only', '-z', '--no-renames', ...range, '--'], {
      cwd: copy.paths.dir,
      maxBytes: listingBytes,
    }),
  );
  const maxFiles = options.maxFiles ?? 5_000;
  // What cannot be scanned is not pushed: a cap that skipped the rest would be a way past the scan.
  if (files.length > maxFiles) {
    throw new CodefleetError(
      'workspace_failed',
      `the change touches ${files.length} files; at most ${maxFiles} are scanned for secrets before a push, so it is not pushed`,
      { verdict: 'permanent' },
    );
  }
  const out: { file: string; added: string }[] = [];
  for (const file of files) out.push({ file, added: await addedLines(copy, range, file) });
  return out;
}

async function addedLines(copy: OpenCopy, range: readonly string[], file: string): Promise<string> {
  // --text: a binary file's bytes are scanned too; -U0: only what the change adds.
  const diff = await copy.ctx.git
    .stdout(
      ['diff', '--no-color', '--no-ext-diff', '--no-textconv', '--text', '-U0', ...range, '--', `:(literal)${file}`],
      { cwd: copy.paths.dir, maxBytes: maxScannedBytes },
    )
    .catch((error: unknown) => {
      if ((error as { message?: string }).message?.includes('printed more than') !== true) throw error;
      throw new CodefleetError(
        'workspace_failed',
        `${file} adds more than ${maxScannedBytes / 1024 / 1024} MiB, more than is scanned for secrets before a push; it is not pushed`,
        { verdict: 'permanent' },
      );
    });
  return diff
    .split('\n')
    .filter((line) => line.startsWith('+') && !line.startsWith('+++ '))
    .map((line) => line.slice(1))
    .join('\n');
}
