/**
 * How a database file is damaged. None of these heals by trying again: a caller that
 * retries would loop, and one that reads on would take a damaged file for an empty one.
 */
export type SqliteDamageKind =
  /** The file is there but holds 0 bytes: truncated, since {@link openSqlite} never leaves a file empty. */
  | 'empty'
  /** Not a SQLite database (SQLITE_NOTADB): overwritten, or another kind of file. */
  | 'not_a_database'
  /** SQLite met a malformed page (SQLITE_CORRUPT), or `PRAGMA quick_check` found one. */
  | 'corrupt'
  /** A SQLite database without the table its opener's schema creates: emptied, or another program's file. */
  | 'wrong_schema';

/** What is wrong with which file. */
export interface SqliteDamage {
  path: string;
  kind: SqliteDamageKind;
  /** What SQLite or the check said, e.g. `database disk image is malformed`. */
  detail: string;
  /** The driver's error, when one was thrown. */
  cause?: unknown;
}

/** A damaged database file; thrown unless the opener maps damage to an error of its own. */
export class SqliteDamagedError extends Error implements SqliteDamage {
  readonly path: string;
  readonly kind: SqliteDamageKind;
  readonly detail: string;

  constructor(damage: SqliteDamage) {
    super(describeDamage(damage), damage.cause === undefined ? undefined : { cause: damage.cause });
    this.name = 'SqliteDamagedError';
    this.path = damage.path;
    this.kind = damage.kind;
    this.detail = damage.detail;
  }
}

/** True for a {@link SqliteDamagedError}, also one from another copy of this package. */
export function isSqliteDamagedError(error: unknown): error is SqliteDamagedError {
  return (error as { name?: unknown } | undefined)?.name === 'SqliteDamagedError';
}

/** One sentence naming the file and the damage. */
export function describeDamage(damage: SqliteDamage): string {
  const { path, detail } = damage;
  switch (damage.kind) {
    case 'empty':
      return `${path} is empty (0 bytes): it was truncated, since a database file is never created empty`;
    case 'not_a_database':
      return `${path} is not a SQLite database (${detail}): it was overwritten, or is another kind of file`;
    case 'corrupt':
      return `${path} is damaged: ${detail}`;
    case 'wrong_schema':
      return `${path} is a SQLite database without ${detail}: another program's file, or emptied`;
  }
}

/** SQLite's primary result codes for a malformed page and for a file that is not a database. */
const sqliteCorrupt = 11;
const sqliteNotADatabase = 26;

/**
 * The damage a driver's error reports, if it reports one: better-sqlite3 names the result
 * code (`SQLITE_CORRUPT_INDEX`), node:sqlite gives one code for every error and the
 * extended result code in `errcode`.
 */
export function damageOf(error: unknown): 'corrupt' | 'not_a_database' | undefined {
  const { code, errcode } = (error ?? {}) as { code?: unknown; errcode?: unknown };
  if (typeof code !== 'string') return undefined;
  if (code === 'SQLITE_NOTADB') return 'not_a_database';
  if (code.startsWith('SQLITE_CORRUPT')) return 'corrupt';
  if (code === 'ERR_SQLITE_ERROR' && typeof errcode === 'number') {
    if ((errcode & 0xff) === sqliteCorrupt) return 'corrupt';
    if ((errcode & 0xff) === sqliteNotADatabase) return 'not_a_database';
  }
  return undefined;
}
