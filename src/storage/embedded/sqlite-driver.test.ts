import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { Database, SQLITE_DRIVER } from './sqlite-driver.ts';

describe('sqlite driver', () => {
  it('is the better-sqlite3 major this Node runs: 13 with Node-API 10, else 12', () => {
    const { version } = createRequire(import.meta.url)(`${SQLITE_DRIVER}/package.json`) as { version: string };
    assert.equal(Number(version.split('.')[0]), Number(process.versions.napi) >= 10 ? 13 : 12);
  });

  it('has the SQLite the store needs: contentless FTS5 tables that delete, JSON, and typed errors', () => {
    const db = new Database(':memory:');
    try {
      // As lexical.ts makes them.
      db.exec("CREATE VIRTUAL TABLE t USING fts5(text, content='', contentless_delete=1, tokenize='porter unicode61')");
      db.prepare('INSERT INTO t (rowid, text) VALUES (?, ?)').run(7, 'cats lying on sofas');
      db.prepare('INSERT INTO t (rowid, text) VALUES (?, ?)').run(8, 'a sofa');
      db.prepare('DELETE FROM t WHERE rowid = ?').run(8);
      assert.deepEqual(db.prepare("SELECT rowid FROM t WHERE t MATCH 'sofa'").pluck().all(), [7]);
      assert.deepEqual(db.prepare('SELECT value FROM json_each(?)').pluck().all('[3,1]'), [3, 1]);
      db.exec('CREATE TABLE u (k TEXT PRIMARY KEY)');
      db.prepare('INSERT INTO u VALUES (?)').run('x');
      assert.throws(() => db.prepare('INSERT INTO u VALUES (?)').run('x'), (e: unknown) => e instanceof Database.SqliteError && e.code === 'SQLITE_CONSTRAINT_PRIMARYKEY');
    } finally {
      db.close();
    }
  });
});
