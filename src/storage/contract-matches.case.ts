/**
 * The refs-then-rows half of the search contract (searchRefs, lexicalSearchRefs, readMatches), run
 * by storageContract against every backend: the ref lists are search's and lexicalSearch's answers
 * without their rows, and readMatches reads the rows as they are now, leaving out those gone.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { RowRef, ScoredRef, Storage, StoredMatch, VectorRow } from './api.ts';
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
  describe('refs, then rows', () => {
    let s: Storage;
    const KS = 'keys_rows';
    /** Each row's ref in table t, from a search listing them all. */
    const refOf = new Map<string, RowRef>();
    /** A list's keys and scores, its refs read back; a key a list gives is the row's. */
    const keyed = async (table: string, list: ScoredRef[]) => {
      const read = await s.readMatches(KS, table, list.map((m) => m.ref));
      return list.map((m) => {
        const key = read.get(m.ref)?.key;
        if (m.key !== undefined) assert.equal(m.key, key);
        return { key, score: m.score };
      });
    };
    before(async () => {
      s = get();
      await s.createKeyspace({ name: KS, owner: null });
      await s.createTable({ keyspace: KS, name: 't', dimension: D, metric: 'cosine', model: null });
      await s.upsertVectors(KS, 't', rows);
      const all = await s.searchRefs(KS, 't', { vector: rows[0].vector, metric: 'cosine', candidates: 10, limit: 10 });
      const read = await s.readMatches(KS, 't', all.map((m) => m.ref));
      for (const m of all) refOf.set(read.get(m.ref)!.key, m.ref);
      assert.equal(refOf.size, rows.length);
    });

    it('searchRefs and lexicalSearchRefs answer the rows, order and scores of search and lexicalSearch, a row by one ref in both', async () => {
      const vector = Float32Array.of(1, 0.3, 0.1, 0.5);
      for (const filter of [undefined, { even: true }]) {
        for (const limit of [1, 3, 10]) {
          const q = { vector, metric: 'cosine' as const, candidates: 10, limit, filter };
          const full = await s.search(KS, 't', q);
          assert.ok(full.length > 0);
          let beside = 0;
          const refs = await s.searchRefs(KS, 't', { ...q, includeVector: true, startBeside: () => void beside++ });
          assert.equal(beside, 1, "the caller's work beside the search is started once, before the answer");
          assert.deepEqual(await keyed('t', refs), scored(full));
          const lq = { text: 'seal pump', limit, filter };
          const lexFull = await s.lexicalSearch(KS, 't', lq);
          assert.ok(lexFull.length > 0);
          const lexRefs = await s.lexicalSearchRefs(KS, 't', lq);
          assert.deepEqual(await keyed('t', lexRefs), scored(lexFull));
          // Each row listed by the ref it has in every other list.
          refs.forEach((m, i) => assert.equal(m.ref, refOf.get(full[i].key)));
          lexRefs.forEach((m, i) => assert.equal(m.ref, refOf.get(lexFull[i].key)));
        }
      }
      assert.deepEqual(await s.lexicalSearchRefs(KS, 't', { text: 'absent', limit: 5 }), []);
    });

    it('readMatches reads the rows of the refs, with their keys, as search answers them; another table\'s refs are absent', async () => {
      const got = await s.readMatches(KS, 't', ['r3', 'r6', 'r0'].map((k) => refOf.get(k)!));
      assert.deepEqual([...got.values()].map((m) => m.key).sort(), ['r0', 'r3', 'r6']);
      assert.deepEqual(got.get(refOf.get('r3')!), { key: 'r3', metadata: { i: 3, even: false }, text: 'seal seal gasket' });
      assert.deepEqual(got.get(refOf.get('r6')!), { key: 'r6', metadata: { i: 6, even: true }, text: null });
      const withVector = await s.readMatches(KS, 't', [refOf.get('r1')!], { includeVector: true });
      assert.deepEqual([...withVector.get(refOf.get('r1')!)!.vector!], [...rows[1].vector]);
      const [searched] = await s.search(KS, 't', { vector: rows[1].vector, metric: 'cosine', candidates: 10, limit: 1, includeVector: true });
      assert.deepEqual({ ...withVector.get(refOf.get('r1')!) }, { key: 'r1', metadata: searched.metadata, text: searched.text, vector: searched.vector });
      assert.equal((await s.readMatches(KS, 't', [])).size, 0);
      await rejectsWithCode(s.readMatches(KS, 'missing', [refOf.get('r0')!]), 'table_not_found');
      // Rows of another table (keys of their own) read through this one are absent.
      await s.createTable({ keyspace: KS, name: 'other', dimension: D, metric: 'cosine', model: null });
      await s.upsertVectors(KS, 'other', rows.map((r) => ({ ...r, key: `o${r.key}` })));
      const theirs = await s.lexicalSearchRefs(KS, 'other', { text: 'seal', limit: 10 });
      assert.equal(theirs.length, 3);
      assert.equal((await s.readMatches(KS, 't', theirs.map((m) => m.ref))).size, 0);
      assert.equal((await s.readMatches(KS, 'other', theirs.map((m) => m.ref))).size, 3);
    });

    it('readMatches leaves out rows deleted or expired after they were listed, and reads a row rewritten since as it is now', async () => {
      await s.createTable({ keyspace: KS, name: 'gone', dimension: D, metric: 'cosine', model: null });
      await s.upsertVectors(KS, 'gone', [
        ...rows.slice(0, 4),
        { ...rows[4], expiresAt: clock.now() + 4_000 },
      ]);
      const listed = (await s.lexicalSearchRefs(KS, 'gone', { text: 'seal motor', limit: 10 })).map((m) => m.ref);
      assert.deepEqual((await keyed('gone', listed.map((ref) => ({ ref, score: 0 })))).map((m) => m.key).sort(), ['r0', 'r1', 'r2', 'r3', 'r4']);
      await s.deleteVectors(KS, 'gone', ['r2']);
      await s.deleteByFilter(KS, 'gone', { i: 0 });
      await s.upsertVectors(KS, 'gone', [{ ...rows[3], metadata: { i: 3, rewritten: true } }]);
      await clock.advance(5_500);
      const read = await s.readMatches(KS, 'gone', listed);
      assert.deepEqual([...read.values()].map((m) => m.key).sort(), ['r1', 'r3']);
      assert.deepEqual([...read.values()].find((m) => m.key === 'r3')!.metadata, { i: 3, rewritten: true });
    });

    it('never reads a listed ref back as a row written after its row was deleted', async () => {
      // The newest row of the store, deleted, then a new key written: a store that numbers rows
      // could give the new row the deleted one's number.
      await s.createTable({ keyspace: KS, name: 'reuse', dimension: D, metric: 'cosine', model: null });
      await s.upsertVectors(KS, 'reuse', rows.slice(0, 3));
      await s.upsertVectors(KS, 'reuse', [{ ...rows[3], key: 'newest' }]);
      const listed = (await s.lexicalSearchRefs(KS, 'reuse', { text: 'seal', limit: 10 })).map((m) => m.ref);
      assert.equal(listed.length, 3);
      await s.deleteVectors(KS, 'reuse', ['newest']);
      await s.upsertVectors(KS, 'reuse', [{ ...rows[3], key: 'later' }]);
      const read = await s.readMatches(KS, 'reuse', listed);
      assert.deepEqual([...read.values()].map((m) => m.key).sort(), ['r0', 'r2']);
    });
  });
}
