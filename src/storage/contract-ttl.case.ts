/**
 * The TTL half of the storage contract (VectorRow.expiresAt, MetadataRecord.expires_at, the
 * tables' default TTL), run by storageContract against every backend. Time moves by a clock the
 * test controls where the backend expires rows by an injected clock (embedded); where the engine
 * expires them by its own (Cassandra, to the second), the test clock is the real one and moving
 * it means waiting.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { MetadataRecord, Storage, StoredMatch, VectorRow } from './api.ts';
import { rejectsWithCode } from './contract.case.ts';

export interface TestClock {
  now(): number;
  /** Moves time on by `ms`: a manual clock jumps, the real one is waited for. */
  advance(ms: number): Promise<void>;
}

/** The real clock, for backends whose engine expires rows by its own. */
export const realClock: TestClock = {
  now: () => Date.now(),
  advance: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

/** A clock that moves only when told (for backends that take an injected clock). */
export class ManualClock implements TestClock {
  #now: number;
  constructor(start = Date.now()) {
    this.#now = start;
  }
  now = (): number => this.#now;
  advance = async (ms: number): Promise<void> => {
    this.#now += ms;
  };
}

/** Long enough for a backend with whole-second expiry to do a write and its checks before it. */
const TTL_MS = 4_000;
/** Past any expiry written TTL_MS ahead, whatever the engine's rounding to the second. */
const PAST_TTL_MS = TTL_MS + 1_500;

const D = 3;
const keys = (ms: StoredMatch[]): string[] => ms.map((m) => m.key).sort();

export function ttlContract(get: () => Storage, clock: TestClock): void {
  describe('ttl', () => {
    let s: Storage;
    const KS = 'ttl';
    before(async () => {
      s = get();
      await s.createKeyspace({ name: KS, owner: null });
    });

    const row = (key: string, v: number[], text: string | null, expiresAt: number | null, metadata: Record<string, string> = {}): VectorRow => ({
      key,
      vector: Float32Array.from(v),
      metadata,
      text,
      expiresAt,
    });

    it('an expired row is gone from get, scan, count, search and lexical search, removed or not', async () => {
      await s.createTable({ keyspace: KS, name: 'reads', dimension: D, metric: 'cosine', model: null });
      const at = clock.now() + TTL_MS;
      await s.upsertVectors(KS, 'reads', [
        row('keep', [1, 0, 0], 'plain words here', null, { kind: 'x' }),
        row('gone', [1, 0.05, 0], 'walrus words here', at, { kind: 'x' }),
        row('gone2', [1, 0.1, 0], 'walrus again', at, { kind: 'y' }),
      ]);
      const query = { vector: Float32Array.of(1, 0.06, 0), metric: 'cosine' as const, candidates: 10, limit: 10 };
      // Before expiry every read sees them, and get tells when they expire.
      const g = await s.getVector(KS, 'reads', 'gone');
      assert.ok(g, 'the row is there before it expires');
      assert.ok(Math.abs(g.expiresAt! - at) <= 1_000, `expiresAt ${g.expiresAt} is the one written (${at}), to the second`);
      assert.equal((await s.getVector(KS, 'reads', 'keep'))!.expiresAt ?? null, null);
      assert.equal(await s.countVectors(KS, 'reads'), 3);
      assert.deepEqual(keys(await s.search(KS, 'reads', query)), ['gone', 'gone2', 'keep']);
      assert.deepEqual(keys(await s.lexicalSearch(KS, 'reads', { text: 'walrus', limit: 10 })), ['gone', 'gone2']);
      const scanned = (await s.scanVectors(KS, 'reads', { limit: 10 })).rows;
      assert.ok(Math.abs(scanned.find((r) => r.key === 'gone')!.expiresAt! - at) <= 1_000, 'scan tells the expiry too');

      await clock.advance(PAST_TTL_MS);
      assert.equal(await s.getVector(KS, 'reads', 'gone'), null);
      assert.equal(await s.countVectors(KS, 'reads'), 1);
      assert.equal(await s.countVectors(KS, 'reads', { kind: 'x' }), 1);
      assert.equal(await s.countVectors(KS, 'reads', { kind: 'y' }), 0);
      assert.deepEqual(keys(await s.search(KS, 'reads', query)), ['keep']);
      assert.deepEqual(keys(await s.search(KS, 'reads', { ...query, filter: { kind: 'x' } })), ['keep']);
      assert.deepEqual(await s.lexicalSearch(KS, 'reads', { text: 'walrus', limit: 10 }), []);
      assert.deepEqual(keys(await s.lexicalSearch(KS, 'reads', { text: 'words', limit: 10 })), ['keep']);
      assert.deepEqual(keys(await s.lexicalSearch(KS, 'reads', { text: 'words', limit: 10, filter: { kind: 'x' } })), ['keep']);
      assert.deepEqual((await s.scanVectors(KS, 'reads', { limit: 10 })).rows.map((r) => r.key), ['keep']);
      assert.equal((await s.listTables(KS)).find((t) => t.name === 'reads')!.rowCount, 1);
      // An expired row no longer exists for a delete either.
      assert.equal(await s.deleteVectors(KS, 'reads', ['gone', 'keep']), 1);
    });

    it('a search page stays full when expired rows are the nearest', async () => {
      await s.createTable({ keyspace: KS, name: 'page', dimension: D, metric: 'euclidean', model: null });
      const at = clock.now() + TTL_MS;
      const rows: VectorRow[] = [];
      for (let i = 0; i < 10; i++) rows.push(row(`near${i}`, [i * 0.01, 0, 0], null, at));
      for (let i = 0; i < 10; i++) rows.push(row(`far${i}`, [5 + i, 0, 0], null, null));
      await s.upsertVectors(KS, 'page', rows);
      await clock.advance(PAST_TTL_MS);
      const found = await s.search(KS, 'page', { vector: Float32Array.of(0, 0, 0), metric: 'euclidean', candidates: 5, limit: 5 });
      assert.deepEqual(
        found.map((m) => m.key),
        ['far0', 'far1', 'far2', 'far3', 'far4'],
      );
    });

    it('a rewrite sets the expiry its write says: removed, moved or added', async () => {
      await s.createTable({ keyspace: KS, name: 'rewrite', dimension: D, metric: 'cosine', model: null });
      const at = clock.now() + TTL_MS;
      await s.upsertVectors(KS, 'rewrite', [row('cleared', [1, 0, 0], 'a b', at), row('added', [0, 1, 0], 'c d', null), row('moved', [0, 0, 1], null, at)]);
      await s.upsertVectors(KS, 'rewrite', [
        row('cleared', [1, 0, 0], 'a b', null),
        row('added', [0, 1, 0], 'c d', at),
        row('moved', [0, 0, 1], null, clock.now() + 1_000 * 3600),
      ]);
      assert.equal((await s.getVector(KS, 'rewrite', 'cleared'))!.expiresAt ?? null, null);
      await clock.advance(PAST_TTL_MS);
      assert.ok(await s.getVector(KS, 'rewrite', 'cleared'));
      assert.ok(await s.getVector(KS, 'rewrite', 'moved'));
      assert.equal(await s.getVector(KS, 'rewrite', 'added'), null);
      assert.equal(await s.countVectors(KS, 'rewrite'), 2);
      // Written again after expiring, a key is a new row.
      await s.upsertVectors(KS, 'rewrite', [row('added', [0, 1, 0], 'c d', null)]);
      assert.equal(await s.countVectors(KS, 'rewrite'), 3);
      assert.deepEqual(keys(await s.lexicalSearch(KS, 'rewrite', { text: 'c', limit: 10 })), ['added']);
    });

    it('counts stay exact through retries, concurrent writers, rewrites that move, add or remove a TTL, and deletes', async () => {
      await s.createTable({ keyspace: KS, name: 'counts', dimension: D, metric: 'cosine', model: null });
      const now = clock.now();
      // Expiries a few seconds, an hour, two days, forty days and two years ahead, and none.
      const aheads = [TTL_MS, 3_600_000, 2 * 86_400_000, 40 * 86_400_000, 730 * 86_400_000, null];
      const call = (prefix: string) => aheads.map((a, i) => row(`${prefix}${i}`, [1, i, 0], i % 2 === 0 ? `text ${i}` : null, a === null ? null : now + a, { g: prefix }));
      await s.upsertVectors(KS, 'counts', call('a'));
      await s.upsertVectors(KS, 'counts', call('a')); // a retried call: the same rows again
      assert.equal(await s.countVectors(KS, 'counts'), 6);
      // Writers of different keys at once.
      await Promise.all(['b', 'c', 'd', 'e'].map((p) => s.upsertVectors(KS, 'counts', call(p))));
      assert.equal(await s.countVectors(KS, 'counts'), 30);
      // Rewrites: a long expiry to a short one, a short one to none, none to one, one bucket to another.
      await s.upsertVectors(KS, 'counts', [
        row('b1', [1, 1, 0], null, now + TTL_MS),
        row('b3', [1, 3, 0], null, now + TTL_MS),
        row('b0', [1, 0, 0], null, null),
        row('b5', [1, 5, 0], null, now + 86_400_000),
        row('b4', [1, 4, 0], null, now + 3 * 3_600_000),
      ]);
      assert.equal(await s.countVectors(KS, 'counts'), 30);
      // Deletes by key (one expiring, one not, one missing) and by filter (six rows of every kind).
      assert.equal(await s.deleteVectors(KS, 'counts', ['c1', 'c5', 'nope']), 2);
      assert.equal(await s.deleteByFilter(KS, 'counts', { g: 'd' }), 6);
      assert.equal(await s.countVectors(KS, 'counts'), 22);
      assert.equal((await s.listTables(KS)).find((t) => t.name === 'counts')!.rowCount, 22);
      await clock.advance(PAST_TTL_MS);
      // Gone: a0, c0, e0 (written to expire soon), b1 and b3 (rewritten to); b0 stays (its expiry removed).
      assert.equal(await s.countVectors(KS, 'counts'), 17);
      assert.equal((await s.listTables(KS)).find((t) => t.name === 'counts')!.rowCount, 17);
      assert.equal(await s.deleteVectors(KS, 'counts', ['a0', 'b0', 'b4', 'e3']), 3);
      assert.equal(await s.countVectors(KS, 'counts'), 14);
    });

    it("an owner's usage counts only rows not expired", async () => {
      await s.createKeyspace({ name: 'ttl_owned', owner: 'ttl-owner' });
      await s.createTable({ keyspace: 'ttl_owned', name: 't', dimension: D, metric: 'cosine', model: null });
      await s.upsertVectors('ttl_owned', 't', [row('a', [1, 0, 0], null, null), row('b', [0, 1, 0], null, clock.now() + TTL_MS)]);
      assert.equal((await s.usageOf('ttl-owner')).vectors, 2);
      await clock.advance(PAST_TTL_MS);
      assert.equal((await s.usageOf('ttl-owner')).vectors, 1);
    });

    it('metadata records expire', async () => {
      const rec = (file: string, expiresAt: number | null): MetadataRecord => ({
        keyspace: KS,
        table: 'reads',
        source_file: file,
        raw_value: 'v',
        source_type: 'txt',
        processing_details: '',
        ...(expiresAt !== null ? { expires_at: expiresAt } : {}),
      });
      const at = clock.now() + TTL_MS;
      await s.upsertMetadata([rec('stays.txt', null), rec('goes.txt', at), rec('cleared.txt', at)]);
      await s.upsertMetadata([rec('cleared.txt', null)]);
      const before = await s.getMetadata(KS, 'reads', ['stays.txt', 'goes.txt', 'cleared.txt']);
      assert.ok(Math.abs(before.get('goes.txt')!.expires_at! - at) <= 1_000);
      assert.equal(before.get('stays.txt')!.expires_at, undefined);
      assert.equal(before.get('cleared.txt')!.expires_at, undefined);
      await clock.advance(PAST_TTL_MS);
      assert.deepEqual([...(await s.getMetadata(KS, 'reads', ['stays.txt', 'goes.txt', 'cleared.txt'])).keys()].sort(), ['cleared.txt', 'stays.txt']);
    });

    it('keeps a default TTL per table, changeable, checked', async () => {
      await s.createTable({ keyspace: KS, name: 'defaults', dimension: D, metric: 'cosine', model: null });
      assert.equal(await s.getDefaultTtl(KS, 'defaults'), null);
      await s.setDefaultTtl(KS, 'defaults', 3600);
      assert.equal(await s.getDefaultTtl(KS, 'defaults'), 3600);
      await s.setDefaultTtl(KS, 'defaults', null);
      assert.equal(await s.getDefaultTtl(KS, 'defaults'), null);
      for (const bad of [0, -5, 1.5, 11 * 365 * 24 * 3600]) await rejectsWithCode(s.setDefaultTtl(KS, 'defaults', bad), 'validation_failed');
      await rejectsWithCode(s.getDefaultTtl(KS, 'missing'), 'table_not_found');
      await rejectsWithCode(s.setDefaultTtl(KS, 'missing', 60), 'table_not_found');
      // The default is the service's to apply: a row written without an expiry has none.
      await s.setDefaultTtl(KS, 'defaults', 1);
      await s.upsertVectors(KS, 'defaults', [row('k', [1, 0, 0], null, null)]);
      await clock.advance(PAST_TTL_MS);
      assert.ok(await s.getVector(KS, 'defaults', 'k'));
    });
  });
}
