/**
 * Cassandra's lexical search against SQLite FTS5 on the same rows: after writes, rewrites, deletes,
 * delete-by-filter and file replacement, every query gives FTS5's rows in FTS5's order with its
 * bm25() scores. Runs only with VSS_TEST_CASSANDRA=1 (as cassandra-storage.test.ts).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import cassandraDriver from 'cassandra-driver';
import { compileFilter } from '../../index/filter.ts';
import type { Filter, LexicalTokenizer, Metadata, Storage, VectorRow } from '../api.ts';
import { rejectsWithCode } from '../contract.case.ts';
import { mulberry32 } from '../contract-random.case.ts';
import { fts5Ranker } from '../lexical/fts5-reference.case.ts';
import { openCassandraStorage } from './cassandra-storage.ts';
import type { Ctx } from './context.ts';
import { Session } from './session.ts';
import { deleteByFilter } from './vectors.ts';
import { dropPrefixed, freshNames, seamAfterScan } from './test-support.ts';

const ENABLED = process.env.VSS_TEST_CASSANDRA === '1';
const CONTACT_POINTS = (process.env.VSS_TEST_CASSANDRA_CONTACT_POINTS ?? '127.0.0.1').split(',').map((s) => s.trim()).filter(Boolean);
const LOCAL_DC = process.env.VSS_TEST_CASSANDRA_LOCAL_DC ?? 'datacenter1';
const REPLICATION = `{'class': 'SimpleStrategy', 'replication_factor': ${Number(process.env.VSS_TEST_CASSANDRA_RF ?? 1)}}`;
const D = 4;
const KS = 'lex';

const WORDS = ['running', 'runs', 'cancer', 'breast', 'statin', 'statins', 'the', 'of', 'mortality', 'Café', 'cafe', 'generalization', 'diet', 'vitamin', 'Москва', '東京', 'x'];

const textOf = (r: () => number): string => Array.from({ length: 1 + Math.floor(r() * 25) }, () => WORDS[Math.floor(WORDS.length * r() ** 2)]).join(' ');

/** What the table should hold: key -> text and metadata. */
type Mirror = Map<string, { text: string | null; metadata: Metadata }>;

const row = (key: string, text: string | null, metadata: Metadata, i: number): VectorRow => {
  const vector = new Float32Array(D);
  vector[i % D] = 1;
  vector[(i + 1) % D] += 0.5;
  return { key, vector, metadata, text };
};

const QUERIES = ['running statins', 'the of', 'cancer breast mortality', 'café generalizations', 'москва', 'vitamin "diet" OR NEAR(x)*', 'x'];

/** Every query gives FTS5's rows (on the mirror), order and scores; with a filter, FTS5's rows that pass it. */
async function agrees(s: Storage, table: string, tokenizer: LexicalTokenizer, mirror: Mirror, filter?: Filter): Promise<number> {
  const fts5 = fts5Ranker(tokenizer, [...mirror].map(([k, v]) => [k, v.text]));
  let compared = 0;
  try {
    const pass = filter ? compileFilter(filter) : () => true;
    for (const text of QUERIES) {
      const want = fts5.rank(text).filter((r) => pass(mirror.get(r.key)!.metadata)).slice(0, 20);
      const got = await s.lexicalSearch(KS, table, { text, limit: 20, filter });
      assert.deepEqual(got.map((m) => m.key), want.map((r) => r.key), `${table} "${text}"`);
      got.forEach((m, i) => {
        assert.ok(Math.abs(m.score - want[i].score) <= 1e-9 * Math.max(1, want[i].score), `${table} "${text}" ${m.key}: ${m.score} vs ${want[i].score}`);
        assert.equal(m.text, mirror.get(m.key)!.text);
        assert.deepEqual(m.metadata, mirror.get(m.key)!.metadata);
      });
      compared += got.length;
    }
  } finally {
    fts5.close();
  }
  return compared;
}

describe('Cassandra lexical search (BM25 as FTS5)', { skip: !ENABLED && 'set VSS_TEST_CASSANDRA=1 (npm run test:cassandra)' }, () => {
  const names = freshNames();
  let s: Storage;

  before(async () => {
    s = await openCassandraStorage({ contactPoints: CONTACT_POINTS, localDc: LOCAL_DC, replication: REPLICATION, ...names });
    await s.createKeyspace({ name: KS, owner: null });
  });
  after(async () => {
    await s?.close();
    await dropPrefixed(CONTACT_POINTS, LOCAL_DC, names.keyspacePrefix);
  });

  it('keeps the tokenizer a table was created with; porter by default; rejects others', async () => {
    assert.deepEqual((await s.createTable({ keyspace: KS, name: 'plain', dimension: D, metric: 'cosine', model: null })).lexical, { tokenizer: 'porter' });
    await s.createTable({ keyspace: KS, name: 'tri', dimension: D, metric: 'cosine', model: null, lexical: { tokenizer: 'trigram' } });
    assert.deepEqual((await s.getTable(KS, 'tri'))?.lexical, { tokenizer: 'trigram' });
    assert.deepEqual((await s.listTables(KS)).map((t) => [t.name, t.lexical.tokenizer]), [['plain', 'porter'], ['tri', 'trigram']]);
    await rejectsWithCode(
      s.createTable({ keyspace: KS, name: 'bad', dimension: D, metric: 'cosine', model: null, lexical: { tokenizer: 'snowball' as LexicalTokenizer } }),
      'validation_failed',
    );
  });

  for (const tokenizer of ['porter', 'unicode61', 'trigram'] as const) {
    it(`${tokenizer}: FTS5's rows and scores through upserts, rewrites, deletes, delete-by-filter and files`, async () => {
      const table = `t_${tokenizer}`;
      await s.createTable({ keyspace: KS, name: table, dimension: D, metric: 'cosine', model: null, lexical: { tokenizer } });
      const mirror: Mirror = new Map();
      const r = mulberry32(tokenizer.length * 31);
      const put = async (rows: VectorRow[]): Promise<void> => {
        await s.upsertVectors(KS, table, rows);
        for (const x of rows) mirror.set(x.key, { text: x.text, metadata: x.metadata });
      };
      // 120 rows: one large call (batched per row) and single-row calls; some without text.
      const first = Array.from({ length: 120 }, (_, i) => row(`k${i}`, i % 10 === 9 ? null : textOf(r), { group: i % 3, i }, i));
      await put(first.slice(0, 100));
      for (const x of first.slice(100)) await put([x]);
      assert.ok((await agrees(s, table, tokenizer, mirror)) > 40);
      assert.ok((await agrees(s, table, tokenizer, mirror, { group: 1 })) > 10);

      // Rewrites: new text, text removed, text added, the same text again.
      await put(Array.from({ length: 30 }, (_, j) => row(`k${j * 4}`, j % 5 === 0 ? null : j % 5 === 1 ? (mirror.get(`k${j * 4}`)!.text) : textOf(r), { group: 2, j }, j)));
      await agrees(s, table, tokenizer, mirror);

      // Deletes, by key and by filter.
      const gone = ['k1', 'k2', 'k3', 'k50', 'nope'];
      assert.equal(await s.deleteVectors(KS, table, gone), 4);
      for (const k of gone) mirror.delete(k);
      const doomed = [...mirror].filter(([, v]) => v.metadata.group === 0).length;
      assert.equal(await s.deleteByFilter(KS, table, { group: 0 }), doomed);
      for (const [k, v] of [...mirror]) if (v.metadata.group === 0) mirror.delete(k);
      await agrees(s, table, tokenizer, mirror);

      // A file, replaced by a shorter one, then deleted.
      const chunks = (name: string, n: number, v: number): VectorRow[] => Array.from({ length: n }, (_, i) => row(`${name}#${i}`, `${textOf(r)} statin v${v}`, { source_file: name, v }, i));
      const file = (name: string, n: number) => ({ keyspace: KS, table, name, size: 3, sha256: 'x'.repeat(64), type: 'txt', chunks: n, createdAt: new Date().toISOString() });
      const record = { keyspace: KS, table, source_file: 'f.txt', raw_value: 'x', source_type: 'txt', processing_details: '' };
      const setFile = (rows: VectorRow[]): void => {
        for (const k of [...mirror.keys()]) if (k.startsWith('f.txt#')) mirror.delete(k);
        for (const x of rows) mirror.set(x.key, { text: x.text, metadata: x.metadata });
      };
      const v1 = chunks('f.txt', 6, 1);
      await s.replaceFile(file('f.txt', 6), Buffer.from('abc'), v1, record);
      setFile(v1);
      await agrees(s, table, tokenizer, mirror);
      const v2 = chunks('f.txt', 2, 2);
      await s.replaceFile(file('f.txt', 2), Buffer.from('abc'), v2, record);
      setFile(v2);
      await agrees(s, table, tokenizer, mirror);
      assert.equal(await s.deleteFile(KS, table, 'f.txt'), true);
      setFile([]);
      assert.ok((await agrees(s, table, tokenizer, mirror)) > 20);
      assert.ok((await agrees(s, table, tokenizer, mirror, { group: { $in: [1, 2] } })) > 10);
    });
  }

  it('indexes a table made before lexical search when a store opens, rows written since included', async () => {
    await s.createTable({ keyspace: KS, name: 'old', dimension: D, metric: 'cosine', model: null });
    const mirror: Mirror = new Map();
    const r = mulberry32(7);
    // Rows as an earlier version wrote them: in the data table only, and a catalog row without a tokenizer.
    const raw = new cassandraDriver.Client({ contactPoints: CONTACT_POINTS, localDataCenter: LOCAL_DC });
    await raw.connect();
    try {
      for (let i = 0; i < 60; i++) {
        const text = i % 7 === 6 ? null : textOf(r);
        await raw.execute(`INSERT INTO "${names.keyspacePrefix}${KS}"."old" ("key", "vector", "metadata", "text") VALUES (?, ?, ?, ?)`, [`o${i}`, new cassandraDriver.types.Vector(row('x', null, {}, i).vector, 'float'), JSON.stringify({ i }), text], { prepare: true });
        mirror.set(`o${i}`, { text, metadata: { i } });
      }
      await raw.execute(`UPDATE "${names.systemKeyspace}".tables SET lexical_tokenizer = null WHERE keyspace_name = ? AND table_name = ?`, [KS, 'old'], { prepare: true });
    } finally {
      await raw.shutdown();
    }
    assert.deepEqual(await s.lexicalSearch(KS, 'old', { text: 'cancer', limit: 5 }), [], 'not indexed yet');
    const again = await openCassandraStorage({ contactPoints: CONTACT_POINTS, localDc: LOCAL_DC, replication: REPLICATION, ...names });
    try {
      await again.lexicalBackfill;
      assert.deepEqual((await again.getTable(KS, 'old'))?.lexical, { tokenizer: 'porter' });
      assert.ok((await agrees(again, 'old', 'porter', mirror)) > 20);
      // A second open finds nothing to do; writes after it keep the index exact.
      await again.upsertVectors(KS, 'old', [row('o1', 'statins statins', { i: 1 }, 1)]);
      mirror.set('o1', { text: 'statins statins', metadata: { i: 1 } });
      await agrees(again, 'old', 'porter', mirror);
    } finally {
      await again.close();
    }
  });

  it('a row rewritten between a delete-by-filter scan and its deletes stays found, same text or not', async () => {
    await s.createTable({ keyspace: KS, name: 'race', dimension: D, metric: 'cosine', model: null });
    await s.upsertVectors(KS, 'race', [row('same', 'gasket seal', { doomed: true }, 0), row('other', 'gasket valve', { doomed: true }, 1), row('gone', 'gasket pump', { doomed: true }, 2)]);
    // A second session deletes by filter, with a seam after its scan where this store rewrites two of the rows.
    const session = new Session({ contactPoints: CONTACT_POINTS, localDc: LOCAL_DC, writeConsistency: 'QUORUM' });
    await session.connect();
    const seam = seamAfterScan(session, 'SELECT "key", "metadata"');
    seam.between = async () => {
      await new Promise((r) => setTimeout(r, 2));
      await s.upsertVectors(KS, 'race', [row('same', 'gasket seal', { doomed: false }, 0), row('other', 'gasket ring', { doomed: false }, 1)]);
    };
    try {
      const ctx: Ctx = { session, systemKeyspace: names.systemKeyspace, replication: REPLICATION, exactScanMaxRows: 10_000, keyspacePrefix: names.keyspacePrefix };
      assert.equal(await deleteByFilter(ctx, KS, 'race', { doomed: true }), 3);
    } finally {
      await session.shutdown();
    }
    assert.equal(seam.between, null, 'the seam ran');
    const found = await s.lexicalSearch(KS, 'race', { text: 'gasket seal ring pump valve', limit: 10 });
    assert.deepEqual(found.map((m) => [m.key, m.text]).sort(), [['other', 'gasket ring'], ['same', 'gasket seal']]);
    const mirror: Mirror = new Map([['same', { text: 'gasket seal', metadata: { doomed: false } }], ['other', { text: 'gasket ring', metadata: { doomed: false } }]]);
    await agrees(s, 'race', 'porter', mirror);
  });

  it('searches odd queries literally: punctuation only, query syntax, 8 KiB, non-Latin; never an error', async () => {
    await s.upsertVectors(KS, 'plain', [row('a', 'NEAR the "quoted" word OR AND * ^ -x', {}, 0), row('b', 'Москва 東京 نص', {}, 1), row('c', null, {}, 2)]);
    assert.deepEqual(await s.lexicalSearch(KS, 'plain', { text: '', limit: 5 }), []);
    assert.deepEqual(await s.lexicalSearch(KS, 'plain', { text: '!!! ... --- "" *', limit: 5 }), []);
    assert.deepEqual((await s.lexicalSearch(KS, 'plain', { text: 'NEAR(OR AND "quoted', limit: 5 })).map((m) => m.key), ['a']);
    assert.deepEqual((await s.lexicalSearch(KS, 'plain', { text: 'москва', limit: 5 })).map((m) => m.key), ['b']);
    const long = 'quoted '.repeat(1200).slice(0, 8192);
    assert.deepEqual((await s.lexicalSearch(KS, 'plain', { text: long, limit: 5 })).map((m) => m.key), ['a']);
    const varied = Array.from({ length: 1500 }, (_, i) => `w${i}`).join(' ').slice(0, 8192);
    assert.deepEqual(await s.lexicalSearch(KS, 'plain', { text: varied, limit: 5 }), []);
    assert.equal((await s.lexicalSearch(KS, 'plain', { text: 'word', limit: 5, includeVector: true }))[0].vector?.length, D);
    await rejectsWithCode(s.lexicalSearch(KS, 'missing', { text: 'word', limit: 5 }), 'table_not_found');
  });
});
