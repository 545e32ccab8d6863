import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { createTempDir, type TempDir } from '@codefleet/testkit';
import { loadBetterSqlite3 } from '../src/drivers.js';
import { openSqlite, sqliteDriver, type SqliteDatabase } from '../src/index.js';

// The driver this Node uses (better-sqlite3 on 20, node:sqlite on 22.16+ and 24), against
// real database files: CI runs this suite on each Node line it tests.

describe('sqliteDriver', () => {
  it('picks node:sqlite where it is complete, better-sqlite3 where ./node20 is installed', () => {
    expect(sqliteDriver('20.19.0')).toBe('better-sqlite3');
    expect(sqliteDriver('22.13.0')).toBe('better-sqlite3');
    expect(sqliteDriver('22.15.9')).toBe('better-sqlite3');
    expect(sqliteDriver('22.16.0')).toBe('node:sqlite');
    expect(sqliteDriver('23.11.0')).toBe('better-sqlite3');
    expect(sqliteDriver('24.0.0')).toBe('node:sqlite');
    expect(sqliteDriver('25.1.0')).toBe('node:sqlite');
    // That ./node20's engines name exactly these Nodes: apps/cli/test/engines.test.ts.
  });

  it('loads better-sqlite3 through ./node20, or directly, else says what Node 20 needs', () => {
    // Where npm installs it (not on Node 22.16+ and 24), a node_modules from before the wrapper still finds it.
    if (sqliteDriver() === 'better-sqlite3') {
      expect(typeof loadBetterSqlite3({ wrapper: '@codefleet/no-such-wrapper', direct: 'better-sqlite3' })).toBe(
        'function',
      );
    }
    expect(() => loadBetterSqlite3({ wrapper: '@codefleet/no-such-wrapper', direct: 'no-such-sqlite' })).toThrow(
      /needs better-sqlite3, which is not installed or not built \(Cannot find module '@codefleet\/no-such-wrapper'.*make, g\+\+ and python3.*npm_config_nodedir.*Node 22\.16\+ or 24/,
    );
  });
});

describe(`openSqlite (${sqliteDriver()} on Node ${process.versions.node})`, () => {
  let dir: TempDir;
  let db: SqliteDatabase;
  beforeEach(async () => {
    dir = await createTempDir('sqlite');
    db = openSqlite(join(dir.path, 'test.sqlite'));
    db.exec('CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, n INTEGER)');
  });
  afterEach(async () => {
    db.close();
    await dir.dispose();
  });

  it('binds positional and named parameters; returns plain rows, changes and row ids', () => {
    const first = db.prepare('INSERT INTO items (name, n) VALUES (?, ?)').run('a', 1);
    expect(Number(first.changes)).toBe(1);
    expect(Number(first.lastInsertRowid)).toBe(1);
    db.prepare('INSERT INTO items (name, n) VALUES (@name, @n)').run({ name: 'b', n: 2 });
    expect({ ...(db.prepare('SELECT name, n FROM items WHERE name = ?').get('b') as object) }).toEqual({
      name: 'b',
      n: 2,
    });
    expect(db.prepare('SELECT name FROM items WHERE name = ?').get('zzz')).toBeUndefined();
    expect(
      (db.prepare('SELECT name FROM items ORDER BY id').all() as { name: string }[]).map((row) => row.name),
    ).toEqual(['a', 'b']);
    expect(Number(db.prepare('UPDATE items SET n = n + 1').run().changes)).toBe(2);
  });

  it('opens for several processes: WAL, synchronous NORMAL, a 10 s busy timeout; pragmas apply', () => {
    expect(db.prepare('PRAGMA journal_mode').get()).toMatchObject({ journal_mode: 'wal' });
    expect(Object.values(db.prepare('PRAGMA synchronous').get() as object)).toEqual([1]);
    expect(Object.values(db.prepare('PRAGMA busy_timeout').get() as object)).toEqual([10000]);
    db.exec('PRAGMA busy_timeout = 1234');
    expect(Object.values(db.prepare('PRAGMA busy_timeout').get() as object)).toEqual([1234]);
  });

  it('commits a transaction, and rolls all of it back when its function throws', () => {
    expect(
      db.transaction(() => db.prepare('INSERT INTO items (name) VALUES (?)').run('kept') && 'done').immediate(),
    ).toBe('done');
    expect(() =>
      db
        .transaction(() => {
          db.prepare('INSERT INTO items (name) VALUES (?)').run('gone');
          throw new Error('boom');
        })
        .immediate(),
    ).toThrow('boom');
    // A constraint error inside: SQLite's own error comes out, and nothing of it stays.
    expect(() =>
      db
        .transaction(() => {
          db.prepare('INSERT INTO items (name) VALUES (?)').run('also gone');
          db.prepare('INSERT INTO items (name) VALUES (?)').run('kept');
        })
        .immediate(),
    ).toThrow(/UNIQUE/);
    expect((db.prepare('SELECT name FROM items').all() as { name: string }[]).map((row) => row.name)).toEqual(['kept']);
  });

  it('a nested transaction that throws rolls back only itself', () => {
    db.transaction(() => {
      db.prepare('INSERT INTO items (name) VALUES (?)').run('outer');
      expect(() =>
        db
          .transaction(() => {
            db.prepare('INSERT INTO items (name) VALUES (?)').run('inner');
            throw new Error('inner fails');
          })
          .immediate(),
      ).toThrow('inner fails');
    }).immediate();
    expect((db.prepare('SELECT name FROM items').all() as { name: string }[]).map((row) => row.name)).toEqual([
      'outer',
    ]);
  });

  it('an immediate transaction holds the write lock: another connection waits, then is busy', () => {
    const other = openSqlite(join(dir.path, 'test.sqlite'));
    try {
      other.exec('PRAGMA busy_timeout = 0');
      db.transaction(() => {
        db.prepare('INSERT INTO items (name) VALUES (?)').run('mine');
        expect(() =>
          other.transaction(() => other.prepare('INSERT INTO items (name) VALUES (?)').run('theirs')).immediate(),
        ).toThrow(/locked|busy/i);
      }).immediate();
      other.transaction(() => other.prepare('INSERT INTO items (name) VALUES (?)').run('theirs')).immediate();
      expect(
        (db.prepare('SELECT name FROM items ORDER BY id').all() as { name: string }[]).map((row) => row.name),
      ).toEqual(['mine', 'theirs']);
    } finally {
      other.close();
    }
  });

  it('closing twice is harmless', () => {
    const other = openSqlite(join(dir.path, 'test.sqlite'));
    other.close();
    expect(() => other.close()).not.toThrow();
  });

  it('a read-only connection reads and refuses writes', () => {
    db.prepare('INSERT INTO items (name) VALUES (?)').run('x');
    const reader = openSqlite(join(dir.path, 'test.sqlite'), { readonly: true });
    try {
      expect(reader.prepare('SELECT count(*) AS c FROM items').get()).toMatchObject({ c: 1 });
      expect(() => reader.prepare('INSERT INTO items (name) VALUES (?)').run('y')).toThrow(/readonly|read-only/i);
    } finally {
      reader.close();
    }
  });
});
