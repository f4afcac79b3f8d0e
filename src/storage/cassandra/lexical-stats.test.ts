/**
 * BM25's statistics on Cassandra with expiring rows (lexical-stats.ts): the bucket arithmetic
 * (always), and against a real Cassandra (VSS_TEST_CASSANDRA=1) that rows written with a short TTL
 * count while they live and leave N, the average length and the document frequencies when they
 * expire, through rewrites and deletes and from two processes at once, so that the rows left score
 * as FTS5 scores them in a table that never had the others, and as a fresh Cassandra table does.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { MAX_TTL_SECONDS, type Storage, type VectorRow } from '../api.ts';
import { mulberry32 } from '../contract-random.case.ts';
import { fts5Ranker } from '../lexical/fts5-reference.case.ts';
import { termCounts } from '../lexical/tokenize.ts';
import { openCassandraStorage } from './cassandra-storage.ts';
import type { Ctx } from './context.ts';
import { BUCKET_CLASSES, bucketOf, liveBucketBound, readStats, StatsChange } from './lexical-stats.ts';
import { Session } from './session.ts';
import { dropPrefixed, freshNames } from './test-support.ts';

const widthOf = (ttl: number): number => BUCKET_CLASSES.find(([max]) => ttl <= max)![1];

describe('lexical statistics buckets', () => {
  it('count a row from its write until at most one bucket width (plus a second) after its expiry, never less', () => {
    const r = mulberry32(7);
    const ttls = [...Array.from({ length: 700 }, (_, i) => i + 1), ...Array.from({ length: 2000 }, () => 1 + Math.floor(r() ** 4 * MAX_TTL_SECONDS))];
    for (const ttl of ttls) {
      const nowMs = 1_790_000_000_000 + Math.floor(r() * 1e9);
      const expiry = Math.floor(nowMs / 1000) + ttl;
      const bucket = bucketOf(nowMs, ttl);
      const width = widthOf(ttl);
      assert.equal(bucket % width, 0, `ttl ${ttl}: bucket ${bucket} is a bucket end`);
      assert.ok(bucket > expiry, `ttl ${ttl}: counted up to its expiry ${expiry}, bucket ${bucket}`);
      assert.ok(bucket - expiry <= width + 1, `ttl ${ttl}: ${bucket - expiry} s past expiry, width ${width}`);
    }
    assert.equal(bucketOf(1_000_000_000_500, 10), 1_000_000_011, 'one-second buckets: expiry + 1');
  });

  it('a read sums a bounded number of buckets, whatever the TTLs written before it', () => {
    const bound = liveBucketBound(MAX_TTL_SECONDS);
    assert.ok(bound <= 2_600, `bound ${bound}`);
    // Rows written at any moment before `now` with any TTL, still alive at `now`: their buckets ahead.
    const r = mulberry32(11);
    const nowS = 1_800_000_000;
    const ahead = new Set<number>();
    for (let i = 0; i < 400_000; i++) {
      const ttl = 1 + Math.floor(r() ** 3 * MAX_TTL_SECONDS);
      const writtenS = nowS - Math.floor(r() * ttl);
      const b = bucketOf(writtenS * 1000 + Math.floor(r() * 1000), ttl);
      if (b > nowS) ahead.add(b);
    }
    for (let ttl = 1; ttl <= 600; ttl++) for (let back = 0; back < ttl; back++) ahead.add(bucketOf((nowS - back) * 1000, ttl));
    assert.ok(ahead.size <= bound, `${ahead.size} buckets ahead, bound ${bound}`);
    assert.ok(ahead.size > 600, `the sample reaches many buckets (${ahead.size})`);
  });
});

const ENABLED = process.env.VSS_TEST_CASSANDRA === '1';
const CONTACT_POINTS = (process.env.VSS_TEST_CASSANDRA_CONTACT_POINTS ?? '127.0.0.1').split(',').map((s) => s.trim()).filter(Boolean);
const LOCAL_DC = process.env.VSS_TEST_CASSANDRA_LOCAL_DC ?? 'datacenter1';
const REPLICATION = `{'class': 'SimpleStrategy', 'replication_factor': ${Number(process.env.VSS_TEST_CASSANDRA_RF ?? 1)}}`;
const KS = 'lexttl';
const D = 4;
const TTL_MS = 3_000;
/** Past a TTL_MS expiry: the engine's second, the bucket's extra second, and slack for a loaded machine. */
const PAST_TTL_MS = TTL_MS + 3_000;

const WORDS = ['walrus', 'ocean', 'tusk', 'ice', 'seal', 'arctic', 'the', 'of', 'swims', 'swimming', 'krill', 'pod'];
const QUERIES = ['walrus tusk', 'ocean ice seal', 'the of', 'swimming krill', 'pod', 'arctic walrus swims'];

describe('Cassandra lexical statistics of expiring rows', { skip: !ENABLED && 'set VSS_TEST_CASSANDRA=1 (npm run test:cassandra)' }, () => {
  const names = freshNames();
  let s: Storage;
  let s2: Storage;
  let session: Session;
  let ctx: Ctx;

  before(async () => {
    const opts = { contactPoints: CONTACT_POINTS, localDc: LOCAL_DC, replication: REPLICATION, ...names };
    s = await openCassandraStorage(opts);
    s2 = await openCassandraStorage(opts);
    await s.createKeyspace({ name: KS, owner: null });
    session = new Session({ contactPoints: CONTACT_POINTS, localDc: LOCAL_DC, writeConsistency: 'QUORUM' });
    await session.connect();
    ctx = { session, systemKeyspace: names.systemKeyspace, replication: REPLICATION, exactScanMaxRows: 10_000, keyspacePrefix: names.keyspacePrefix };
  });
  after(async () => {
    await s?.close();
    await s2?.close();
    await session?.shutdown();
    await dropPrefixed(CONTACT_POINTS, LOCAL_DC, names.keyspacePrefix);
  });

  const rowOf = (key: string, text: string | null, expiresAt: number | null, i: number): VectorRow => {
    const vector = new Float32Array(D);
    vector[i % D] = 1;
    vector[(i + 1) % D] += 0.5;
    return { key, vector, metadata: { i }, text, expiresAt };
  };

  /** Every query ranks as FTS5 over `rows` (same keys, order, scores), and the statistics are those rows' N and tokens. */
  async function scoresAsIn(table: string, rows: Map<string, string>, label: string): Promise<void> {
    const t = (await s.getTable(KS, table))!;
    const stats = await readStats(ctx, t);
    const tokens = [...rows.values()].reduce((n, text) => n + termCounts('porter', text).length, 0);
    assert.deepEqual(stats, { rows: rows.size, tokens }, `${label}: N and total length`);
    const fts5 = fts5Ranker('porter', rows);
    try {
      for (const text of QUERIES) {
        const want = fts5.rank(text).slice(0, 50);
        const got = await s.lexicalSearch(KS, table, { text, limit: 50 });
        assert.deepEqual(got.map((m) => m.key), want.map((w) => w.key), `${label} "${text}"`);
        got.forEach((m, i) => assert.ok(Math.abs(m.score - want[i].score) <= 1e-9 * Math.max(1, want[i].score), `${label} "${text}" ${m.key}: ${m.score} vs ${want[i].score}`));
      }
    } finally {
      fts5.close();
    }
  }

  it('rows that expire count while they live and leave N, the average length and df when they expire, through rewrites and deletes, from two processes', async () => {
    await s.createTable({ keyspace: KS, name: 'lived', dimension: D, metric: 'cosine', model: null });
    const r = mulberry32(3);
    const text = (): string => Array.from({ length: 2 + Math.floor(r() * 12) }, () => WORDS[Math.floor(WORDS.length * r() ** 1.5)]).join(' ');
    const lasting = new Map<string, string>();
    const expiring = new Map<string, string>();
    for (let i = 0; i < 30; i++) lasting.set(`keep${i}`, text());
    for (let i = 0; i < 40; i++) expiring.set(`gone${i}`, text());
    await s.upsertVectors(KS, 'lived', [...lasting].map(([k, v], i) => rowOf(k, v, null, i)));
    // Two processes write the expiring rows at once, in batches of several rows.
    const at = Date.now() + TTL_MS;
    const doomed = [...expiring].map(([k, v], i) => rowOf(k, v, at, i));
    await Promise.all([0, 1, 2, 3].map((p) => (p % 2 === 0 ? s : s2).upsertVectors(KS, 'lived', doomed.filter((_, i) => i % 4 === p))));

    // Rewrites and deletes of expiring rows: kept for good, moved to a far expiry with new text,
    // deleted; and a lasting row rewritten to expire.
    const kept = 'walrus ocean tusk tusk';
    const moved = 'seal krill pod arctic arctic arctic';
    await s.upsertVectors(KS, 'lived', [rowOf('gone0', kept, null, 0), rowOf('gone1', moved, Date.now() + 3_600_000, 1)]);
    await s2.upsertVectors(KS, 'lived', [rowOf('keep0', lasting.get('keep0')!, Date.now() + TTL_MS, 0)]);
    await s.deleteVectors(KS, 'lived', ['gone2', 'keep1']);
    const live = new Map([...lasting, ...expiring]);
    live.set('gone0', kept);
    live.set('gone1', moved);
    live.delete('gone2');
    live.delete('keep1');
    await scoresAsIn('lived', live, 'before expiry');

    await new Promise((resolve) => setTimeout(resolve, PAST_TTL_MS));
    const survivors = new Map(lasting);
    survivors.delete('keep0');
    survivors.delete('keep1');
    survivors.set('gone0', kept);
    survivors.set('gone1', moved);
    await scoresAsIn('lived', survivors, 'after expiry');

    // A table that never had the expired rows scores alike.
    await s.createTable({ keyspace: KS, name: 'fresh', dimension: D, metric: 'cosine', model: null });
    await s.upsertVectors(KS, 'fresh', [...survivors].map(([k, v], i) => rowOf(k, v, null, i)));
    for (const q of QUERIES) {
      const a = await s.lexicalSearch(KS, 'lived', { text: q, limit: 50 });
      const b = await s2.lexicalSearch(KS, 'fresh', { text: q, limit: 50 });
      assert.deepEqual(a.map((m) => [m.key, m.score]), b.map((m) => [m.key, m.score]), `"${q}": the same rows and scores as a table that never had the expired rows`);
    }

    // The row moved to a far expiry still counts; deleting it takes it out of its bucket.
    await s2.deleteVectors(KS, 'lived', ['gone1']);
    survivors.delete('gone1');
    await scoresAsIn('lived', survivors, 'after deleting the far-expiring row');
  });

  it('a write drops the buckets that ended over an hour before it', async () => {
    await s.createTable({ keyspace: KS, name: 'swept', dimension: D, metric: 'cosine', model: null });
    const t = (await s.getTable(KS, 'swept'))!;
    await s.upsertVectors(KS, 'swept', [rowOf('a', 'walrus', Date.now() + 60_000, 0), rowOf('b', 'ocean ice', Date.now() + 120_000, 1)]);
    const cells = async (): Promise<number> => {
      const rs = await session.execute('read', `SELECT count(*) AS n FROM "${names.systemKeyspace}".lexical_stats_expiring WHERE keyspace_name = ? AND table_name = ?`, [KS, 'swept']);
      return Number(String(rs.first().n));
    };
    assert.equal(await cells(), 2, 'two one-second buckets');
    // A write three hours on: its own bucket is added, the two that ended over an hour before are removed.
    const later = Date.now() + 3 * 3_600_000;
    const change = await StatsChange.of(ctx, t, new Set());
    change.add('c', { counts: new Map([['seal', 1]]), length: 1 }, 60, later);
    await change.apply(later);
    assert.equal(await cells(), 1);
    assert.deepEqual(await readStats(ctx, t, later), { rows: 1, tokens: 1 });
  });
});
