import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, linkSync, openSync, rmSync, statSync } from 'node:fs';
import { damageOf, SqliteDamagedError, type SqliteDamage } from './damage.js';
import { openDriver, sqliteDriver, type DriverDatabase, type SqliteDriver, type SqliteStatement } from './drivers.js';

/** The part of a SQLite connection codefleet uses, the same on both drivers. */
export interface SqliteDatabase extends DriverDatabase {
  /**
   * Reads every page of the file (`PRAGMA quick_check`, about 3 ms per MB) and throws the
   * damage error when one is malformed. A read of the whole file: for a process's start, or
   * a command whose answer a damaged file would falsify, not for every call.
   */
  quickCheck(): void;
}

/** The schema of one kind of file (the queue's, say). */
export interface SqliteSchema {
  /** A table every file of this kind has; an existing file without it is refused as `wrong_schema`. */
  table: string;
  /**
   * Creates the schema idempotently (IF NOT EXISTS): on a new file before it appears at its
   * path, so no process ever finds the file without it, and again on every open (what a
   * later version adds).
   */
  create(db: SqliteDatabase): void;
}

/** Options of {@link openSqlite}. */
export interface OpenSqliteOptions {
  readonly?: boolean;
  schema?: SqliteSchema;
  /** The error to throw for a damaged file; default a {@link SqliteDamagedError}. */
  damaged?: (damage: SqliteDamage) => Error;
}

/**
 * Opens (creating unless `readonly`) the database file at `path` with this Node's driver,
 * for concurrent use by several processes: every codefleet database (queue, runs, local
 * forge) is shared by the workers on a host.
 *
 * A damaged file is never taken for an empty database, nor thrown as an error a retry might
 * mend: a file found empty (a new one never is), not a database, without the schema's
 * table, or with a malformed page (at open, or met by any later call) throws `damaged`'s error.
 */
export function openSqlite(
  path: string,
  options: OpenSqliteOptions = {},
  driver: SqliteDriver = sqliteDriver(),
): SqliteDatabase {
  const readonly = options.readonly === true;
  const damaged = options.damaged ?? ((damage: SqliteDamage) => new SqliteDamagedError(damage));
  const onDisk = path !== '' && path !== ':memory:' && !path.startsWith('file:');
  if (onDisk && !readonly && !existsSync(path)) createFile(path, options.schema, driver);
  if (onDisk && isEmptyFile(path)) throw damaged({ path, kind: 'empty', detail: '0 bytes' });
  const db = guarded(() => openDriver(path, readonly, driver), path, damaged);
  try {
    setUp(db, readonly);
    const { schema } = options;
    if (
      schema &&
      onDisk &&
      db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?`).get(schema.table) === undefined
    ) {
      throw damaged({ path, kind: 'wrong_schema', detail: `the ${schema.table} table` });
    }
    if (schema && !readonly) schema.create(db);
  } catch (error) {
    db.close();
    throw error;
  }
  return db;
}

function setUp(db: SqliteDatabase, readonly: boolean): void {
  // Wait for another process's write transaction instead of failing with SQLITE_BUSY.
  db.exec('PRAGMA busy_timeout = 10000');
  if (readonly) return;
  // WAL + NORMAL survives process crashes (the chaos case); only an OS crash can lose
  // the last commits, which at-least-once delivery tolerates.
  db.exec('PRAGMA journal_mode = WAL');
  db.exec('PRAGMA synchronous = NORMAL');
}

/**
 * Makes the file under another name, then links it into place whole: whoever finds a file
 * at `path` finds it with its header and schema. So an empty or schema-less file there is
 * damage, not a database another process is still creating. When two processes create it
 * at once, the first link wins and both use that file.
 */
function createFile(path: string, schema: SqliteSchema | undefined, driver: SqliteDriver): void {
  const temp = `${path}.new-${process.pid}-${randomBytes(4).toString('hex')}`;
  // Through the file system first, so a missing directory or a permission says so (ENOENT, EACCES).
  closeSync(openSync(temp, 'wx'));
  try {
    const db = guarded(
      () => openDriver(temp, false, driver),
      temp,
      (damage) => new SqliteDamagedError(damage),
    );
    try {
      setUp(db, false);
      if (schema) db.transaction(() => schema.create(db)).immediate();
      // Everything into the file itself: only the file is linked, its WAL stays behind.
      db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
    } finally {
      db.close();
    }
    try {
      linkSync(temp, path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  } finally {
    for (const file of [temp, `${temp}-wal`, `${temp}-shm`]) rmSync(file, { force: true });
  }
}

function isEmptyFile(path: string): boolean {
  const stats = statSync(path, { throwIfNoEntry: false });
  return stats?.isFile() === true && stats.size === 0;
}

const maxDetailChars = 300;

/** The connection with every driver error that reports damage turned into `damaged`'s error. */
function guarded(open: () => DriverDatabase, path: string, damaged: (damage: SqliteDamage) => Error): SqliteDatabase {
  const guard = <T>(fn: () => T): T => {
    try {
      return fn();
    } catch (error) {
      const kind = damageOf(error);
      if (kind === undefined) throw error;
      // Truncated while open: SQLite finds no header or a page missing, which says less than that the file is empty.
      if (isEmptyFile(path)) throw damaged({ path, kind: 'empty', detail: '0 bytes', cause: error });
      throw damaged({ path, kind, detail: String((error as Error).message).slice(0, maxDetailChars), cause: error });
    }
  };
  const db = guard(open);
  const statement = (s: SqliteStatement): SqliteStatement => ({
    run: (...params) => guard(() => s.run(...params)),
    get: (...params) => guard(() => s.get(...params)),
    all: (...params) => guard(() => s.all(...params)),
  });
  const facade: SqliteDatabase = {
    exec: (sql) => guard(() => db.exec(sql)),
    prepare: (sql) => statement(guard(() => db.prepare(sql))),
    transaction: (fn) => ({ immediate: () => guard(() => db.transaction(fn).immediate()) }),
    close: () => db.close(),
    quickCheck: () => {
      const rows = facade.prepare('PRAGMA quick_check(10)').all() as Record<string, unknown>[];
      // The first row starts with a `*** in database main ***` line.
      const problems = rows
        .map((row) =>
          String(Object.values(row)[0])
            .replace(/^\*\*\*.*\*\*\*\n/, '')
            .replaceAll('\n', '; '),
        )
        .filter((line) => line !== 'ok');
      if (problems.length > 0) {
        throw damaged({
          path,
          kind: 'corrupt',
          detail: `quick_check: ${problems.slice(0, 3).join('; ')}`.slice(0, maxDetailChars),
        });
      }
    },
  };
  return facade;
}
