// Git writes objects under temporary names and renames them into place when done; a git
// killed half-way (a fetch, an agent's `git add` of a huge file, a gc, a push received
// into a quarantine) leaves the temporary files behind, and nothing in git removes them
// short of a `git prune` the mirror may never run. In a mirror shared by every job of a
// repository they would pile up for good: one killed 2 GB write is 2 GB until someone looks.
import { lstat, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * How long a temporary file must have been left alone before it counts as a dead writer's.
 * Git keeps writing to (and so touching) the file it is filling, and the git calls of this
 * package stop after minutes; but an agent's own git in a working copy writes into the same
 * object store with no such limit, and a push being received sits in its quarantine while
 * the hooks run. An hour leaves every live writer alone; the space waits an hour at most.
 */
export const tempObjectAgeMs = 60 * 60_000;

/** Options of {@link sweepTempObjects}. */
export interface SweepTempObjectsOptions {
  /** Only what nothing has touched for this long is removed. Default {@link tempObjectAgeMs}. */
  olderThanMs?: number;
  /** The current time in ms since the epoch (tests). Default `Date.now()`. */
  now?: number;
}

/** What {@link sweepTempObjects} removed. */
export interface TempObjectsSwept {
  /** Files removed, those inside quarantine directories included. */
  files: number;
  bytes: number;
}

// The names git gives what it is still writing (object-file.c, pack-write.c, tmp-objdir.c,
// repack): loose objects, packs being indexed or repacked, and push quarantines.
const looseDir = /^[0-9a-f]{2}$/;
const looseTemp = /^tmp_obj_/;
const packTemp = /^(?:tmp_|\.tmp-)/;
const quarantine = /^tmp_objdir-/;

/**
 * Removes, in the object store of `gitDir` (a bare repository such as a mirror), the
 * temporary files and quarantine directories that nothing has modified for `olderThanMs`:
 * `objects/??/tmp_obj_*`, `objects/pack/tmp_*` (`tmp_pack_`, `tmp_idx_`, `tmp_rev_`),
 * `objects/pack/.tmp-*` and `objects/tmp_objdir-*`. A quarantine directory counts as old
 * only when everything in it is. Symbolic links are removed as links and never followed,
 * also where a directory is expected: anyone who can write into the store (an agent, via
 * its working copy) cannot point the sweep at files elsewhere. Best effort: what cannot
 * be read or removed is skipped, so this never throws for a single stubborn entry.
 */
export async function sweepTempObjects(
  gitDir: string,
  options: SweepTempObjectsOptions = {},
): Promise<TempObjectsSwept> {
  const olderThanMs = options.olderThanMs ?? tempObjectAgeMs;
  const now = options.now ?? Date.now();
  const objects = join(gitDir, 'objects');
  const candidates: string[] = [];
  for (const name of await directoryEntries(objects)) {
    if (quarantine.test(name)) candidates.push(join(objects, name));
    if (!looseDir.test(name)) continue;
    for (const entry of await directoryEntries(join(objects, name))) {
      if (looseTemp.test(entry)) candidates.push(join(objects, name, entry));
    }
  }
  for (const name of await directoryEntries(join(objects, 'pack'))) {
    if (packTemp.test(name)) candidates.push(join(objects, 'pack', name));
  }

  const swept: TempObjectsSwept = { files: 0, bytes: 0 };
  for (const path of candidates) {
    const found = await measure(path);
    if (found === undefined || now - found.newestMs < olderThanMs) continue;
    try {
      await rm(path, { recursive: true, force: true });
    } catch {
      continue;
    }
    swept.files += found.files;
    swept.bytes += found.bytes;
  }
  return swept;
}

/** Names in `dir` when it is a real directory (not a link to one); none when unreadable. */
async function directoryEntries(dir: string): Promise<string[]> {
  const info = await lstat(dir).catch(() => undefined);
  if (info === undefined || !info.isDirectory()) return [];
  return readdir(dir).catch(() => []);
}

/** Files, bytes and the newest modification time under `path`, links not followed. */
async function measure(path: string): Promise<{ files: number; bytes: number; newestMs: number } | undefined> {
  const info = await lstat(path).catch(() => undefined);
  if (info === undefined) return undefined;
  const facts = { files: info.isDirectory() ? 0 : 1, bytes: info.isFile() ? info.size : 0, newestMs: info.mtimeMs };
  if (!info.isDirectory()) return facts;
  for (const name of await directoryEntries(path)) {
    const inner = await measure(join(path, name));
    if (inner === undefined) continue;
    facts.files += inner.files;
    facts.bytes += inner.bytes;
    facts.newestMs = Math.max(facts.newestMs, inner.newestMs);
  }
  return facts;
}
