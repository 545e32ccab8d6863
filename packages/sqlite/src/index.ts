export { openSqlite, sqliteDriver, type OpenSqliteOptions, type RunInfo, type SqliteDatabase, type SqliteDriver, type SqliteStatement } from './open-sqlite.js';
