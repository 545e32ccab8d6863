// Pull request records of the local forge. Each write is one IMMEDIATE transaction,
// which takes SQLite's write lock before reading, so "find the open one, else create"
// cannot interleave between processes; the unique index on open heads backs it up. The
// number of a new one is claimed in the origin first (pull-numbers.ts), outside any
// transaction, as git calls cannot run inside one.
import type { SqliteDatabase as Database } from '@codefleet/sqlite';
import { CodefleetError } from '@codefleet/core';
import type { PullRequest, PullRequestState } from '../port.js';

interface PullRow {
  repo: string;
  number: number;
  title: string;
  body: string;
  head: string;
  base: string;
  state: PullRequestState;
  draft: 0 | 1;
  head_sha: string | null;
  created_at: string;
  updated_at: string;
}

/** What `ensurePullRequest` writes. */
export interface PullRequestInput {
  repo: string;
  head: string;
  base: string;
  title: string;
  body: string;
  draft: boolean;
  headSha: string;
}

function toPullRequest(row: PullRow): PullRequest {
  return {
    number: row.number,
    url: `local://${row.repo}/pull/${row.number}`,
    title: row.title,
    body: row.body,
    head: row.head,
    base: row.base,
    state: row.state,
    draft: row.draft === 1,
    ...(row.head_sha === null ? {} : { headSha: row.head_sha }),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/**
 * Updates the open pull request for `input.head`; undefined when there is none, for the
 * caller to claim a number (see pull-numbers.ts) and {@link insertPullRequest}.
 */
export function updateOpenPullRequest(
  db: Database,
  input: PullRequestInput,
  now: string,
): (PullRequest & { created: false }) | undefined {
  return db
    .transaction((): (PullRequest & { created: false }) | undefined => {
      const open = db
        .prepare(`SELECT * FROM pull_requests WHERE repo = ? AND head = ? AND state = 'open'`)
        .get(input.repo, input.head) as PullRow | undefined;
      if (open === undefined) return undefined;
      const draft = input.draft ? 1 : 0;
      const unchanged =
        open.title === input.title &&
        open.body === input.body &&
        open.base === input.base &&
        open.draft === draft &&
        open.head_sha === input.headSha;
      if (unchanged) return { ...toPullRequest(open), created: false };
      const row: PullRow = {
        ...open,
        title: input.title,
        body: input.body,
        base: input.base,
        draft,
        head_sha: input.headSha,
        updated_at: now,
      };
      db.prepare(
        `UPDATE pull_requests SET title = ?, body = ?, base = ?, draft = ?, head_sha = ?, updated_at = ? WHERE repo = ? AND number = ?`,
      ).run(row.title, row.body, row.base, row.draft, row.head_sha, row.updated_at, row.repo, row.number);
      return { ...toPullRequest(row), created: false };
    })
    .immediate();
}

/** The lowest number this file has not used for `repo`: numbers given before they were claimed in the origin. */
export function nextLocalNumber(db: Database, repo: string): number {
  return (
    db.prepare(`SELECT coalesce(max(number), 0) + 1 AS next FROM pull_requests WHERE repo = ?`).get(repo) as {
      next: number;
    }
  ).next;
}

/**
 * Creates the pull request for `input.head` as `number` (claimed in the origin), unless
 * another process of this host opened one for that head meanwhile: then that one is
 * updated and returned, and `number` stays unused.
 */
export function insertPullRequest(
  db: Database,
  input: PullRequestInput,
  number: number,
  now: string,
): PullRequest & { created: boolean } {
  return db
    .transaction((): PullRequest & { created: boolean } => {
      const raced = updateOpenPullRequest(db, input, now);
      if (raced !== undefined) return raced;
      const row: PullRow = {
        repo: input.repo,
        number,
        title: input.title,
        body: input.body,
        head: input.head,
        base: input.base,
        state: 'open',
        draft: input.draft ? 1 : 0,
        head_sha: input.headSha,
        created_at: now,
        updated_at: now,
      };
      db.prepare(
        `INSERT INTO pull_requests (repo, number, title, body, head, base, state, draft, head_sha, created_at, updated_at)
      VALUES (@repo, @number, @title, @body, @head, @base, @state, @draft, @head_sha, @created_at, @updated_at)`,
      ).run(row);
      return { ...toPullRequest(row), created: true };
    })
    .immediate();
}

/** The open pull request for `head`, else the newest one in any state. */
export function findByHead(db: Database, repo: string, head: string): PullRequest | undefined {
  const row = db
    .prepare(
      `SELECT * FROM pull_requests WHERE repo = ? AND head = ?
    ORDER BY state = 'open' DESC, number DESC LIMIT 1`,
    )
    .get(repo, head) as PullRow | undefined;
  return row === undefined ? undefined : toPullRequest(row);
}

/** One pull request by number, or undefined. */
export function findByNumber(db: Database, repo: string, number: number): PullRequest | undefined {
  const row = db.prepare(`SELECT * FROM pull_requests WHERE repo = ? AND number = ?`).get(repo, number) as
    PullRow | undefined;
  return row === undefined ? undefined : toPullRequest(row);
}

/**
 * Closes or merges an open pull request. Closing or merging one that already is in that
 * state is a no-op; anything else from a non-open state is `forge_rejected`.
 */
export function settlePullRequest(
  db: Database,
  repo: string,
  number: number,
  state: 'closed' | 'merged',
  now: string,
): PullRequest {
  return db
    .transaction((): PullRequest => {
      const row = db.prepare(`SELECT * FROM pull_requests WHERE repo = ? AND number = ?`).get(repo, number) as
        PullRow | undefined;
      if (row === undefined) throw new CodefleetError('forge_not_found', `no pull request #${number} in ${repo}`);
      if (row.state === state) return toPullRequest(row);
      if (row.state !== 'open')
        throw new CodefleetError('forge_rejected', `pull request #${number} in ${repo} is ${row.state}, not open`);
      db.prepare(`UPDATE pull_requests SET state = ?, updated_at = ? WHERE repo = ? AND number = ?`).run(
        state,
        now,
        repo,
        number,
      );
      return toPullRequest({ ...row, state, updated_at: now });
    })
    .immediate();
}

/** How many pull requests were ever created for `head` (rows are never deleted). */
export function countCreations(db: Database, repo: string, head: string): number {
  return (
    db.prepare(`SELECT count(*) AS n FROM pull_requests WHERE repo = ? AND head = ?`).get(repo, head) as { n: number }
  ).n;
}
