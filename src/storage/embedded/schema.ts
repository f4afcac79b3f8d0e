/**
 * The embedded database schema and its migrations. Each migration runs once, in a transaction,
 * and bumps schema_version; a database from a newer version is refused rather than guessed at.
 */
import { randomUUID } from 'node:crypto';
import { countLexicalTotals, createLexicalIndex, fillLexicalIndex } from './lexical.ts';
import type { Sqlite } from './sql.ts';

const MIGRATIONS: ((db: Sqlite) => void)[] = [
  (db) => {
    db.exec(`
      CREATE TABLE keyspaces (
        name        TEXT PRIMARY KEY,
        owner       TEXT,
        replication TEXT NOT NULL,
        created_at  TEXT NOT NULL
      );
      CREATE INDEX keyspaces_owner ON keyspaces(owner);

      CREATE TABLE tables (
        id         INTEGER PRIMARY KEY,
        keyspace   TEXT NOT NULL REFERENCES keyspaces(name),
        name       TEXT NOT NULL,
        dimension  INTEGER NOT NULL,
        metric     TEXT NOT NULL,
        model      TEXT,
        created_at TEXT NOT NULL,
        UNIQUE (keyspace, name)
      );

      -- One row per vector. Kept narrow (no vector, no text) because filters scan it: with the
      -- 1.5 KB vector inline, a metadata filter over 200k rows reads 400 MB instead of 20 MB.
      -- seq: the change that last wrote the row.
      CREATE TABLE vectors (
        id       INTEGER PRIMARY KEY,
        table_id INTEGER NOT NULL REFERENCES tables(id),
        key      TEXT NOT NULL,
        metadata TEXT NOT NULL DEFAULT '{}',
        seq      INTEGER NOT NULL,
        UNIQUE (table_id, key)
      );
      -- vector: float32 little-endian.
      CREATE TABLE vector_payloads (
        id     INTEGER PRIMARY KEY REFERENCES vectors(id) ON DELETE CASCADE,
        vector BLOB NOT NULL,
        text   TEXT
      );
      -- catch-up ("rows changed since seq") and rebuild order; covering, since id is the rowid.
      CREATE INDEX vectors_table_seq ON vectors(table_id, seq);

      -- deletions not yet covered by a saved ANN index of their table.
      CREATE TABLE deleted (
        table_id INTEGER NOT NULL,
        row_id   INTEGER NOT NULL,
        seq      INTEGER NOT NULL
      );
      CREATE INDEX deleted_table_seq ON deleted(table_id, seq);

      CREATE TABLE metadata_records (
        keyspace           TEXT NOT NULL,
        table_name         TEXT NOT NULL,
        source_file        TEXT NOT NULL,
        raw_value          TEXT NOT NULL,
        source_type        TEXT NOT NULL,
        processing_details TEXT NOT NULL,
        PRIMARY KEY (keyspace, table_name, source_file)
      ) WITHOUT ROWID;

      CREATE TABLE users (
        id          TEXT PRIMARY KEY,
        name        TEXT NOT NULL,
        email       TEXT NOT NULL UNIQUE COLLATE NOCASE,
        plan        TEXT NOT NULL,
        connections TEXT NOT NULL DEFAULT '[]',
        created_at  TEXT NOT NULL
      );

      CREATE TABLE api_keys (
        id          TEXT PRIMARY KEY,
        user_id     TEXT NOT NULL,
        name        TEXT NOT NULL,
        hash        TEXT NOT NULL UNIQUE,
        permissions TEXT NOT NULL,
        resources   TEXT NOT NULL,
        created_at  TEXT NOT NULL,
        revoked_at  TEXT
      );
      CREATE INDEX api_keys_user ON api_keys(user_id);

      -- seq: the global change sequence; db_id: ties saved ANN indexes to this database.
      CREATE TABLE meta (k TEXT PRIMARY KEY, v) WITHOUT ROWID;
    `);
    db.prepare(`INSERT INTO meta (k, v) VALUES ('seq', 0), ('db_id', ?)`).run(randomUUID());
  },
  (db) => {
    db.exec(`
      -- payment-provider events already applied (or acknowledged): a replay is a no-op.
      CREATE TABLE webhook_events (
        id          TEXT PRIMARY KEY,
        type        TEXT NOT NULL,
        user_id     TEXT,
        received_at TEXT NOT NULL
      ) WITHOUT ROWID;

      -- uploaded files; content lives in <dataDir>/files/<stored_name>.
      CREATE TABLE files (
        keyspace    TEXT NOT NULL,
        table_name  TEXT NOT NULL,
        name        TEXT NOT NULL,
        size        INTEGER NOT NULL,
        sha256      TEXT NOT NULL,
        type        TEXT NOT NULL,
        chunks      INTEGER NOT NULL,
        stored_name TEXT NOT NULL,
        created_at  TEXT NOT NULL,
        PRIMARY KEY (keyspace, table_name, name)
      ) WITHOUT ROWID;
    `);
  },
  // ANN segments find deletions by the rows missing from the matrix, so no log of them is kept.
  (db) => {
    db.exec('DROP TABLE deleted');
  },
  // The lexical index (lexical.ts): every table gets one, with its rows that have text.
  (db) => {
    db.exec(`ALTER TABLE tables ADD COLUMN lexical_tokenizer TEXT NOT NULL DEFAULT 'porter'`);
    for (const id of db.prepare('SELECT id FROM tables ORDER BY id').pluck().all() as number[]) {
      createLexicalIndex(db, id, 'porter');
      fillLexicalIndex(db, id);
    }
  },
  // TTL: when a row or metadata record expires (ms since the epoch, NULL: never), and each
  // table's default TTL for writes that name none. The partial index lists the expiring rows
  // (start-up reads them into expiry.ts's trackers) and costs nothing for rows without a TTL.
  (db) => {
    db.exec(`
      ALTER TABLE vectors ADD COLUMN expires_at INTEGER;
      CREATE INDEX vectors_expiry ON vectors(table_id, expires_at) WHERE expires_at IS NOT NULL;
      ALTER TABLE tables ADD COLUMN default_ttl_seconds INTEGER;
      ALTER TABLE metadata_records ADD COLUMN expires_at INTEGER;
    `);
  },
  // Each table's lexical totals, kept exact with its rows (lexical.ts, indexTexts): FTS5's own
  // count every version of a rewritten or deleted row.
  (db) => {
    db.exec('CREATE TABLE lexical_totals (table_id INTEGER PRIMARY KEY, rows INTEGER NOT NULL, tokens INTEGER NOT NULL)');
    const put = db.prepare('INSERT INTO lexical_totals (table_id, rows, tokens) VALUES (?, ?, ?)');
    for (const id of db.prepare('SELECT id FROM tables ORDER BY id').pluck().all() as number[]) {
      const { rows, tokens } = countLexicalTotals(db, id);
      put.run(id, rows, tokens);
    }
  },
];

export const SCHEMA_VERSION = MIGRATIONS.length;

/** Brings the database to SCHEMA_VERSION; returns the version it found. */
export function migrate(db: Sqlite): number {
  db.exec('CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)');
  const row = db.prepare('SELECT version FROM schema_version').get() as { version: number } | undefined;
  const found = row?.version ?? 0;
  if (found > SCHEMA_VERSION) throw new Error(`database schema version ${found} is newer than this program (${SCHEMA_VERSION})`);
  for (let v = found; v < SCHEMA_VERSION; v++) {
    db.transaction(() => {
      MIGRATIONS[v](db);
      db.prepare('DELETE FROM schema_version').run();
      db.prepare('INSERT INTO schema_version (version) VALUES (?)').run(v + 1);
    }).immediate();
  }
  return found;
}
