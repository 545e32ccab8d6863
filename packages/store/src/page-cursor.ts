import { CodefleetError } from '@codefleet/core';

// Both stores order a page by (created ms, run id), newest first, ties by run id compared as
// bytes (SQLite's BINARY collation, Redis's order of equal scores): a cursor is the last row's
// pair, so the next page starts right after it whatever was saved meanwhile.

/** The run a page starts after. */
export interface PageCursor {
  /** Its `created_at` in epoch ms. */
  ms: number;
  runId: string;
}

/** The opaque `nextCursor` of a page ending with this run. */
export function writeCursor(cursor: PageCursor): string {
  return Buffer.from(`${cursor.ms}:${cursor.runId}`, 'utf8').toString('base64url');
}

/** A `RunQuery.cursor` read back; one this store did not make is refused (`invalid_job`). */
export function readCursor(text: string): PageCursor {
  const match = /^(-?\d{1,16}):(.+)$/s.exec(Buffer.from(text, 'base64url').toString('utf8'));
  const ms = Number(match?.[1]);
  if (match === null || !Number.isSafeInteger(ms) || writeCursor({ ms, runId: match[2] ?? '' }) !== text) {
    throw new CodefleetError(
      'invalid_job',
      `run query: cursor ${JSON.stringify(text.slice(0, 64))} is not one this store gave (pass a page's nextCursor as it is)`,
      { verdict: 'permanent' },
    );
  }
  return { ms, runId: match[2] ?? '' };
}

/** Whether run id `a` sorts before `b` in both stores' order of ties: bytewise, as UTF-8. */
export function idBefore(a: string, b: string): boolean {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8')) < 0;
}
