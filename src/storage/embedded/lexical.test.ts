/**
 * The embedded lexical index's own cases (the shared ones are in contract-lexical.case.ts):
 * a database from before the index existed gets one at start, with its rows that have text.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { openEmbeddedStorage } from './embedded-storage.ts';

const index = { saveEveryChanges: 1_000_000, saveEveryMs: 3_600_000, exactBelowRows: 0 };

describe('embedded lexical index', () => {
  let dir: string;
  before(async () => (dir = await fs.mkdtemp(path.join(os.tmpdir(), 'vss-lexical-'))));
  after(() => fs.rm(dir, { recursive: true, force: true }));

  it('indexes the existing rows with text of a database from before the lexical index (migration)', async () => {
    const dataDir = path.join(dir, 'old');
    let s = await openEmbeddedStorage({ dataDir, index });
    await s.createKeyspace({ name: 'ks', owner: null });
    for (const name of ['a', 'b']) {
      await s.createTable({ keyspace: 'ks', name, dimension: 2, metric: 'cosine', model: null });
      await s.upsertVectors('ks', name, [
        { key: `${name}1`, vector: Float32Array.of(1, 0), metadata: {}, text: `quartz crystal in table ${name}` },
        { key: `${name}2`, vector: Float32Array.of(0, 1), metadata: {}, text: null },
        { key: `${name}3`, vector: Float32Array.of(1, 1), metadata: {}, text: 'granite' },
      ]);
    }
    await s.close();
    // Back to schema version 3: no tokenizer column, no FTS5 tables.
    const raw = new Database(path.join(dataDir, 'vss.db'));
    for (const t of raw.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB 'lex_[0-9]*' AND name NOT GLOB 'lex_*_*'`).pluck().all() as string[]) raw.exec(`DROP TABLE ${t}`);
    raw.exec('ALTER TABLE tables DROP COLUMN lexical_tokenizer');
    // Nor what later versions added (the TTL columns of version 5).
    raw.exec('DROP INDEX vectors_expiry; ALTER TABLE vectors DROP COLUMN expires_at; ALTER TABLE tables DROP COLUMN default_ttl_seconds; ALTER TABLE metadata_records DROP COLUMN expires_at');
    raw.exec('UPDATE schema_version SET version = 3');
    raw.close();

    s = await openEmbeddedStorage({ dataDir, index });
    try {
      assert.deepEqual((await s.getTable('ks', 'a'))!.lexical, { tokenizer: 'porter' });
      assert.deepEqual((await s.lexicalSearch('ks', 'a', { text: 'crystals', limit: 5 })).map((m) => m.key), ['a1']);
      assert.deepEqual((await s.lexicalSearch('ks', 'b', { text: 'granite quartz', limit: 5 })).map((m) => m.key).sort(), ['b1', 'b3']);
      await s.upsertVectors('ks', 'a', [{ key: 'a2', vector: Float32Array.of(0, 1), metadata: {}, text: 'quartz' }]);
      assert.deepEqual((await s.lexicalSearch('ks', 'a', { text: 'quartz', limit: 5 })).map((m) => m.key).sort(), ['a1', 'a2']);
    } finally {
      await s.close();
    }
  });
});
