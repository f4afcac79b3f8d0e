/**
 * The embedded lexical index's own cases (the shared ones are in contract-lexical.case.ts):
 * a database from before the index existed gets one at start, with its rows that have text; the
 * pruned search (prune.ts) answers FTS5's own ranking, through writes made after its caches filled.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Database } from './sqlite-driver.ts';
import { mulberry32 } from '../contract-random.case.ts';
import { queryPhrases } from '../lexical/bm25.ts';
import { PRUNE_FROM_ROWS } from '../lexical/prune.ts';
import { tokenize } from '../lexical/tokenize.ts';
import { openEmbeddedStorage } from './embedded-storage.ts';
import { lexicalTotals, matchExpression, rankLexical } from './lexical.ts';
import { postingSearches } from './lexical-postings.ts';
import { Db } from './sql.ts';

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
    raw.exec('DROP TABLE lexical_totals'); // and version 6's
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

  it('keeps BM25 totals exact through rewrites and deletes: as a fresh table holding the same final rows', async () => {
    const s = await openEmbeddedStorage({ dataDir: path.join(dir, 'rewrites'), index });
    const rows = (round: number) =>
      Array.from({ length: 50 }, (_, i) => ({ key: `k${i}`, vector: Float32Array.of(1, i), metadata: {}, text: round === 3 && i % 10 === 0 ? null : `alpha beta ${'gamma '.repeat(1 + ((i + round) % 4))}row${i}` }));
    try {
      await s.createKeyspace({ name: 'ks', owner: null });
      await s.createTable({ keyspace: 'ks', name: 'rewritten', dimension: 2, metric: 'cosine', model: null });
      await s.createTable({ keyspace: 'ks', name: 'fresh', dimension: 2, metric: 'cosine', model: null });
      // Three rewrites of every row (other lengths each time), the last also taking some rows' text away, then deletes.
      for (const round of [0, 1, 2, 3]) await s.upsertVectors('ks', 'rewritten', rows(round));
      await s.deleteVectors('ks', 'rewritten', ['k1', 'k2']);
      await s.upsertVectors('ks', 'fresh', rows(3).filter((r) => r.key !== 'k1' && r.key !== 'k2'));
      const raw = new Database(path.join(dir, 'rewrites', 'vss.db'), { readonly: true });
      try {
        const fresh = lexicalTotals(new Db(raw), 2);
        assert.deepEqual(fresh, { rows: 43, tokens: rows(3).reduce((n, r) => n + (r.text !== null && r.key !== 'k1' && r.key !== 'k2' ? r.text.split(' ').length : 0), 0) });
        assert.deepEqual(lexicalTotals(new Db(raw), 1), fresh);
      } finally {
        raw.close();
      }
    } finally {
      await s.close();
    }
  });

  it('pruned search gives the rows and scores FTS5 ranks over every row, before and after writes', async () => {
    const r = mulberry32(11);
    // Past PRUNE_FROM_ROWS, where searches are pruned (smaller tables are ranked by FTS5 whole).
    const ROWS = PRUNE_FROM_ROWS + 1000;
    // Zipf-like words: a few in most rows (no candidates of their own), some in many, most in few.
    const vocab = Array.from({ length: 400 }, (_, i) => `w${i}x`);
    const text = () => Array.from({ length: 3 + Math.floor(r() * 15) }, () => vocab[Math.floor(vocab.length * r() ** 3)]).join(' ');
    const texts = new Map<string, string | null>(Array.from({ length: ROWS }, (_, i) => [`k${i}`, text()]));
    const s = await openEmbeddedStorage({ dataDir: path.join(dir, 'pruned'), index });
    const put = (keys: string[]) => s.upsertVectors('ks', 't', keys.map((key, i) => ({ key, vector: Float32Array.of(1, i % 5), metadata: {}, text: texts.get(key) ?? null })));
    try {
      await s.createKeyspace({ name: 'ks', owner: null });
      await s.createTable({ keyspace: 'ks', name: 't', dimension: 2, metric: 'cosine', model: null });
      for (let i = 0; i < ROWS; i += 2000) await put([...texts.keys()].slice(i, i + 2000));
      const queries = Array.from({ length: 40 }, (_, q) => Array.from({ length: 1 + (q % 5) }, () => vocab[Math.floor(vocab.length * r() ** 2)]).join(' '));
      let compared = 0;
      // The reference: FTS5 ranking every row of the same table (its row count and total length are
      // its own, which after rewrites can differ from a fresh index of the same texts).
      const reference = new Database(path.join(dir, 'pruned', 'vss.db'), { readonly: true });
      // After rewrites FTS5's own totals count every version of a row (see indexTexts): the
      // reference is then a fresh table of the same final rows (table id 2).
      let referenceTable = 1;
      const fts5 = {
        rank: (q: string) =>
          rankLexical(new Db(reference), referenceTable, matchExpression(q)!, 100_000).map((m) => ({
            key: reference.prepare('SELECT key FROM vectors WHERE id = ?').pluck().get(m.rowId) as string,
            score: m.score,
          })),
      };
      const check = async (round: string) => {
        // The first search starts the in-memory lists' build (a slice per turn; FTS5 answers meanwhile).
        for (let i = 0; postingSearches.answered === 0; i++) {
          assert.ok(i < 1000, 'the posting lists were never built');
          await s.lexicalSearch('ks', 't', { text: vocab[5], limit: 1 });
          await new Promise((resolve) => setImmediate(resolve));
        }
        const answered = postingSearches.answered;
        const rows = [...texts.values()].filter((t) => t !== null && t !== '').map((t) => tokenize('porter', t!));
        const n = lexicalTotals(new Db(reference), referenceTable).rows;
        assert.equal(n, lexicalTotals(new Db(reference), 1).rows);
        {
          for (const q of queries) {
            // The rule of prune.ts: a row matches by a word in fewer than half the rows, unless all are that common.
            const df = (p: string[]) => rows.filter((t) => t.includes(p[0])).length;
            const present = queryPhrases('porter', q).filter((p) => df(p) > 0);
            const rare = present.filter((p) => 2 * df(p) < n);
            const seeds = new Set((rare.length > 0 ? rare : present).map((p) => p[0]));
            const want = fts5.rank(q).filter((m) => tokenize('porter', texts.get(m.key)!).some((t) => seeds.has(t)));
            for (const limit of [1, 10, 100]) {
              const got = await s.lexicalSearch('ks', 't', { text: q, limit });
              assert.equal(got.length, Math.min(limit, want.length), `${round} ${q} ${limit}`);
              if (process.env.DBG && Math.abs(got[0]?.score - want[0]?.score) > 1e-9) console.error(q, got.slice(0, 3).map((m) => [m.key, m.score]), want.slice(0, 3));
              got.forEach((m, i) => assert.ok(Math.abs(m.score - want[i].score) <= 1e-9 * want[i].score, `${round} ${q} #${i}: ${m.score} vs ${want[i].score}`));
              // The rows themselves, wherever the score is not tied with the next row outside.
              const cut = want[got.length]?.score ?? -1;
              const sure = new Set(want.slice(0, got.length).filter((m) => Math.abs(m.score - cut) > 1e-12).map((m) => m.key));
              for (const k of sure) assert.ok(got.some((m) => m.key === k), `${round} ${q} ${limit}: ${k} missing`);
              compared += got.length;
            }
          }
        }
        assert.equal(postingSearches.answered - answered, queries.length * 3, `${round}: every search answered from the posting lists`);
      };
      await check('fresh');
      // Writes after the first queries: rewrites to other texts, new rows, rows losing their text, deletes.
      const changed = Array.from({ length: 300 }, (_, i) => `k${(i * 7) % ROWS}`);
      for (const k of changed.slice(0, 200)) texts.set(k, text());
      for (const k of changed.slice(200, 250)) texts.set(k, null);
      for (let i = 0; i < 100; i++) texts.set(`n${i}`, `${vocab[1]} ${vocab[2]} ${vocab[3]} `.repeat(1 + (i % 3)).trim());
      await put([...changed.slice(0, 250), ...Array.from({ length: 100 }, (_, i) => `n${i}`)]);
      await s.deleteVectors('ks', 't', changed.slice(250));
      for (const k of changed.slice(250)) texts.delete(k);
      await s.createTable({ keyspace: 'ks', name: 'fresh', dimension: 2, metric: 'cosine', model: null });
      const keys = [...texts.keys()];
      for (let i = 0; i < keys.length; i += 2000) {
        await s.upsertVectors('ks', 'fresh', keys.slice(i, i + 2000).map((key) => ({ key, vector: Float32Array.of(1, 0), metadata: {}, text: texts.get(key) ?? null })));
      }
      referenceTable = 2;
      await check('after writes');
      reference.close();
      assert.ok(compared > 3000, `compared ${compared} rows`);
    } finally {
      await s.close();
    }
  });
});
