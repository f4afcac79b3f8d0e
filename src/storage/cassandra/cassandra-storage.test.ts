/**
 * The storage contract, and what is particular to Cassandra, against a running Cassandra 5.
 * Runs only with VSS_TEST_CASSANDRA=1 (`npm run test:cassandra` starts a local node, runs this
 * and stops it); otherwise it skips. Each open() uses a fresh random keyspace prefix and system
 * keyspace, and cleanup drops them, so runs never see each other's data.
 *
 * Environment (tests only): VSS_TEST_CASSANDRA_CONTACT_POINTS (default 127.0.0.1),
 * VSS_TEST_CASSANDRA_LOCAL_DC (default datacenter1), VSS_TEST_CASSANDRA_RF (SimpleStrategy replication
 * factor, default 1).
 */
import { randomBytes } from 'node:crypto';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import cassandraDriver from 'cassandra-driver';
import { exactScore, compareScores, type Metric } from '../../index/metric.ts';
import type { FileRecord, MetadataRecord, Storage, VectorRow } from '../api.ts';
import { rejectsWithCode, storageContract } from '../contract.case.ts';
import { openCassandraStorage, type CassandraStorageOptions } from './cassandra-storage.ts';
import type { Ctx } from './context.ts';
import { fromEngine, searchWithPlan } from './search.ts';
import { Session } from './session.ts';
import { dropPrefixed as dropTestKeyspaces, recordStatements, seamAfterScan, storedContentIds } from './test-support.ts';
import { countVectors, deleteByFilter, deleteVectors, upsertVectors } from './vectors.ts';
import { repairRowCount } from './counts-repair.ts';
import { stopCounting, type StoredTable } from './counts.ts';

const ENABLED = process.env.VSS_TEST_CASSANDRA === '1';
const CONTACT_POINTS = (process.env.VSS_TEST_CASSANDRA_CONTACT_POINTS ?? '127.0.0.1').split(',').map((s) => s.trim()).filter(Boolean);
const LOCAL_DC = process.env.VSS_TEST_CASSANDRA_LOCAL_DC ?? 'datacenter1';
const REPLICATION = `{'class': 'SimpleStrategy', 'replication_factor': ${Number(process.env.VSS_TEST_CASSANDRA_RF ?? 1)}}`;

/** Drops every Cassandra keyspace whose name starts with `prefix`. */
const dropPrefixed = (prefix: string): Promise<void> => dropTestKeyspaces(CONTACT_POINTS, LOCAL_DC, prefix);

/** A fresh, isolated store: its own keyspace prefix and system keyspace. */
async function openFresh(extra: Partial<CassandraStorageOptions> = {}): Promise<{ storage: Storage; prefix: string; cleanup: () => Promise<void> }> {
  const prefix = `t${randomBytes(5).toString('hex')}_`;
  const storage = await openCassandraStorage({
    contactPoints: CONTACT_POINTS,
    localDc: LOCAL_DC,
    replication: REPLICATION,
    systemKeyspace: `${prefix}vss_system`,
    keyspacePrefix: prefix,
    ...extra,
  });
  return {
    storage,
    prefix,
    cleanup: async () => {
      await storage.close();
      await dropPrefixed(prefix);
    },
  };
}

/**
 * A fresh storage (openFresh) and a session of its own to the same cluster, as another process
 * has, with that session's Ctx for a given scan threshold; both closed and the keyspaces dropped
 * after `fn`.
 */
async function withSession(
  extra: Partial<CassandraStorageOptions>,
  fn: (s: { storage: Storage; prefix: string; session: Session; ctxOf: (exactScanMaxRows: number) => Ctx }) => Promise<void>,
): Promise<void> {
  const { storage, prefix, cleanup } = await openFresh(extra);
  const session = new Session({ contactPoints: CONTACT_POINTS, localDc: LOCAL_DC, writeConsistency: 'QUORUM' });
  await session.connect();
  const ctxOf = (exactScanMaxRows: number): Ctx => ({ session, systemKeyspace: `${prefix}vss_system`, replication: REPLICATION, exactScanMaxRows, keyspacePrefix: prefix });
  try {
    await fn({ storage, prefix, session, ctxOf });
  } finally {
    await session.shutdown();
    await cleanup();
  }
}

function rng(seed: number): () => number {
  let s = seed;
  return () => (s = (s * 16807) % 2147483647) / 2147483647;
}

/** Clustered data (as embeddings are): `k` centres, rows scattered around them. */
function clustered(n: number, d: number, k: number, seed: number): VectorRow[] {
  const r = rng(seed);
  const centres = Array.from({ length: k }, () => Float32Array.from({ length: d }, () => r() * 2 - 1));
  return Array.from({ length: n }, (_, i) => {
    const c = centres[i % k];
    return { key: `r${i}`, vector: Float32Array.from(c, (x) => x + (r() - 0.5) * 0.6), metadata: { i, cluster: i % k }, text: `row ${i}` };
  });
}

function brute(rows: VectorRow[], q: Float32Array, metric: Metric, limit: number): string[] {
  return rows
    .map((x) => ({ key: x.key, score: exactScore(metric, q, x.vector) }))
    .sort(compareScores(metric))
    .slice(0, limit)
    .map((x) => x.key);
}

if (!ENABLED) {
  describe('cassandra storage', () => {
    it('is skipped: set VSS_TEST_CASSANDRA=1 with a Cassandra 5 on 127.0.0.1, or run `npm run test:cassandra`', { skip: 'VSS_TEST_CASSANDRA is not 1' }, () => {});
  });
} else {
  storageContract('cassandra', () => openFresh());

  describe('cassandra specifics', () => {
    let s: Storage;
    let cleanup: () => Promise<void>;
    before(async () => {
      // exactScanMaxRows 0: every search with the table's own metric goes through the ANN index.
      ({ storage: s, cleanup } = await openFresh({ exactScanMaxRows: 0 }));
      await s.createKeyspace({ name: 'spec', owner: null });
    });
    after(async () => cleanup());

    it('ANN stage 1 scored by the engine: recall@10 against brute force', async (t) => {
      const d = 48;
      await s.createTable({ keyspace: 'spec', name: 'ann', dimension: d, metric: 'cosine', model: null });
      const rows = clustered(1500, d, 12, 7);
      const t0 = performance.now();
      for (let i = 0; i < rows.length; i += 250) await s.upsertVectors('spec', 'ann', rows.slice(i, i + 250));
      const secs = (performance.now() - t0) / 1000;
      t.diagnostic(`ingest ${rows.length} rows x ${d} dims: ${(rows.length / secs).toFixed(0)} rows/s`);
      const r = rng(99);
      let hit = 0;
      const queries = 30;
      const t1 = performance.now();
      for (let i = 0; i < queries; i++) {
        const q = Float32Array.from(rows[Math.floor(r() * rows.length)].vector, (x) => x + (r() - 0.5) * 0.2);
        const want = new Set(brute(rows, q, 'cosine', 10));
        const got = await s.search('spec', 'ann', { vector: q, metric: 'cosine', candidates: 10, limit: 10 });
        assert.equal(got.length, 10);
        for (const g of got) {
          if (want.has(g.key)) hit++;
          assert.ok(Math.abs(g.score - exactScore('cosine', q, rows[Number(g.key.slice(1))].vector)) < 1e-6, 'cosine scores are the engine\'s, within float32 rounding');
        }
        for (let j = 1; j < got.length; j++) assert.ok(got[j - 1].score >= got[j].score, 'best first');
      }
      const recall = hit / (queries * 10);
      t.diagnostic(`recall@10 (ANN LIMIT 50, engine-scored): ${recall.toFixed(3)}; ${((performance.now() - t1) / queries).toFixed(1)} ms per search`);
      assert.ok(recall >= 0.9, `recall ${recall}`);
    });

    it('asks the engine for final_top_k rows, wider only by ef (up to initial_top_k); a table initial_top_k covers is asked again whole', async () => {
      await s.createTable({ keyspace: 'spec', name: 'width', dimension: 4, metric: 'cosine', model: null });
      const rows = clustered(40, 4, 4, 3);
      await s.upsertVectors('spec', 'width', rows);
      const q = rows[7].vector;
      /** The LIMITs of the ANN queries one search sends, and its keys. */
      const limits = async (query: { candidates: number; limit: number; ef?: number }) => {
        const r = recordStatements();
        try {
          const got = await s.search('spec', 'width', { vector: q, metric: 'cosine', ...query });
          const sent = r.statements.flatMap((cql, i) => (/ANN OF \? LIMIT \?$/.test(cql) ? [r.params[i].at(-1)] : []));
          return { sent, keys: got.map((m) => m.key) };
        } finally {
          r.stop();
        }
      };
      assert.deepEqual((await limits({ candidates: 20, limit: 3 })).sent, [3]);
      assert.deepEqual((await limits({ candidates: 20, limit: 3, ef: 10 })).sent, [10]);
      assert.deepEqual((await limits({ candidates: 20, limit: 3, ef: 500 })).sent, [20]);
      assert.deepEqual((await limits({ candidates: 20, limit: 3, ef: 2 })).sent, [3]);
      // initial_top_k covers the 40 rows: the narrow query came back full, so the answer must be exact.
      const whole = await limits({ candidates: 100, limit: 3 });
      assert.deepEqual(whole.sent, [3, 40]);
      assert.deepEqual(whole.keys, brute(rows, q, 'cosine', 3));
    });

    it('refuses vectors whose squared norm its vector index would overflow on (validation, not a server error), and takes the largest below', async () => {
      await s.createTable({ keyspace: 'spec', name: 'norms', dimension: 4, metric: 'cosine', model: null });
      const row = (key: string, big: number) => ({ key, vector: Float32Array.of(1, big, 3, 4), metadata: {}, text: null });
      // 1e18 (squared norm 1e36) failed the write inside Cassandra 5.0.9 before the codec refused it.
      await rejectsWithCode(s.upsertVectors('spec', 'norms', [row('a', 1e18)]), 'validation_failed');
      await s.upsertVectors('spec', 'norms', [row('b', 3e9), row('sub', 1e-40)]);
      assert.equal(await s.countVectors('spec', 'norms'), 2);
    });

    it('filters in the engine on tables above one ANN page: a 1-in-12 filter, an $in and an $or return full pages', async () => {
      const rows = clustered(1500, 48, 12, 7);
      const q = rows[3].vector;
      const got = await s.search('spec', 'ann', { vector: q, metric: 'cosine', candidates: 10, limit: 5, filter: { cluster: 3 } });
      assert.equal(got.length, 5);
      assert.ok(got.every((g) => g.metadata.cluster === 3));
      assert.equal(got[0].key, 'r3');
      assert.equal(got[0].text, 'row 3');
      // Ten rows match: all ten, though a plain ANN page of 50 would hold few of them.
      const few = await s.search('spec', 'ann', { vector: q, metric: 'cosine', candidates: 10, limit: 10, filter: { i: { $in: [5, 17, 29, 41, 1200, 1300, 1400, 1401, 1402, 1499] } } });
      assert.deepEqual(few.map((g) => g.key).sort(), ['r1200', 'r1300', 'r1400', 'r1401', 'r1402', 'r1499', 'r17', 'r29', 'r41', 'r5']);
      const either = await s.search('spec', 'ann', { vector: q, metric: 'cosine', candidates: 10, limit: 20, filter: { $or: [{ i: 7 }, { cluster: 5, i: { $in: [5, 17] } }] } });
      assert.deepEqual(either.map((g) => g.key).sort(), ['r17', 'r5', 'r7']);
      assert.equal(await s.countVectors('spec', 'ann', { cluster: 3 }), 125);
      assert.equal(await s.countVectors('spec', 'ann', { $or: [{ cluster: 3 }, { i: { $in: [0, 3] } }] }), 126);
    });

    it('refuses a filter the index cannot serve on a table above exactScanMaxRows, naming it', async () => {
      // exactScanMaxRows is 0 here: no table is small enough for the scan that serves such filters.
      const e = await s.search('spec', 'ann', { vector: clustered(1, 48, 1, 1)[0].vector, metric: 'cosine', candidates: 10, limit: 5, filter: { cluster: 3, i: { $gt: 100 } } }).then(
        () => null,
        (err: { code?: string; errors?: { path: string }[] }) => err,
      );
      assert.equal(e?.code, 'validation_failed');
      assert.deepEqual(e?.errors?.map((x) => x.path), ['/filter/i']);
    });

    it('scans exactly when the query metric differs from the index', async () => {
      const rows = clustered(1500, 48, 12, 7);
      const q = rows[11].vector;
      const got = await s.search('spec', 'ann', { vector: q, metric: 'euclidean', candidates: 10, limit: 10 });
      assert.deepEqual(got.map((g) => g.key), brute(rows, q, 'euclidean', 10));
    });

    it('rejects zero vectors under cosine and non-finite values before Cassandra sees them', async () => {
      await s.createTable({ keyspace: 'spec', name: 'zero', dimension: 3, metric: 'cosine', model: null });
      await rejectsWithCode(
        s.upsertVectors('spec', 'zero', [
          { key: 'ok', vector: Float32Array.of(1, 0, 0), metadata: {}, text: null },
          { key: 'z', vector: Float32Array.of(0, 0, 0), metadata: {}, text: null },
        ]),
        'validation_failed',
      );
      await rejectsWithCode(s.upsertVectors('spec', 'zero', [{ key: 'n', vector: Float32Array.of(1, NaN, 0), metadata: {}, text: null }]), 'validation_failed');
      // Near-zero: its float32 squared norm underflows to 0 and Cassandra's index would divide by it.
      await rejectsWithCode(s.upsertVectors('spec', 'zero', [{ key: 't', vector: Float32Array.of(1e-30, 0, 0), metadata: {}, text: null }]), 'validation_failed');
      await rejectsWithCode(s.upsertVectors('spec', 'zero', [{ key: 'h', vector: Float32Array.of(1e30, 0, 0), metadata: {}, text: null }]), 'validation_failed');
      assert.equal(await s.countVectors('spec', 'zero'), 0);
      // Small but usable vectors are fine.
      await s.upsertVectors('spec', 'zero', [
        { key: 'tiny', vector: Float32Array.of(1e-10, 0, 0), metadata: {}, text: null },
        { key: 'x', vector: Float32Array.of(1, 0, 0), metadata: {}, text: null },
      ]);
      // A zero query has no direction: every row scores 0 (exact scan, no server error).
      const got = await s.search('spec', 'zero', { vector: Float32Array.of(0, 0, 0), metric: 'cosine', candidates: 10, limit: 10 });
      assert.deepEqual(got.map((g) => [g.key, g.score]), [['tiny', 0], ['x', 0]]);
      // Zero vectors are fine under euclidean and dot product.
      await s.createTable({ keyspace: 'spec', name: 'zero_l2', dimension: 3, metric: 'euclidean', model: null });
      await s.upsertVectors('spec', 'zero_l2', [{ key: 'z', vector: Float32Array.of(0, 0, 0), metadata: {}, text: null }]);
      assert.equal((await s.search('spec', 'zero_l2', { vector: Float32Array.of(0, 0, 0), metric: 'euclidean', candidates: 1, limit: 1 }))[0].score, 0);
    });

    it('takes concurrent batch writes (concurrent_writes <= CPUs + 1 on the server)', async (t) => {
      const d = 64;
      await s.createTable({ keyspace: 'spec', name: 'conc', dimension: d, metric: 'dot_product', model: null });
      const r = rng(5);
      const batches = Array.from({ length: 6 }, (_, b) =>
        Array.from({ length: 60 }, (_, i) => ({ key: `b${b}_${i}`, vector: Float32Array.from({ length: d }, () => r() - 0.5), metadata: { b }, text: null })),
      );
      const t0 = performance.now();
      await Promise.all(batches.map((rows) => s.upsertVectors('spec', 'conc', rows)));
      t.diagnostic(`6 concurrent batches of 60 rows x ${d} dims: ${(360 / ((performance.now() - t0) / 1000)).toFixed(0)} rows/s`);
      assert.equal(await s.countVectors('spec', 'conc'), 360);
      assert.equal(await s.countVectors('spec', 'conc', { b: 2 }), 60);
    });

    it('keeps the last row of a key written twice in one call', async () => {
      await s.createTable({ keyspace: 'spec', name: 'dup', dimension: 2, metric: 'euclidean', model: null });
      await s.upsertVectors('spec', 'dup', [
        { key: 'k', vector: Float32Array.of(1, 1), metadata: { v: 1 }, text: 'first' },
        { key: 'k', vector: Float32Array.of(2, 2), metadata: { v: 2 }, text: 'second' },
      ]);
      const k = await s.getVector('spec', 'dup', 'k');
      assert.deepEqual([...k!.vector, k!.metadata.v, k!.text], [2, 2, 2, 'second']);
    });

    it('accepts 48-character table names', async () => {
      const name = 't'.repeat(48);
      await s.createTable({ keyspace: 'spec', name, dimension: 2, metric: 'cosine', model: null });
      await s.upsertVectors('spec', name, [{ key: 'a', vector: Float32Array.of(1, 2), metadata: {}, text: null }]);
      assert.equal((await s.search('spec', name, { vector: Float32Array.of(1, 2), metric: 'cosine', candidates: 1, limit: 1 }))[0].key, 'a');
    });

    it('rejects reserved and invalid keyspace names', async () => {
      await rejectsWithCode(s.createKeyspace({ name: 'system', owner: null }), 'already_exists');
      await rejectsWithCode(s.createKeyspace({ name: 'Bad-Name', owner: null }), 'validation_failed');
      await rejectsWithCode(s.createKeyspace({ name: 'ok_name', owner: null, replication: "{'class': 'SimpleStrategy'}; DROP KEYSPACE x" }), 'validation_failed');
      assert.equal(await s.getKeyspace('Bad-Name'), null);
    });

    it('applies writes of one key from two processes in the order they were acknowledged, whatever their clocks', async () => {
      const prefix = `t${randomBytes(5).toString('hex')}_`;
      const opts = { contactPoints: CONTACT_POINTS, localDc: LOCAL_DC, replication: REPLICATION, systemKeyspace: `${prefix}vss_system`, keyspacePrefix: prefix };
      const a = await openCassandraStorage(opts);
      // B as on another host whose clock is 5 ms behind: the driver's default timestamp generator,
      // which B would use if the store let each process stamp its own writes, reads a slow clock.
      const policies = cassandraDriver.policies as unknown as { defaultTimestampGenerator: () => unknown; timestampGeneration: { MonotonicTimestampGenerator: new () => { getDate: () => number } } };
      const usual = policies.defaultTimestampGenerator;
      policies.defaultTimestampGenerator = () => Object.assign(new policies.timestampGeneration.MonotonicTimestampGenerator(), { getDate: () => Date.now() - 5 });
      let b: Storage;
      try {
        b = await openCassandraStorage(opts);
      } finally {
        policies.defaultTimestampGenerator = usual;
      }
      try {
        await a.createKeyspace({ name: 'order', owner: null });
        await a.createTable({ keyspace: 'order', name: 't', dimension: 2, metric: 'euclidean', model: null });
        const row = (n: number) => [{ key: 'k', vector: Float32Array.of(n, 1), metadata: { n }, text: null }];
        let lostRewrite = 0;
        let keptDeleted = 0;
        for (let i = 0; i < 100; i++) {
          await a.upsertVectors('order', 't', row(i));
          await b.upsertVectors('order', 't', row(i + 0.5)); // acknowledged after A's: it must win
          if ((await a.getVector('order', 't', 'k'))?.metadata.n !== i + 0.5) lostRewrite++;
          await a.upsertVectors('order', 't', row(i));
          assert.equal(await b.deleteVectors('order', 't', ['k']), 1);
          if ((await a.getVector('order', 't', 'k')) !== null) keptDeleted++;
        }
        assert.deepEqual({ lostRewrite, keptDeleted }, { lostRewrite: 0, keptDeleted: 0 });
      } finally {
        await a.close();
        await b!.close();
        await dropPrefixed(prefix);
      }
    });

    it('deletes by filter as of its scan: a row rewritten between the scan and the delete keeps its new version', async () => {
      // A: another process writing; B: the process deleting by filter, with a seam after its scan.
      await withSession({}, async ({ storage: a, session, ctxOf }) => {
        // Runs `seam.between` once B's scan of (key, metadata) has read its last page, before any delete.
        const seam = seamAfterScan(session, 'SELECT "key", "metadata"');
        const ctx = ctxOf(10_000);
        await a.createKeyspace({ name: 'dbf', owner: null });
        const row = (key: string, metadata: VectorRow['metadata']): VectorRow => ({ key, vector: Float32Array.of(1, 2), metadata, text: null });
        // What A does to doomed row i while B is between its scan and its deletes.
        const kinds = ['rewritten to no longer match', 'rewritten, still matching', 'left alone', 'deleted by A'] as const;
        const kindOf = (i: number) => kinds[i % kinds.length];
        // 1 row: one DELETE; 40: one LOGGED batch; 600: concurrent single DELETEs (too many for a batch).
        const got: Record<string, unknown>[] = [];
        const want: Record<string, unknown>[] = [];
        for (const n of [1, 40, 600]) {
          const table = `t${n}`;
          await a.createTable({ keyspace: 'dbf', name: table, dimension: 2, metric: 'euclidean', model: null });
          const doomed = Array.from({ length: n }, (_, i) => `k${i}`);
          await a.upsertVectors('dbf', table, [...doomed.map((k, i) => row(k, { doomed: true, i })), ...[0, 1, 2].map((j) => row(`bystander${j}`, { doomed: false }))]);
          seam.between = async () => {
            // Coordinators stamp whole milliseconds (unique per node only): on a cluster, a write in the
            // scanned version's millisecond through another node could tie with it, and a tie deletes.
            await new Promise((r) => setTimeout(r, 2));
            const rewrites = doomed.flatMap((k, i) =>
              kindOf(i) === 'rewritten to no longer match' ? [row(k, { doomed: false, v: 2 })] : kindOf(i) === 'rewritten, still matching' ? [row(k, { doomed: true, v: 2 })] : [],
            );
            for (let j = 0; j < rewrites.length; j += 10) await a.upsertVectors('dbf', table, rewrites.slice(j, j + 10));
            await a.deleteVectors('dbf', table, doomed.filter((_, i) => kindOf(i) === 'deleted by A'));
          };
          const deleted = await deleteByFilter(ctx, 'dbf', table, { doomed: true });
          assert.equal(seam.between, null, 'the seam ran');
          const left = new Map((await a.scanVectors('dbf', table, { limit: 10_000 })).rows.map((r) => [r.key, r]));
          // Per kind of row: how many ended in each state.
          const g: Record<string, unknown> = { n, deleted, bystanders: [0, 1, 2].filter((j) => left.has(`bystander${j}`)).length };
          const w: Record<string, unknown> = { n, deleted: n, bystanders: 3 };
          doomed.forEach((k, i) => {
            const kind = kindOf(i);
            const r = left.get(k);
            const state = r === undefined ? 'gone' : r.metadata.v === 2 ? `A's version (doomed: ${String(r.metadata.doomed)})` : 'the scanned version';
            const expected = kind === 'rewritten to no longer match' ? "A's version (doomed: false)" : kind === 'rewritten, still matching' ? "A's version (doomed: true)" : 'gone';
            const gk = (g[kind] ??= {}) as Record<string, number>;
            gk[state] = (gk[state] ?? 0) + 1;
            const wk = (w[kind] ??= {}) as Record<string, number>;
            wk[expected] = (wk[expected] ?? 0) + 1;
          });
          got.push(g);
          want.push(w);
        }
        assert.deepEqual(got, want);
      });
    });

    it('loses no rewrite acknowledged by one process while another deletes by filter', async () => {
      const { storage: a, prefix, cleanup } = await openFresh();
      const b = await openCassandraStorage({ contactPoints: CONTACT_POINTS, localDc: LOCAL_DC, replication: REPLICATION, systemKeyspace: `${prefix}vss_system`, keyspacePrefix: prefix });
      try {
        await a.createKeyspace({ name: 'dbf', owner: null });
        await a.createTable({ keyspace: 'dbf', name: 'race', dimension: 2, metric: 'euclidean', model: null });
        const n = 1000;
        const row = (i: number, doomed: boolean): VectorRow => ({ key: `k${i}`, vector: Float32Array.of(i, 1), metadata: { doomed, i }, text: null });
        await a.upsertVectors('dbf', 'race', Array.from({ length: n }, (_, i) => row(i, true)));
        // While B deletes every matching row, A rewrites every row so that it no longer matches. Each
        // rewrite either lands before B's scan reads its row (B does not match it) or after (B deletes
        // as of the older version it scanned): either way every row must end up rewritten. (The former
        // scan-then-delete lost those landing between its scan and its deletes: 176-239 of 1,000 in three runs.)
        const [, deleted] = await Promise.all([
          (async () => {
            for (let i = 0; i < n; i += 10) await a.upsertVectors('dbf', 'race', Array.from({ length: 10 }, (_, j) => row(i + j, false)));
          })(),
          b.deleteByFilter('dbf', 'race', { doomed: true }),
        ]);
        const left = (await a.scanVectors('dbf', 'race', { limit: 10_000 })).rows;
        const lost = n - left.filter((r) => r.metadata.doomed === false).length;
        assert.deepEqual({ lost, stillMatching: left.filter((r) => r.metadata.doomed !== false).length }, { lost: 0, stillMatching: 0 }, `B's delete matched ${deleted} rows`);
      } finally {
        await b.close();
        await cleanup();
      }
    });

    it('shares all state between processes: two stores on one system keyspace', async () => {
      const prefix = `t${randomBytes(5).toString('hex')}_`;
      const opts = { contactPoints: CONTACT_POINTS, localDc: LOCAL_DC, replication: REPLICATION, systemKeyspace: `${prefix}vss_system`, keyspacePrefix: prefix };
      const a = await openCassandraStorage(opts);
      const b = await openCassandraStorage(opts);
      try {
        const results = await Promise.allSettled([a.createKeyspace({ name: 'race', owner: 'a' }), b.createKeyspace({ name: 'race', owner: 'b' })]);
        assert.equal(results.filter((x) => x.status === 'fulfilled').length, 1, 'exactly one creator wins');
        const [ta, tb] = await Promise.all([
          a.createTable({ keyspace: 'race', name: 'v', dimension: 4, metric: 'cosine', model: null }, { ifNotExists: true }),
          b.createTable({ keyspace: 'race', name: 'v', dimension: 8, metric: 'euclidean', model: null }, { ifNotExists: true }),
        ]);
        assert.deepEqual(ta, tb);
        await a.upsertVectors('race', 'v', [{ key: 'x', vector: new Float32Array(ta.dimension).fill(1), metadata: {}, text: null }]);
        assert.equal((await b.getVector('race', 'v', 'x'))?.key, 'x');
        const u = await a.createUser({ name: 'U', email: 'U@Example.com' });
        await a.createApiKey({ userId: u.id, name: 'k', hash: 'f'.repeat(64), permissions: 'Read', resources: ['race'] });
        assert.equal((await b.findApiKeyByHash('f'.repeat(64)))?.userId, u.id);
        assert.equal((await b.getUserByEmail('u@example.com'))?.id, u.id);
      } finally {
        await a.close();
        await b.close();
        await dropPrefixed(prefix);
      }
    });

    it('remembers keys, default TTLs and row counts for a second only: its own changes apply at once, another process\'s within the second', async () => {
      const prefix = `t${randomBytes(5).toString('hex')}_`;
      const opts = { contactPoints: CONTACT_POINTS, localDc: LOCAL_DC, replication: REPLICATION, systemKeyspace: `${prefix}vss_system`, keyspacePrefix: prefix, apiKeyCacheMs: 1000 };
      const a = await openCassandraStorage(opts);
      const b = await openCassandraStorage(opts);
      const seconds = () => new Promise((r) => setTimeout(r, 1100));
      try {
        await a.createKeyspace({ name: 'memo', owner: null });
        await a.createTable({ keyspace: 'memo', name: 't', dimension: 3, metric: 'cosine', model: null });
        const rows = (from: number, n: number) => Array.from({ length: n }, (_, i) => ({ key: `k${from + i}`, vector: Float32Array.of(1, from + i + 1, 1), metadata: {}, text: null }));
        await a.upsertVectors('memo', 't', rows(0, 30));
        const q = { vector: Float32Array.of(1, 2, 1), metric: 'cosine' as const, candidates: 1000, limit: 5 };

        // What a call sends once this process has read what it remembers.
        const sent = async (f: () => Promise<unknown>): Promise<string[]> => {
          const r = recordStatements();
          try {
            await f();
          } finally {
            r.stop();
          }
          return r.statements;
        };
        // initial_top_k below the table's rows: no second query for exactness.
        const narrow = { ...q, candidates: 20 };
        await a.search('memo', 't', narrow);
        const search = await sent(() => a.search('memo', 't', narrow));
        assert.equal(search.length, 1, `one ANN query per search, got: ${search.join(' | ')}`);
        assert.match(search[0], /ORDER BY "vector" ANN OF/);
        await a.getDefaultTtl('memo', 't');
        assert.deepEqual(await sent(() => a.getDefaultTtl('memo', 't')), [], 'the default TTL is not read per write');

        // Default TTL: this process's change at once, another's within the second.
        await a.setDefaultTtl('memo', 't', 3600);
        assert.equal(await a.getDefaultTtl('memo', 't'), 3600);
        assert.equal(await b.getDefaultTtl('memo', 't'), 3600);
        await b.setDefaultTtl('memo', 't', 60);
        await seconds();
        assert.equal(await a.getDefaultTtl('memo', 't'), 60);

        // API keys: a revocation here is refused at once; one through another process within the second.
        const u = await a.createUser({ name: 'U', email: 'memo@example.com' });
        const k1 = await a.createApiKey({ userId: u.id, name: 'k1', hash: '1'.repeat(64), permissions: 'Read', resources: ['memo'] });
        const k2 = await a.createApiKey({ userId: u.id, name: 'k2', hash: '2'.repeat(64), permissions: 'Read', resources: ['memo'] });
        assert.equal((await a.findApiKeyByHash(k1.hash))?.revokedAt, null);
        assert.equal((await a.findApiKeyByHash(k2.hash))?.revokedAt, null);
        assert.deepEqual(await sent(() => a.findApiKeyByHash(k1.hash)), [], 'a key found is remembered');
        await a.revokeApiKey(k1.id);
        assert.notEqual((await a.findApiKeyByHash(k1.hash))?.revokedAt, null, 'revoked here: refused at once');
        await b.revokeApiKey(k2.id);
        await seconds();
        assert.notEqual((await a.findApiKeyByHash(k2.hash))?.revokedAt, null, 'revoked by another process: refused within the second');
        assert.equal(await a.findApiKeyByHash('3'.repeat(64)), null);
        await a.createApiKey({ userId: u.id, name: 'k3', hash: '3'.repeat(64), permissions: 'Read', resources: ['memo'] });
        assert.equal((await a.findApiKeyByHash('3'.repeat(64)))?.name, 'k3', 'a miss is not remembered: a new key works at once');

        // Row counts: a write here drops the remembered count, so the next search reads the counter.
        const readsCounter = (st: string[]) => st.filter((x) => x.includes('row_counts')).length;
        assert.equal(readsCounter(await sent(() => a.search('memo', 't', q))), 1, 'read again once the second has passed');
        assert.equal(readsCounter(await sent(() => a.search('memo', 't', q))), 0, 'then remembered');
        await a.upsertVectors('memo', 't', rows(30, 20));
        assert.equal(readsCounter(await sent(() => a.search('memo', 't', q))), 1, 'read again after this process wrote');
        assert.equal(readsCounter(await sent(() => a.search('memo', 't', q))), 0);
        // Another process's write: read again once the second has passed.
        await b.upsertVectors('memo', 't', rows(50, 20));
        await seconds();
        assert.equal(readsCounter(await sent(() => a.search('memo', 't', q))), 1, 'read again after a second');
        assert.equal((await a.search('memo', 't', { ...q, limit: 100 })).length, 70);
      } finally {
        await a.close();
        await b.close();
        await dropPrefixed(prefix);
      }
    });

    describe('files', () => {
      const D = 8;
      const chunkRows = (name: string, n: number, v: number, dim = D): VectorRow[] =>
        Array.from({ length: n }, (_, i) => {
          const vector = new Float32Array(dim);
          vector[(i + v) % dim] = 1;
          vector[(i + 1) % dim] += 0.1;
          return { key: `${name}#${i}`, vector, metadata: { source_file: name, chunk_index: i, v }, text: `v${v} chunk ${i}` };
        });
      const fileOf = (name: string, content: Buffer, chunks: number, table = 'docs', keyspace = 'fks'): FileRecord => ({
        keyspace,
        table,
        name,
        size: content.length,
        sha256: 'x'.repeat(64),
        type: 'txt',
        chunks,
        createdAt: new Date().toISOString(),
      });
      const recordOf = (name: string, details: string, table = 'docs', keyspace = 'fks'): MetadataRecord => ({
        keyspace,
        table,
        source_file: name,
        raw_value: `/v1/files/${keyspace}/${table}/${name}`,
        source_type: 'txt',
        processing_details: details,
      });
      const keysOf = async () => (await s.scanVectors('fks', 'docs', { limit: 10_000 })).rows.map((r) => r.key).sort();

      before(async () => {
        await s.createKeyspace({ name: 'fks', owner: null });
        await s.createTable({ keyspace: 'fks', name: 'docs', dimension: D, metric: 'cosine', model: null });
      });

      it('stores, replaces (old chunks and content go), refuses bad replacements, deletes', async () => {
        const big = Buffer.alloc(600_000, 7); // three 256 KiB pieces
        await s.replaceFile(fileOf('a.txt', big, 5), big, chunkRows('a.txt', 5, 1), recordOf('a.txt', 'v1'));
        assert.equal((await s.getFile('fks', 'docs', 'a.txt'))?.chunks, 5);
        assert.ok((await s.readFileContent('fks', 'docs', 'a.txt'))?.equals(big));
        assert.deepEqual((await s.listFiles(['fks', 'other'])).map((f) => f.name), ['a.txt']);
        assert.deepEqual(await keysOf(), ['a.txt#0', 'a.txt#1', 'a.txt#2', 'a.txt#3', 'a.txt#4']);

        const small = Buffer.from('second, shorter');
        await s.replaceFile(fileOf('a.txt', small, 2), small, chunkRows('a.txt', 2, 2), recordOf('a.txt', 'v2'));
        assert.deepEqual(await keysOf(), ['a.txt#0', 'a.txt#1']);
        assert.equal((await s.getVector('fks', 'docs', 'a.txt#1'))?.metadata.v, 2);
        assert.deepEqual(await s.readFileContent('fks', 'docs', 'a.txt'), small);
        assert.equal((await s.getMetadata('fks', 'docs', ['a.txt'])).get('a.txt')?.processing_details, 'v2');

        const bad = Buffer.from('bad');
        await rejectsWithCode(s.replaceFile(fileOf('a.txt', bad, 1), bad, chunkRows('a.txt', 1, 3, D + 1), recordOf('a.txt', 'v3')), 'dimension_mismatch');
        await rejectsWithCode(s.replaceFile(fileOf('a.txt', bad, 1, 'nope'), bad, chunkRows('a.txt', 1, 3), recordOf('a.txt', 'v3', 'nope')), 'table_not_found');
        await rejectsWithCode(s.replaceFile(fileOf('a.txt', bad, 2), bad, chunkRows('a.txt', 1, 3), recordOf('a.txt', 'v3')), 'validation_failed');
        assert.deepEqual(await s.readFileContent('fks', 'docs', 'a.txt'), small);
        assert.deepEqual(await keysOf(), ['a.txt#0', 'a.txt#1']);

        assert.equal(await s.deleteFile('fks', 'docs', 'a.txt'), true);
        assert.deepEqual(await keysOf(), []);
        assert.equal(await s.getFile('fks', 'docs', 'a.txt'), null);
        assert.equal(await s.readFileContent('fks', 'docs', 'a.txt'), null);
        assert.equal((await s.getMetadata('fks', 'docs', ['a.txt'])).size, 0);
        assert.equal(await s.deleteFile('fks', 'docs', 'a.txt'), false);
      });

      it('keeps exactly one upload whole when two processes race replacements, or a replacement and a delete, of one file', async (t) => {
        // Two stores on one system keyspace: two service processes. Uploads of different chunk
        // counts (so that one's surplus-chunk delete can hit the other's rows) race, then a
        // replacement races a delete; after each race the file row, its content, its chunk rows
        // and its record must describe one upload (or nothing), with no content left unnamed.
        const prefix = `t${randomBytes(5).toString('hex')}_`;
        const opts = { contactPoints: CONTACT_POINTS, localDc: LOCAL_DC, replication: REPLICATION, systemKeyspace: `${prefix}vss_system`, keyspacePrefix: prefix };
        const a = await openCassandraStorage(opts);
        const b = await openCassandraStorage(opts);
        try {
          await a.createKeyspace({ name: 'race', owner: null });
          await a.createTable({ keyspace: 'race', name: 'docs', dimension: D, metric: 'cosine', model: null });
          const name = 'r.txt';
          const upload = (st: Storage, v: number, n: number): Promise<void> => {
            const c = Buffer.from(`upload ${v}`);
            return st.replaceFile(fileOf(name, c, n, 'docs', 'race'), c, chunkRows(name, n, v), recordOf(name, `v${v}`, 'docs', 'race'));
          };
          const jitter = (): Promise<void> => new Promise((r) => setTimeout(r, Math.random() * 4));
          const problems: string[] = [];
          /** What the stores hold of the file: the upload it names (null: none); records any disagreement. */
          const check = async (label: string): Promise<number | null> => {
            const f = await a.getFile('race', 'docs', name);
            const content = await b.readFileContent('race', 'docs', name);
            const rows = (await a.scanVectors('race', 'docs', { limit: 10_000 })).rows;
            const got = rows.map((r) => `${r.key} v${r.metadata.v}`).sort((x, y) => x.localeCompare(y, 'en', { numeric: true }));
            const rec = (await b.getMetadata('race', 'docs', [name])).get(name);
            const contentIds = await storedContentIds(CONTACT_POINTS, LOCAL_DC, opts.systemKeyspace);
            if (f === null) {
              if (content !== null || rows.length > 0 || rec !== undefined || contentIds.length > 0) {
                problems.push(`${label}: no file, yet ${rows.length} chunk rows [${got.join(', ')}], ${contentIds.length} content, record ${rec?.processing_details}`);
              }
              return null;
            }
            const v = Number(/^upload (\d+)$/.exec(content?.toString() ?? '')?.[1]);
            const want = Array.from({ length: f.chunks }, (_, i) => `${name}#${i} v${v}`);
            if (JSON.stringify(got) !== JSON.stringify(want) || rec?.processing_details !== `v${v}` || contentIds.length !== 1 || f.size !== content?.length) {
              problems.push(`${label}: file names upload ${v} with ${f.chunks} chunks; chunk rows [${got.join(', ')}], record ${rec?.processing_details}, ${contentIds.length} content`);
            }
            return v;
          };

          await upload(a, 0, 3);
          let v = 1;
          for (let i = 0; i < 15; i++) {
            const [va, vb] = [v++, v++];
            const [na, nb] = i % 2 === 0 ? [2 + (i % 4), 7 - (i % 4)] : [7 - (i % 4), 2 + (i % 4)];
            await Promise.all([upload(a, va, na), jitter().then(() => upload(b, vb, nb))]);
            const won = await check(`replacement race ${i}`);
            if (won !== null && won !== va && won !== vb) problems.push(`replacement race ${i}: upload ${won} won, not ${va} or ${vb}`);
          }
          const outcomes = { deleted: 0, replaced: 0 };
          for (let i = 0; i < 15; i++) {
            if ((await a.getFile('race', 'docs', name)) === null) await upload(a, v++, 4);
            const vu = v++;
            const [, deleted] = await Promise.all([(i % 2 === 0 ? jitter() : Promise.resolve()).then(() => upload(a, vu, 2 + (i % 5))), (i % 2 === 1 ? jitter() : Promise.resolve()).then(() => b.deleteFile('race', 'docs', name))]);
            assert.equal(deleted, true, 'the file existed when the race began');
            const won = await check(`replacement/delete race ${i}`);
            outcomes[won === null ? 'deleted' : 'replaced']++;
            if (won !== null && won !== vu) problems.push(`replacement/delete race ${i}: upload ${won} is there, not ${vu}`);
          }
          if ((await a.getFile('race', 'docs', name)) === null) await upload(a, v++, 4);
          assert.equal(await b.deleteFile('race', 'docs', name), true);
          assert.equal(await check('after the last delete'), null);
          t.diagnostic(`replacement/delete races: ${outcomes.deleted} ended deleted, ${outcomes.replaced} replaced`);
          assert.deepEqual(problems, []);
        } finally {
          await a.close();
          await b.close();
          await dropPrefixed(prefix);
        }
      });

      it('takes a file name over from an upload whose process died once its lease runs out, and removes what it wrote', async () => {
        // What a dead upload leaves (files.ts): the row taken (op = its content id, a lease,
        // key_bound raised to its chunk count), its content, and some of its chunk rows written.
        const prefix = `t${randomBytes(5).toString('hex')}_`;
        const systemKeyspace = `${prefix}vss_system`;
        const a = await openCassandraStorage({ contactPoints: CONTACT_POINTS, localDc: LOCAL_DC, replication: REPLICATION, systemKeyspace, keyspacePrefix: prefix });
        const c = new cassandraDriver.Client({ contactPoints: CONTACT_POINTS, localDataCenter: LOCAL_DC });
        try {
          await c.connect();
          await a.createKeyspace({ name: 'lease', owner: null });
          await a.createTable({ keyspace: 'lease', name: 'docs', dimension: D, metric: 'cosine', model: null });
          const upload = (name: string, v: number, n: number): Promise<void> => {
            const content = Buffer.from(`upload ${v}`);
            return a.replaceFile(fileOf(name, content, n, 'docs', 'lease'), content, chunkRows(name, n, v), recordOf(name, `v${v}`, 'docs', 'lease'));
          };
          const die = async (name: string, leaseMs: number, chunks: number): Promise<void> => {
            const op = cassandraDriver.types.Uuid.random();
            await c.execute(`INSERT INTO "${systemKeyspace}".file_content (content_id, seq, data) VALUES (?, 0, ?)`, [op, Buffer.from('dead')], { prepare: true });
            const rs = await c.execute(`UPDATE "${systemKeyspace}".files SET op = ?, op_until = ?, key_bound = ? WHERE keyspace_name = 'lease' AND table_name = 'docs' AND name = ? IF EXISTS`, [op, new Date(Date.now() + leaseMs), chunks, name], { prepare: true });
            assert.equal(rs.wasApplied(), true);
            await a.upsertVectors('lease', 'docs', chunkRows(name, chunks, 99));
          };
          const keys = async () => (await a.scanVectors('lease', 'docs', { limit: 1000 })).rows.map((r) => `${r.key} v${r.metadata.v}`).sort();

          await upload('x.txt', 1, 2);
          await die('x.txt', 1500, 5);
          // The dead upload never committed: the file is still upload 1 for readers.
          assert.equal((await a.getFile('lease', 'docs', 'x.txt'))?.chunks, 2);
          const started = Date.now();
          await upload('x.txt', 2, 3); // waits for the lease, then takes over
          assert.ok(Date.now() - started >= 1000, `the upload waited for the lease (${Date.now() - started} ms)`);
          assert.deepEqual(await keys(), ['x.txt#0 v2', 'x.txt#1 v2', 'x.txt#2 v2']);
          assert.deepEqual((await a.readFileContent('lease', 'docs', 'x.txt'))?.toString(), 'upload 2');
          assert.equal((await storedContentIds(CONTACT_POINTS, LOCAL_DC, systemKeyspace)).length, 1);

          // A lease already run out is taken over at once, by a delete too.
          await die('x.txt', -1000, 6);
          assert.equal(await a.deleteFile('lease', 'docs', 'x.txt'), true);
          assert.deepEqual(await keys(), []);
          assert.equal(await a.getFile('lease', 'docs', 'x.txt'), null);
          assert.deepEqual(await storedContentIds(CONTACT_POINTS, LOCAL_DC, systemKeyspace), []);
        } finally {
          await c.shutdown();
          await a.close();
          await dropPrefixed(prefix);
        }
      });

      it('counts file bytes in usage', async () => {
        const owner = await s.createUser({ name: 'o', email: 'files-owner@example.com' });
        await s.createKeyspace({ name: 'owned', owner: owner.id });
        await s.createTable({ keyspace: 'owned', name: 'docs', dimension: D, metric: 'cosine', model: null });
        const c = Buffer.from('12345');
        await s.replaceFile(fileOf('u.txt', c, 1, 'docs', 'owned'), c, chunkRows('u.txt', 1, 1), recordOf('u.txt', '', 'docs', 'owned'));
        assert.deepEqual(await s.usageOf(owner.id), { vectors: 1, fileBytes: 5 });
      });
    });

    it('migrates a table made before filter terms and counters at start: filters use the index once filled, counts scan', async () => {
      const prefix = `t${randomBytes(5).toString('hex')}_`;
      const opts = { contactPoints: CONTACT_POINTS, localDc: LOCAL_DC, replication: REPLICATION, systemKeyspace: `${prefix}vss_system`, keyspacePrefix: prefix, exactScanMaxRows: 0 };
      const old = await openCassandraStorage(opts);
      const session = new Session({ contactPoints: CONTACT_POINTS, localDc: LOCAL_DC, writeConsistency: 'QUORUM' });
      await session.connect();
      let next: Awaited<ReturnType<typeof openCassandraStorage>> | undefined;
      try {
        await old.createKeyspace({ name: 'mig', owner: null });
        await old.createTable({ keyspace: 'mig', name: 't', dimension: 3, metric: 'cosine', model: null });
        // The table as an earlier version left it: no terms column or index, catalog flags unset.
        await session.execute('ddl', `DROP INDEX "${prefix}mig"."t_terms_idx"`);
        await session.execute('ddl', `ALTER TABLE "${prefix}mig"."t" DROP "terms"`);
        await session.execute('write', `UPDATE "${prefix}vss_system"."tables" SET filter_terms = null, counted = null WHERE keyspace_name = 'mig' AND table_name = 't'`);
        await session.execute('write', `INSERT INTO "${prefix}mig"."t" ("key", "vector", "metadata", "text") VALUES (?, ?, ?, ?)`, ['a', new cassandraDriver.types.Vector(Float32Array.of(1, 0, 0), 'float'), '{"g":"x"}', null]);
        await session.execute('write', `INSERT INTO "${prefix}mig"."t" ("key", "vector", "metadata", "text") VALUES (?, ?, ?, ?)`, ['b', new cassandraDriver.types.Vector(Float32Array.of(0, 1, 0), 'float'), '{"g":"y"}', null]);
        await old.close();
        next = await openCassandraStorage(opts);
        await next.termsBackfill;
        const q = { vector: Float32Array.of(1, 1, 0), metric: 'cosine' as const, candidates: 10, limit: 5 };
        assert.deepEqual((await next.search('mig', 't', { ...q, filter: { g: 'y' } })).map((m) => m.key), ['b']);
        await next.upsertVectors('mig', 't', [{ key: 'c', vector: Float32Array.of(0, 0, 1), metadata: { g: 'y' }, text: null }]);
        assert.deepEqual((await next.search('mig', 't', { ...q, filter: { g: 'y' } })).map((m) => m.key).sort(), ['b', 'c']);
        assert.equal(await next.countVectors('mig', 't'), 3);
        assert.equal(await next.countVectors('mig', 't', { g: 'y' }), 2);
      } finally {
        await old.close();
        await next?.close();
        await session.shutdown();
        await dropPrefixed(prefix);
      }
    });

    it('plans by counters, not scans: ANN covering small tables, an unservable filter scanned while the table is small, then refused', async () => {
      await withSession({}, async ({ storage, session, ctxOf }) => {
        const ctx = ctxOf(5);
        await storage.createKeyspace({ name: 'plan', owner: null });
        await storage.createTable({ keyspace: 'plan', name: 't', dimension: 3, metric: 'euclidean', model: null });
        const q = { vector: Float32Array.of(1, 1, 1), metric: 'euclidean' as const, candidates: 100, limit: 3 };
        const ranged = { ...q, filter: { i: { $lt: 3 } } };
        await storage.upsertVectors('plan', 't', Array.from({ length: 4 }, (_, i) => ({ key: `k${i}`, vector: Float32Array.of(i, 1, 1), metadata: { i }, text: null })));
        const small = await searchWithPlan(ctx, 'plan', 't', q);
        assert.deepEqual([small.plan, small.matches.map((m) => m.key)], ['ann', ['k1', 'k0', 'k2']]);
        assert.deepEqual(small.matches.map((m) => m.score), [0, 1, 1]);
        const scanned = await searchWithPlan(ctx, 'plan', 't', { ...ranged, limit: 5 });
        assert.deepEqual([scanned.plan, scanned.matches.map((m) => m.key)], ['scan', ['k1', 'k0', 'k2']]);
        // Another process writes past the threshold: this one's next query sees it at once (the counter).
        await storage.upsertVectors('plan', 't', Array.from({ length: 4 }, (_, i) => ({ key: `m${i}`, vector: Float32Array.of(i, 2, 1), metadata: { i }, text: null })));
        assert.equal(await storage.countVectors('plan', 't'), 8);
        await rejectsWithCode(searchWithPlan(ctx, 'plan', 't', ranged), 'validation_failed');
        assert.equal((await searchWithPlan(ctx, 'plan', 't', { ...q, filter: { i: 1 } })).plan, 'ann');
        await deleteVectors(ctx, 'plan', 't', ['m0', 'm1', 'm2', 'm3', 'never']);
        assert.equal(await storage.countVectors('plan', 't'), 4);
        assert.equal((await searchWithPlan(ctx, 'plan', 't', ranged)).plan, 'scan');
        assert.equal(fromEngine('euclidean', 1 / (1 + 4)), 2);
        assert.equal(fromEngine('cosine', 0.75), 0.5);
      });
    });

    it('searches a table whose counter failed (uncounted) as a counted one: the narrow query, a key scan stopping past initial_top_k, exact when that covers the table', async () => {
      await withSession({ exactScanMaxRows: 0 }, async ({ storage, session, prefix, ctxOf }) => {
        await storage.createKeyspace({ name: 'unc', owner: null });
        await storage.createTable({ keyspace: 'unc', name: 't', dimension: 4, metric: 'cosine', model: null });
        const rows = clustered(40, 4, 4, 5);
        await storage.upsertVectors('unc', 't', rows);
        // As a timed-out counter update leaves it (counts.ts stopCounting), seen by a process that
        // reads the catalog afresh (ctx: the one that made the table remembers it counted).
        const ctx = ctxOf(0);
        await session.execute('write', `UPDATE "${prefix}vss_system"."tables" SET counted = false WHERE keyspace_name = 'unc' AND table_name = 't'`);
        const q = rows[3].vector;
        /** The ANN LIMITs and key-scan LIMITs one search sends, and its keys. */
        const sent = async (candidates: number) => {
          const r = recordStatements();
          try {
            const got = await searchWithPlan(ctx, 'unc', 't', { vector: q, metric: 'cosine', candidates, limit: 3 });
            const anns = r.statements.flatMap((cql, i) => (/ANN OF \? LIMIT \?$/.test(cql) ? [r.params[i].at(-1)] : []));
            const scans = r.statements.flatMap((cql) => /^SELECT "key" FROM \S+ LIMIT (\d+)$/.exec(cql)?.slice(1).map(Number) ?? []);
            return { anns, scans, keys: got.matches.map((m) => m.key), plan: got.plan };
          } finally {
            r.stop();
          }
        };
        // initial_top_k 20 < 40 rows: the engine's own LIMIT 3, the keys counted only to 21.
        const narrow = await sent(20);
        const counted = performance.now();
        assert.deepEqual([narrow.plan, narrow.anns, narrow.scans], ['ann', [3], [21]]);
        // Within the second (memos.ts TABLE_FACTS_MS) the count is remembered: no scan.
        const again = await sent(20);
        if (performance.now() - counted < 900) assert.deepEqual(again.scans, []);
        // initial_top_k 100 covers the table: counted again (to 101, the 21 did not go far enough), asked whole, exact.
        const whole = await sent(100);
        assert.deepEqual([whole.anns, whole.scans, whole.keys], [[3, 40], [101], brute(rows, q, 'cosine', 3)]);
        // This process's write drops the remembered count at once.
        const more = clustered(45, 4, 4, 6).slice(40);
        await upsertVectors(ctx, 'unc', 't', more);
        const after = await sent(100);
        assert.deepEqual([after.anns, after.scans, after.keys], [[3, 45], [101], brute([...rows, ...more], q, 'cosine', 3)]);
        assert.equal(await countVectors(ctx, 'unc', 't'), 45, 'counted by a scan');
      });
    });

    it('repairs the counter of a table marked uncounted when no write lands during the repair; a write or a failure meanwhile leaves it uncounted', async () => {
      await withSession({}, async ({ storage, session, prefix, ctxOf }) => {
        const ctx = ctxOf(0);
        const sys = `"${prefix}vss_system"`;
        await storage.createKeyspace({ name: 'rep', owner: null });
        await storage.createTable({ keyspace: 'rep', name: 't', dimension: 4, metric: 'cosine', model: null });
        const rows = clustered(40, 4, 4, 7);
        await storage.upsertVectors('rep', 't', rows.slice(0, 30));
        // As a timed-out counter update that did land leaves it: 5 too many, and the table uncounted.
        await session.execute('counter', `UPDATE ${sys}.row_counts SET "rows" = "rows" + 5, changes = changes + 1 WHERE keyspace_name = 'rep' AND table_name = 't'`);
        const t = { keyspace: 'rep', name: 't' } as StoredTable;
        await stopCounting(ctx, t);
        const flags = async () => {
          const r = (await session.execute('read', `SELECT counted, count_correction FROM ${sys}.tables WHERE keyspace_name = 'rep' AND table_name = 't'`)).first();
          return [r.counted, r.count_correction === null ? null : Number(String(r.count_correction))];
        };
        const seam = seamAfterScan(session, 'SELECT "key" FROM');
        // A write between the scan and the second read of the counter: the repair gives up.
        seam.between = () => upsertVectors(ctx, 'rep', 't', rows.slice(30, 31));
        assert.equal(await repairRowCount(ctx, 'rep', 't', 50), 'busy');
        assert.deepEqual(await flags(), [false, null]);
        // A failure marked meanwhile (a later timestamp) wins over the repair's flag.
        seam.between = () => stopCounting(ctx, t);
        assert.equal(await repairRowCount(ctx, 'rep', 't', 50), 'repaired');
        assert.equal((await flags())[0], false);
        // Quiet: the counter is 36 for 31 rows; the correction makes it right, and later writes add to it.
        assert.equal(await repairRowCount(ctx, 'rep', 't', 50), 'repaired');
        assert.deepEqual(await flags(), [true, -5]);
        await upsertVectors(ctx, 'rep', 't', rows.slice(31, 40));
        await deleteVectors(ctx, 'rep', 't', ['r0', 'r1']);
        const fresh: Ctx = { ...ctx };
        const r = recordStatements();
        try {
          assert.equal(await countVectors(fresh, 'rep', 't'), 38);
        } finally {
          r.stop();
        }
        assert.ok(!r.statements.some((cql) => cql.startsWith('SELECT "key" FROM')), 'counted by the counter, no scan');
      });
    });

    it('counts tables with expiring rows by their counters, not a scan, and drops a row from the count as it expires', async () => {
      await withSession({}, async ({ storage, session, prefix }) => {
        await storage.createKeyspace({ name: 'exp', owner: null });
        await storage.createTable({ keyspace: 'exp', name: 't', dimension: 3, metric: 'cosine', model: null });
        const now = Date.now();
        const rowOf = (key: string, expiresAt: number | null): VectorRow => ({ key, vector: Float32Array.of(1, key.length, 0), metadata: {}, text: null, expiresAt });
        await storage.upsertVectors('exp', 't', [rowOf('soon', now + 3_000), rowOf('hour', now + 3_600_000), rowOf('year', now + 365 * 86_400_000), rowOf('never', null)]);
        // A row written behind the service's back is in the table but in no counter: a scan would count it.
        await session.execute('write', `INSERT INTO "${prefix}exp"."t" ("key", "vector", "metadata") VALUES (?, ?, ?)`, ['stray', new cassandraDriver.types.Vector(Float32Array.of(0, 1, 0), 'float'), '{}']);
        assert.equal(await storage.countVectors('exp', 't'), 4);
        const flags = await session.execute('read', `SELECT counted, expiry_counts FROM "${prefix}vss_system"."tables" WHERE keyspace_name = 'exp' AND table_name = 't'`);
        assert.deepEqual([flags.first().counted, flags.first().expiry_counts], [true, true], 'the table stays counted');
        await new Promise((r) => setTimeout(r, 4_500));
        assert.equal(await storage.countVectors('exp', 't'), 3);
        assert.equal((await storage.listTables('exp'))[0].rowCount, 3);
      });
    });

    it('connects through an Astra DB secure connect bundle instead of contact points; a missing one is named', async () => {
      await assert.rejects(
        openCassandraStorage({
          contactPoints: [],
          localDc: LOCAL_DC,
          replication: REPLICATION,
          secureConnectBundle: '/nonexistent/secure-connect-vss.zip',
          credentials: { username: 'token', password: 'AstraCS:not-a-secret' },
        }),
        (e: Error) => /secure-connect-vss\.zip/.test(e.message) && !e.message.includes('AstraCS'),
      );
    });

    it('passes credentials (ignored by this AllowAllAuthenticator node)', async () => {
      const { storage, cleanup } = await openFresh({ credentials: { username: 'cassandra', password: 'cassandra' } });
      try {
        assert.equal(await storage.ping(), true);
      } finally {
        await cleanup();
      }
    });

    it('reports an unreachable cluster as storage_unavailable', async () => {
      await rejectsWithCode(openCassandraStorage({ contactPoints: ['127.0.0.1:9'], localDc: LOCAL_DC, replication: REPLICATION }), 'storage_unavailable');
    });
  });
}
