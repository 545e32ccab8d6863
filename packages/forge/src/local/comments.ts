// Comments of the local forge, keyed by (repo, target key such as `pull:7`).
import type { SqliteDatabase as Database } from '@codefleet/sqlite';
import { parseMarker } from '../marker.js';
import type { Comment } from '../port.js';

interface CommentRow {
  id: number;
  body: string;
  created_at: string;
  updated_at: string;
}

function toComment(row: CommentRow): Comment {
  const marker = parseMarker(row.body);
  return {
    id: row.id,
    body: row.body,
    ...(marker === undefined ? {} : { marker }),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/**
 * Creates the comment for (repo, target, marker) or rewrites its body. Atomic across
 * processes: an IMMEDIATE transaction plus a unique index on the marker.
 */
export function upsertComment(
  db: Database,
  repo: string,
  target: string,
  marker: string,
  storedBody: string,
  now: string,
): { id: number; created: boolean } {
  return db
    .transaction(() => {
      const existing = db
        .prepare(`SELECT id, body FROM comments WHERE repo = ? AND target = ? AND marker = ?`)
        .get(repo, target, marker) as { id: number; body: string } | undefined;
      if (existing !== undefined) {
        // An unchanged body is not rewritten, so updated_at keeps meaning "last real change".
        if (existing.body !== storedBody)
          db.prepare(`UPDATE comments SET body = ?, updated_at = ? WHERE id = ?`).run(storedBody, now, existing.id);
        return { id: existing.id, created: false };
      }
      const info = db
        .prepare(`INSERT INTO comments (repo, target, marker, body, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)`)
        .run(repo, target, marker, storedBody, now, now);
      return { id: Number(info.lastInsertRowid), created: true };
    })
    .immediate();
}

/** Comments on a target, oldest first. */
export function commentsOn(db: Database, repo: string, target: string): Comment[] {
  const rows = db
    .prepare(`SELECT id, body, created_at, updated_at FROM comments WHERE repo = ? AND target = ? ORDER BY id`)
    .all(repo, target) as CommentRow[];
  return rows.map(toComment);
}
