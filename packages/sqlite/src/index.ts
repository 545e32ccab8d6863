export { openSqlite, type OpenSqliteOptions, type SqliteDatabase, type SqliteSchema } from './open-sqlite.js';
export { sqliteDriver, type RunInfo, type SqliteDriver, type SqliteStatement } from './drivers.js';
export {
  damageOf,
  describeDamage,
  isSqliteDamagedError,
  SqliteDamagedError,
  type SqliteDamage,
  type SqliteDamageKind,
} from './damage.js';
