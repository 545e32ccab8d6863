// Labels of the local forge, keyed by (repo, target key such as `issue:7`).
import type { SqliteDatabase as Database } from '@codefleet/sqlite';
import { CodefleetError } from '@codefleet/core';

/** Labels on a target, sorted case-insensitively. */
export function labelsOn(db: Database, repo: string, target: string): string[] {
  const rows = db.prepare(`SELECT name FROM labels WHERE repo = ? AND target = ? ORDER BY name`).all(repo, target) as {
    name: string;
  }[];
  return rows.map((row) => row.name);
}

/** Removes then adds labels in one transaction; returns the resulting set. */
export function applyLabels(
  db: Database,
  repo: string,
  target: string,
  add: readonly string[],
  remove: readonly string[],
): string[] {
  const removing = new Set(remove.map((name) => name.toLowerCase()));
  const clash = add.find((name) => removing.has(name.toLowerCase()));
  if (clash !== undefined)
    throw new CodefleetError('forge_rejected', `label ${JSON.stringify(clash)} is both added and removed`);
  return db
    .transaction(() => {
      // The name column is COLLATE NOCASE, so both statements compare as GitHub does.
      const del = db.prepare(`DELETE FROM labels WHERE repo = ? AND target = ? AND name = ?`);
      for (const name of remove) del.run(repo, target, name);
      const ins = db.prepare(`INSERT OR IGNORE INTO labels (repo, target, name) VALUES (?, ?, ?)`);
      for (const name of add) ins.run(repo, target, name);
      return labelsOn(db, repo, target);
    })
    .immediate();
}
