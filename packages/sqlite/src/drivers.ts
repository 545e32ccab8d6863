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
 * node:sqlite wherever it is built in and complete (Node 22.16+ and 24+: `isTransaction`,
 * which rollbacks need, came in 22.16); better-sqlite3 before it (Node 20, 22.13-22.15, 23).
 * better-sqlite3 is a native addon: an optional dependency (through `./node20`, whose
 * `engines` is exactly the Nodes this picks it for, so npm skips it, build and download,
 * everywhere else), and version 12 (the last major that supports Node 20) would abort the
 * process on Node 24 when a statement is garbage-collected.
 */
export function sqliteDriver(nodeVersion: string = process.versions.node): SqliteDriver {
  const [major = 0, minor = 0] = nodeVersion.split('.').map(Number);
  return major >= 24 || (major === 22 && minor >= 16) ? 'node:sqlite' : 'better-sqlite3';
}

/** The package that brings better-sqlite3 in on the Nodes that need it (./node20). */
const betterSqlite3Package = '@codefleet/sqlite-node20';

// Loaded when a database opens, not with the package: a worker on Redis never loads either.
const load = createRequire(import.meta.url);

/** Opens `path` (creating it unless `readonly`) with `driver`; no pragmas, no checks. */
export function openDriver(path: string, readonly: boolean, driver: SqliteDriver): DriverDatabase {
  return driver === 'node:sqlite' ? openNodeSqlite(path, readonly) : openBetterSqlite3(path, readonly);
}

/**
 * better-sqlite3, or an error that says what this Node needs: npm leaves it out without
 * failing the install when it could neither download its prebuilt binary nor compile it.
 */
export function loadBetterSqlite3(
  ids: { wrapper: string; direct: string } = { wrapper: betterSqlite3Package, direct: 'better-sqlite3' },
): typeof BetterSqlite3 {
  try {
    return load(ids.wrapper) as typeof BetterSqlite3;
  } catch (error) {
    // A node_modules installed before ./node20 existed has better-sqlite3 but not the wrapper.
    const direct = loadIfThere(ids.direct);
    if (direct !== undefined) return direct as typeof BetterSqlite3;
    throw new Error(
      `SQLite on Node ${process.versions.node} needs better-sqlite3, which is not installed or not built ` +
        `(${(error as Error).message.split('\n')[0]}): npm downloads its prebuilt binary from GitHub, or ` +
        'compiles it with make, g++ and python3 (Xcode command line tools on macOS) and Node headers ' +
        '(from nodejs.org, or npm_config_nodedir=<a Node install with include/node>); ' +
        'give it one of these and run `npm ci` again, or use Node 22.16+ or 24, whose built-in node:sqlite needs neither',
      { cause: error },
    );
  }
}

/** `id` loaded, or undefined when it cannot be. */
function loadIfThere(id: string): unknown {
  try {
    return load(id);
  } catch {
    return undefined;
  }
}

function openBetterSqlite3(path: string, readonly: boolean): DriverDatabase {
  const Database = loadBetterSqlite3();
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

/**
 * node:sqlite, loaded without the ExperimentalWarning Node 22 prints on its first load (to
 * stderr, where a command's output would carry it): it is as tested here as on Node 24.
 */
function loadNodeSqlite(): NodeSqliteModule {
  const emitWarning = process.emitWarning;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    const text = typeof warning === 'string' ? warning : warning.message;
    const type = typeof rest[0] === 'string' ? rest[0] : (rest[0] as { type?: string } | undefined)?.type;
    if (type === 'ExperimentalWarning' && text.startsWith('SQLite ')) return;
    (emitWarning as (...args: unknown[]) => void).call(process, warning, ...rest);
  }) as typeof process.emitWarning;
  try {
    return load('node:sqlite') as NodeSqliteModule;
  } finally {
    process.emitWarning = emitWarning;
  }
}

function openNodeSqlite(path: string, readonly: boolean): DriverDatabase {
  const { DatabaseSync } = loadNodeSqlite();
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
