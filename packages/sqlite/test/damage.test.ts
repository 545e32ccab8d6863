import { existsSync, openSync, closeSync, writeSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { createTempDir, type TempDir } from '@codefleet/testkit';
import { isSqliteDamagedError, openSqlite, sqliteDriver, type SqliteDamage, type SqliteSchema } from '../src/index.js';

// Damaged files, made the way they are found in the field: real database files truncated,
// overwritten, or with a page of garbage, on whichever driver this Node uses.

const schema: SqliteSchema = {
  table: 'items',
  create: (db) =>
    db.exec(
      'CREATE TABLE IF NOT EXISTS items (id INTEGER PRIMARY KEY, name TEXT NOT NULL); CREATE INDEX IF NOT EXISTS items_name ON items (name)',
    ),
};

/** Overwrites page `page` (1-based) of a closed database file with garbage. */
function overwritePage(path: string, page: number, pageSize: number): void {
  const fd = openSync(path, 'r+');
  try {
    writeSync(fd, Buffer.alloc(pageSize, 0xab), 0, pageSize, (page - 1) * pageSize);
  } finally {
    closeSync(fd);
  }
}

/** What `fn` threw, as the damage it reports (or the error itself when it is not one). */
function thrown(fn: () => unknown): SqliteDamage | unknown {
  try {
    fn();
  } catch (error) {
    return isSqliteDamagedError(error)
      ? { path: error.path, kind: error.kind, detail: error.detail, message: error.message }
      : error;
  }
  return 'nothing thrown';
}

describe(`damaged database files (${sqliteDriver()} on Node ${process.versions.node})`, () => {
  let dir: TempDir;
  let path: string;
  beforeEach(async () => {
    dir = await createTempDir('sqlite-damage');
    path = join(dir.path, 'items.sqlite');
  });
  afterEach(async () => {
    await dir.dispose();
  });

  /** A closed file with 200 rows (several pages of table and index), and the root pages of both. */
  const filled = () => {
    const db = openSqlite(path, { schema });
    const insert = db.prepare('INSERT INTO items (name) VALUES (?)');
    db.transaction(() => {
      for (let n = 0; n < 200; n += 1) insert.run(`item ${n} ${'x'.repeat(100)}`);
    }).immediate();
    const roots = Object.fromEntries(
      (
        db.prepare(`SELECT name, rootpage FROM sqlite_master WHERE name IN ('items', 'items_name')`).all() as {
          name: string;
          rootpage: number;
        }[]
      ).map((row) => [row.name, Number(row.rootpage)]),
    );
    const pageSize = Number(Object.values(db.prepare('PRAGMA page_size').get() as object)[0]);
    db.close();
    return { table: roots.items!, index: roots.items_name!, pageSize };
  };

  it('a new file appears at its path only once it has its schema, so no process can find it half-made', () => {
    const seenDuringCreate: boolean[] = [];
    const db = openSqlite(path, {
      schema: {
        table: 'items',
        create: (d) => {
          seenDuringCreate.push(existsSync(path));
          schema.create(d);
        },
      },
    });
    db.close();
    // Created elsewhere, then linked into place; created again (idempotently) at the open.
    expect(seenDuringCreate).toEqual([false, true]);
    expect(statSync(path).size).toBeGreaterThan(0);
    expect(openSqlite(path, { schema }).prepare('SELECT count(*) AS n FROM items').get()).toMatchObject({ n: 0 });
  });

  it('a file without a schema is created non-empty too, and leaves no temporary file behind', async () => {
    openSqlite(path).close();
    expect(statSync(path).size).toBeGreaterThan(0);
    const { readdir } = await import('node:fs/promises');
    expect((await readdir(dir.path)).filter((name) => name.includes('.new-'))).toEqual([]);
  });

  it('a file truncated to 0 bytes is refused as empty, not opened as a new database', () => {
    filled();
    truncateSync(path, 0);
    expect(thrown(() => openSqlite(path, { schema }))).toMatchObject({
      path,
      kind: 'empty',
      message: expect.stringContaining(`${path} is empty (0 bytes)`),
    });
    // Without a schema too: every file is created non-empty.
    expect(thrown(() => openSqlite(path))).toMatchObject({ path, kind: 'empty' });
    expect(thrown(() => openSqlite(path, { readonly: true }))).toMatchObject({ path, kind: 'empty' });
    expect(statSync(path).size).toBe(0);
  });

  it('a file truncated while open fails the next call as empty', () => {
    filled();
    const db = openSqlite(path, { schema });
    truncateSync(path, 0);
    expect(thrown(() => db.prepare('SELECT count(*) FROM items').get())).toMatchObject({ path, kind: 'empty' });
    db.close();
  });

  it('a file cut short, or overwritten at its header, is refused at open', () => {
    const { pageSize } = filled();
    truncateSync(path, 3 * pageSize);
    expect(thrown(() => openSqlite(path, { schema }))).toMatchObject({
      path,
      kind: 'corrupt',
      detail: expect.stringMatching(/malformed/),
    });
    overwritePage(path, 1, pageSize);
    expect(thrown(() => openSqlite(path, { schema }))).toMatchObject({ path, kind: 'not_a_database' });
    writeFileSync(path, 'some text, not a database\n'.repeat(40));
    expect(thrown(() => openSqlite(path))).toMatchObject({ path, kind: 'not_a_database' });
  });

  it("a database without the schema's table is refused; without a schema it opens as before", () => {
    const other = openSqlite(path);
    other.exec('CREATE TABLE something_else (x)');
    other.close();
    expect(thrown(() => openSqlite(path, { schema }))).toMatchObject({
      path,
      kind: 'wrong_schema',
      message: `${path} is a SQLite database without the items table: another program's file, or emptied`,
    });
    openSqlite(path).close();
  });

  it('a malformed page fails every call that reads it, with the path, not as a raw SQLite error', () => {
    const { table, pageSize } = filled();
    overwritePage(path, table, pageSize);
    const db = openSqlite(path, { schema });
    try {
      expect(thrown(() => db.prepare('SELECT name FROM items NOT INDEXED').all())).toMatchObject({
        path,
        kind: 'corrupt',
        detail: expect.stringMatching(/malformed/),
      });
      expect(
        thrown(() => db.transaction(() => db.prepare('UPDATE items SET name = ? WHERE id = 5').run('y')).immediate()),
      ).toMatchObject({ path, kind: 'corrupt' });
      expect(thrown(() => db.exec('DELETE FROM items'))).toMatchObject({ path, kind: 'corrupt' });
      // Other errors stay what they were.
      expect(() => db.prepare('SELECT nonsense FROM nowhere')).toThrow(/no such table/);
    } finally {
      db.close();
    }
  });

  it('quickCheck finds a malformed page that the calls so far have not read', () => {
    const { index, pageSize } = filled();
    overwritePage(path, index, pageSize);
    const db = openSqlite(path, { schema });
    try {
      // The table itself reads fine: a caller would see every row and no error.
      expect(db.prepare('SELECT count(*) AS n FROM items NOT INDEXED').get()).toMatchObject({ n: 200 });
      expect(thrown(() => db.quickCheck())).toMatchObject({
        path,
        kind: 'corrupt',
        detail: expect.stringMatching(/^quick_check: .*page/),
      });
    } finally {
      db.close();
    }
    const healthy = join(dir.path, 'healthy.sqlite');
    const ok = openSqlite(healthy, { schema });
    expect(() => ok.quickCheck()).not.toThrow();
    ok.close();
  });

  it('an opener maps damage to an error of its own', () => {
    filled();
    truncateSync(path, 0);
    class Mine extends Error {}
    expect(() =>
      openSqlite(path, { schema, damaged: (damage) => new Mine(`mine: ${damage.kind} ${damage.path}`) }),
    ).toThrow(new Mine(`mine: empty ${path}`));
  });
});
