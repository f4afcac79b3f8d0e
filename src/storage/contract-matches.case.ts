/**
 * The keys-then-rows half of the search contract (searchKeys, lexicalSearchKeys, readMatches), run
 * by storageContract against every backend: the key lists are search's and lexicalSearch's answers
 * without their rows, and readMatches reads the rows as they are now, leaving out those gone.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Storage, StoredMatch, VectorRow } from './api.ts';
import { rejectsWithCode } from './contract.case.ts';
import type { TestClock } from './contract-ttl.case.ts';

const D = 4;
const TEXTS = ['pump seal leak', 'pump motor', 'valve seal', 'seal seal gasket', 'motor bearing', 'nothing here', null];
const rows: VectorRow[] = TEXTS.map((text, i) => ({
  key: `r${i}`,
  vector: Float32Array.of(1, i / 7, (i % 3) / 3, i % 2),
  metadata: { i, even: i % 2 === 0 },
  text,
}));
const scored = (ms: StoredMatch[]) => ms.map((m) => ({ key: m.key, score: m.score }));

export function matchesContract(get: () => Storage, clock: TestClock): void {
  describe('keys, then rows', () => {
    let s: Storage;
    const KS = 'keys_rows';
    before(async () => {
      s = get();
      await s.createKeyspace({ name: KS, owner: null });
      await s.createTable({ keyspace: KS, name: 't', dimension: D, metric: 'cosine', model: null });
      await s.upsertVectors(KS, 't', rows);
    });

    it('searchKeys and lexicalSearchKeys answer the keys, order and scores of search and lexicalSearch', async () => {
      const vector = Float32Array.of(1, 0.3, 0.1, 0.5);
      for (const filter of [undefined, { even: true }]) {
        for (const limit of [1, 3, 10]) {
          const q = { vector, metric: 'cosine' as const, candidates: 10, limit, filter };
          const full = await s.search(KS, 't', q);
          assert.ok(full.length > 0);
          assert.deepEqual(await s.searchKeys(KS, 't', { ...q, includeVector: true }), scored(full));
          const lq = { text: 'seal pump', limit, filter };
          const lexFull = await s.lexicalSearch(KS, 't', lq);
          assert.ok(lexFull.length > 0);
          assert.deepEqual(await s.lexicalSearchKeys(KS, 't', lq), scored(lexFull));
        }
      }
      assert.deepEqual(await s.lexicalSearchKeys(KS, 't', { text: 'absent', limit: 5 }), []);
    });

    it('readMatches reads the rows of the keys that exist, as search answers them; others are absent', async () => {
      const got = await s.readMatches(KS, 't', ['r3', 'r6', 'never', 'r0']);
      assert.deepEqual([...got.keys()].sort(), ['r0', 'r3', 'r6']);
      assert.deepEqual(got.get('r3'), { metadata: { i: 3, even: false }, text: 'seal seal gasket' });
      assert.deepEqual(got.get('r6'), { metadata: { i: 6, even: true }, text: null });
      const withVector = await s.readMatches(KS, 't', ['r1'], { includeVector: true });
      assert.deepEqual([...withVector.get('r1')!.vector!], [...rows[1].vector]);
      const [searched] = await s.search(KS, 't', { vector: rows[1].vector, metric: 'cosine', candidates: 10, limit: 1, includeVector: true });
      assert.deepEqual({ ...withVector.get('r1') }, { metadata: searched.metadata, text: searched.text, vector: searched.vector });
      assert.equal((await s.readMatches(KS, 't', [])).size, 0);
      await rejectsWithCode(s.readMatches(KS, 'missing', ['r0']), 'table_not_found');
    });

    it('readMatches leaves out rows deleted or expired after they were listed', async () => {
      await s.createTable({ keyspace: KS, name: 'gone', dimension: D, metric: 'cosine', model: null });
      await s.upsertVectors(KS, 'gone', [
        ...rows.slice(0, 4),
        { ...rows[4], expiresAt: clock.now() + 4_000 },
      ]);
      const listed = (await s.lexicalSearchKeys(KS, 'gone', { text: 'seal motor', limit: 10 })).map((m) => m.key);
      assert.deepEqual([...listed].sort(), ['r0', 'r1', 'r2', 'r3', 'r4']);
      await s.deleteVectors(KS, 'gone', ['r2']);
      await s.deleteByFilter(KS, 'gone', { i: 0 });
      await clock.advance(5_500);
      assert.deepEqual([...(await s.readMatches(KS, 'gone', listed)).keys()].sort(), ['r1', 'r3']);
    });
  });
}
