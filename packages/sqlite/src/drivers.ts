import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';

/** What a write did. */
export interface RunInfo {
  changes: number | bigint;
  lastInsertRowid: number | bigint;
}

/**
 * A prepared statement. Parameters are positional (`?`), or one object for named ones
 * (`@name`, `:name`, `$name`, keyed without the prefix). Rows come back as plain objects.
 */
export interface SqliteStatement {
  run(...params: unknown[]): RunInfo;
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
}

/** A connection as both drivers offer it. */
export interface DriverDatabase {
  exec(sql: string): void;
  prepare(sql: string): SqliteStatement;
  /** `fn` in a transaction; `.immediate()` takes the write lock at BEGIN (BEGIN IMMEDIATE). */
  transaction<T>(fn: () => T): { immediate(): T };
  /** Closes the connection; closing it again does nothing. */
  close(): void;
}

/** Which driver `openSqlite` uses on this Node. */
export type SqliteDriver = 'node:sqlite' | 'better-sqlite3';

/**
 * node:sqlite from Node 24 on; better-sqlite3 before it. better-sqlite3 12 (the last major
 * that supports Node 20) aborts the process on Node 24 when a statement is garbage-collected
 * (its ObjectWrap destructor trips `env != nullptr`); node:sqlite is built in there, and
 * stable enough to run without an experimental warning, which Node 22 still prints.
 */
export function sqliteDriver(nodeVersion: string = process.versions.node): SqliteDriver {
  return Number(nodeVersion.split('.')[0]) >= 24 ? 'node:sqlite' : 'better-sqlite3';
}

// Loaded when a database opens, not with the package: a worker on Redis never loads either.
const load = createRequire(import.meta.url);

/** Opens `path` (creating it unless `readonly`) with `driver`; no pragmas, no checks. */
export function openDriver(path: string, readonly: boolean, driver: SqliteDriver): DriverDatabase {
  return driver === 'node:sqlite' ? openNodeSqlite(path, readonly) : openBetterSqlite3(path, readonly);
}

function openBetterSqlite3(path: string, readonly: boolean): DriverDatabase {
  const Database = load('better-sqlite3') as typeof BetterSqlite3;
  const db = new Database(path, { readonly });
  return {
    exec: (sql) => {
      db.exec(sql);
    },
    prepare: (sql) => db.prepare(sql) as unknown as SqliteStatement,
    transaction: (fn) => ({ immediate: () => db.transaction(fn).immediate() }),
    close: () => {
      if (db.open) db.close();
    },
  };
}

/** The slice of node:sqlite used here (its types are not in @types/node 20). */
interface NodeSqliteModule {
  DatabaseSync: new (
    path: string,
    options?: { readOnly?: boolean },
  ) => {
    readonly isTransaction: boolean;
    exec(sql: string): void;
    prepare(sql: string): SqliteStatement;
    close(): void;
  };
}

function openNodeSqlite(path: string, readonly: boolean): DriverDatabase {
  const { DatabaseSync } = load('node:sqlite') as NodeSqliteModule;
  const db = new DatabaseSync(path, { readOnly: readonly });
  let open = true;
  // Nested transactions become savepoints, as better-sqlite3 does.
  let depth = 0;
  const transaction = <T>(fn: () => T, begin: string): T => {
    const savepoint = `codefleet_${depth}`;
    db.exec(depth === 0 ? begin : `SAVEPOINT ${savepoint}`);
    depth += 1;
    try {
      const result = fn();
      db.exec(depth === 1 ? 'COMMIT' : `RELEASE ${savepoint}`);
      return result;
    } catch (error) {
      // As better-sqlite3: roll back unless SQLite already has (some errors end the
      // transaction themselves); a failed rollback is the error to report, since the
      // connection would otherwise stay in a transaction holding the write lock.
      if (db.isTransaction) db.exec(depth === 1 ? 'ROLLBACK' : `ROLLBACK TO ${savepoint}; RELEASE ${savepoint}`);
      throw error;
    } finally {
      depth -= 1;
    }
  };
  return {
    exec: (sql) => {
      db.exec(sql);
    },
    prepare: (sql) => db.prepare(sql),
    transaction: (fn) => ({ immediate: () => transaction(fn, 'BEGIN IMMEDIATE') }),
    close: () => {
      if (open) db.close();
      open = false;
    },
  };
}
