import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { lstat, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CodefleetError } from '@codefleet/core';
import { splitNul, type Git } from './git.js';

// What is pushed must be byte for byte what verification ran on. Git rewrites content on
// its way into a blob (and out of it on checkout) when attributes ask it to: `ident`
// collapses `$Id: …$`, `text`/`eol`/`crlf` convert line ends, `filter` runs a clean command
// (git-lfs with an operator's global config), `working-tree-encoding` re-encodes. An agent
// controls the repository's `.gitattributes`, so it could make the pushed blob differ from
// the verified file. `$GIT_DIR/info/attributes` has the highest precedence of every
// attributes file (above any in-tree `.gitattributes` and their macros), and git reads it
// from the common dir, so the mirror's one file covers every working copy's checkout,
// diff and add. `--attr-source` (git 2.40) would do the same per call; this works on 2.39.
// `diff` is left as the repository says: the secret scan reads diffs with `--text`,
// `--no-textconv` and `--no-ext-diff`, which override it, and `-diff` here would make
// a changed file read as "Binary files differ" elsewhere.
const rawAttributes = '* -text -crlf -ident -filter -eol -working-tree-encoding\n';

/**
 * Writes the mirror's `info/attributes` so that no attribute converts content between the
 * copies' files and the blobs (see above). Resolves to true when it had to be (re)written:
 * a new mirror, or one whose file an agent changed (without a sandbox it can).
 */
export async function keepContentRaw(mirrorDir: string): Promise<boolean> {
  const file = join(mirrorDir, 'info', 'attributes');
  if ((await readFile(file, 'utf8').catch(() => undefined)) === rawAttributes) return false;
  await mkdir(join(mirrorDir, 'info'), { recursive: true });
  await writeFile(file, rawAttributes);
  return true;
}

/**
 * Checks that HEAD's commit stored every regular file it changed exactly as the file
 * reads in the copy (its blob id is the hash of the raw bytes, as `git hash-object
 * --no-filters` computes it). {@link keepContentRaw} makes this hold; this proves it for
 * the commit about to be pushed, whatever wrote the attributes file since.
 *
 * @throws {CodefleetError} `workspace_failed` (permanent) naming the first file whose blob differs.
 */
export async function refuseConvertedBlobs(git: Git, dir: string, signal?: AbortSignal): Promise<void> {
  // Tree against tree: no attribute or filter is read. A root commit is compared with nothing.
  const raw = await git.stdout(['diff-tree', '-r', '-z', '--no-renames', '--no-commit-id', '--root', 'HEAD'], {
    cwd: dir,
    maxBytes: 256 * 1024 * 1024,
  });
  const fields = splitNul(raw);
  for (let i = 0; i + 1 < fields.length; i += 2) {
    // `:<old mode> <new mode> <old sha> <new sha> <status>`, then the path.
    const [, newMode, , newSha] = (fields[i] ?? '').slice(1).split(' ');
    const file = fields[i + 1] ?? '';
    if (signal?.aborted) throw new CodefleetError('cancelled', 'stopped while checking the commit');
    if ((newMode !== '100644' && newMode !== '100755') || newSha === undefined) continue;
    const hashed = await blobId(join(dir, file), newSha.length === 64 ? 'sha256' : 'sha1');
    if (hashed !== newSha) {
      throw new CodefleetError(
        'workspace_failed',
        `the commit stores ${file} with other bytes than the file that was verified (git converted it: attributes or a filter); nothing was pushed`,
        {
          verdict: 'permanent',
          details: { file },
        },
      );
    }
  }
}

/** The git object id of the file at `path` stored as is: the hash of `blob <size>\0<bytes>`. */
async function blobId(path: string, algorithm: 'sha1' | 'sha256'): Promise<string | undefined> {
  const info = await lstat(path).catch(() => undefined);
  if (!info?.isFile()) return undefined;
  const hash = createHash(algorithm).update(`blob ${info.size}\0`);
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}
