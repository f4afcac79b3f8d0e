/**
 * The posting lists' thread (lexical-postings.ts): a write acknowledged before a search is in that
 * search's answer, and scores use the exact totals at every table size, so rewritten rows score as
 * a fresh table of the same final rows does (FTS5's own totals only grow).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { mulberry32 } from '../contract-random.case.ts';
import type { EmbeddedStorage } from './embedded-storage.ts';
import { openEmbeddedStorage } from './embedded-storage.ts';
import type BetterSqlite3 from 'better-sqlite3';
import { Database } from './sqlite-driver.ts';
import { postingSearches, PostingsThread } from './lexical-postings.ts';

const index = { saveEveryChanges: 1_000_000, saveEveryMs: 3_600_000, exactBelowRows: 0 };
const vector = Float32Array.of(1, 0);

/** Searches until the table's lists answer (the first search starts their build). */
async function untilListsAnswer(s: EmbeddedStorage, table: string, word: string): Promise<void> {
  for (let i = 0; ; i++) {
    const before = postingSearches.answered;
    await s.lexicalSearch('ks', table, { text: word, limit: 1 });
    if (postingSearches.answered > before) return;
    assert.ok(i < 2000, 'the posting lists were never built');
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('lexical posting lists thread', () => {
  let dir: string;
  let s: EmbeddedStorage;
  before(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'vss-postings-'));
    // Lists for tables of any size, so that small tables exercise them; every search a step at a
    // time (a list a step), taking turns with the searches sent after it.
    s = await openEmbeddedStorage({ dataDir: dir, index, postingListsFromRows: 0, postingSlice: { ms: 0, reads: 0 } });
    await s.createKeyspace({ name: 'ks', owner: null });
  });
  after(async () => {
    await s.close();
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('answers every search with the writes acknowledged before it: new words, rewritten and deleted rows', async () => {
    await s.createTable({ keyspace: 'ks', name: 'ryw', dimension: 2, metric: 'cosine', model: null });
    await s.upsertVectors('ks', 'ryw', Array.from({ length: 500 }, (_, i) => ({ key: `r${i}`, vector, metadata: {}, text: `common filler number${i}` })));
    const lists = () => s.indexStatus().find((t) => t.table === 'ryw')?.postingLists;
    assert.equal(lists(), false, 'no lists before the first lexical search');
    await untilListsAnswer(s, 'ryw', 'common');
    assert.equal(lists(), true, 'the status says the lists answer');
    const answered = postingSearches.answered;
    for (let i = 0; i < 40; i++) {
      // A new row with a word no row had; a row rewritten without its word; a row deleted.
      await s.upsertVectors('ks', 'ryw', [
        { key: `new${i}`, vector, metadata: {}, text: `common zyx${i}q` },
        { key: `r${i}`, vector, metadata: {}, text: 'common rewritten' },
      ]);
      await s.deleteVectors('ks', 'ryw', [`r${100 + i}`]);
      const [fresh, old, gone] = await Promise.all([
        s.lexicalSearch('ks', 'ryw', { text: `zyx${i}q`, limit: 5 }),
        s.lexicalSearch('ks', 'ryw', { text: `number${i}`, limit: 5 }),
        s.lexicalSearch('ks', 'ryw', { text: `number${100 + i}`, limit: 5 }),
      ]);
      assert.deepEqual(fresh.map((m) => m.key), [`new${i}`], `round ${i}: the new row`);
      assert.deepEqual(old, [], `round ${i}: the rewritten row's old word`);
      assert.deepEqual(gone, [], `round ${i}: the deleted row`);
      // And a write sent with no wait at all before the search: acknowledged first, then searched.
      const write = s.upsertVectors('ks', 'ryw', [{ key: `late${i}`, vector, metadata: {}, text: `lateword${i}z` }]);
      const found = await write.then(() => s.lexicalSearch('ks', 'ryw', { text: `lateword${i}z`, limit: 5 }));
      assert.deepEqual(found.map((m) => m.key), [`late${i}`], `round ${i}: the write awaited just before`);
    }
    assert.equal(postingSearches.answered - answered, 40 * 4, 'every search answered by the thread');
  });

  it("answers the rows' keys as they are now, from the thread's own copy, as rows are deleted and written", async () => {
    await s.createTable({ keyspace: 'ks', name: 'reuse', dimension: 2, metric: 'cosine', model: null });
    const live = new Set(Array.from({ length: 50 }, (_, i) => `a${i}`));
    await s.upsertVectors('ks', 'reuse', [...live].map((key, i) => ({ key, vector, metadata: {}, text: `shared word${i}` })));
    await untilListsAnswer(s, 'reuse', 'shared');
    const { answered } = postingSearches;
    let last = 'a49';
    for (let i = 0; i < 20; i++) {
      // The row written last has the highest id (which SQLite alone would give again to the next row).
      await s.deleteVectors('ks', 'reuse', [last]);
      live.delete(last);
      last = `b${i}`;
      await s.upsertVectors('ks', 'reuse', [{ key: last, vector, metadata: {}, text: `shared other${i}` }]);
      live.add(last);
      const [listed, matches] = await Promise.all([s.lexicalSearchRefs('ks', 'reuse', { text: 'shared', limit: 100 }), s.lexicalSearch('ks', 'reuse', { text: `other${i} shared`, limit: 100 })]);
      assert.deepEqual(listed.map((k) => k.key).sort(), [...live].sort(), `round ${i}: the keys`);
      const read = await s.readMatches('ks', 'reuse', listed.map((k) => k.ref));
      assert.deepEqual(listed.map((k) => read.get(k.ref)?.key), listed.map((k) => k.key), `round ${i}: each key its row's`);
      assert.equal(matches[0].key, last, `round ${i}: the new row first`);
      assert.deepEqual(matches.map((m) => m.key).sort(), [...live].sort(), `round ${i}: the rows`);
    }
    assert.equal(postingSearches.answered - answered, 40, 'every search answered by the thread');
  });

  it('breaks ties at the cut by key, whatever order the rows were written in', async () => {
    await s.createTable({ keyspace: 'ks', name: 'ties', dimension: 2, metric: 'cosine', model: null });
    // 40 rows of the same text (the same score), written in an order unlike their keys' (ids follow it).
    const keys = Array.from({ length: 40 }, (_, i) => `t${String((i * 17) % 40).padStart(2, '0')}`);
    await s.upsertVectors('ks', 'ties', keys.map((key) => ({ key, vector, metadata: {}, text: 'same words here' })));
    await s.upsertVectors('ks', 'ties', [{ key: 'other', vector, metadata: {}, text: 'unrelated' }]);
    await untilListsAnswer(s, 'ties', 'same');
    const { answered } = postingSearches;
    const found = await s.lexicalSearch('ks', 'ties', { text: 'same', limit: 5 });
    assert.equal(postingSearches.answered - answered, 1, 'the lists answered');
    assert.deepEqual(found.map((m) => m.key), [...keys].sort().slice(0, 5));
  });

  it('answers a short search sent after a long one first: the long one waits its turns, a list at a time', async () => {
    await s.createTable({ keyspace: 'ks', name: 'turns', dimension: 2, metric: 'cosine', model: null });
    await s.createTable({ keyspace: 'ks', name: 'busy', dimension: 2, metric: 'cosine', model: null });
    // Eight words each in about a third of the rows (eight lists to read), and one word in four rows.
    const mids = Array.from({ length: 8 }, (_, w) => `mid${w}`);
    const text = (i: number) => [...mids.filter((_, w) => Math.imul(i + 1, 2654435761 + 40503 * w) >>> 0 < 2 ** 32 / 3), `own${i}`, ...(i % 500 === 0 ? ['rare'] : [])].join(' ');
    await s.upsertVectors('ks', 'turns', Array.from({ length: 2000 }, (_, i) => ({ key: `t${i}`, vector, metadata: {}, text: text(i) })));
    // A table whose lists take a while to build: the thread reads its first slice of rows while both searches are sent.
    await s.upsertVectors('ks', 'busy', Array.from({ length: 6000 }, (_, i) => ({ key: `b${i}`, vector, metadata: {}, text: `${mids.join(' ')} ${'filler words here '.repeat(20)}${i}` })));
    await withThread(async (thread, tableOf) => {
      const turns = tableOf('turns');
      const stats = { rows: 2000, tokens: 8000 };
      const long = () => thread.search(turns, 'porter', mids, stats, 10);
      const short = () => thread.search(turns, 'porter', ['rare'], stats, 10);
      await listsBuilt(long);
      const alone = { long: await long(), short: await short() };
      assert.equal(thread.search(tableOf('busy'), 'porter', ['mid0'], stats, 10), null, 'the busy table\'s lists begin');
      const order: string[] = [];
      const both = await Promise.all([long()!.then((r) => (order.push('long'), r)), short()!.then((r) => (order.push('short'), r))]);
      assert.deepEqual(order, ['short', 'long']);
      assert.deepEqual({ long: both[0], short: both[1] }, alone);
    });
  });

  it('ends the searches waiting their turn before it reads a write sent after them: each answers the lists as they were when it was sent', async () => {
    await s.createTable({ keyspace: 'ks', name: 'barrier', dimension: 2, metric: 'cosine', model: null });
    const mids = Array.from({ length: 6 }, (_, w) => `mid${w}`);
    await s.upsertVectors('ks', 'barrier', Array.from({ length: 1000 }, (_, i) => ({ key: `b${i}`, vector, metadata: {}, text: `${mids.filter((_, w) => (i + w) % 2 === 0).join(' ')} own${i}` })));
    await withThread(async (thread, tableOf, db) => {
      const tableId = tableOf('barrier');
      const search = () => thread.search(tableId, 'porter', mids, { rows: 1001, tokens: 4000 }, 5);
      await listsBuilt(search);
      // Three messages in one turn: a search of six lists, the id of a row written since (holding
      // every word: the best row once read), the same search again.
      await s.upsertVectors('ks', 'barrier', [{ key: 'best', vector, metadata: {}, text: mids.join(' ') }]);
      const { id } = db.prepare("SELECT id FROM vectors WHERE table_id = ? AND key = 'best'").get(tableId) as { id: number };
      const before = search();
      thread.touched(tableId, [id]);
      const after = search();
      const [sent, next] = await Promise.all([before, after]);
      assert.ok(sent !== null && next !== null, 'the thread answered both');
      assert.ok(!sent.some((r) => r.rowId === id), 'the search sent before the row');
      assert.equal(next[0].rowId, id, 'the search sent after it');
    });
  });

  /** A posting-lists thread of the test's own on the database (a search a step at a time), so that its messages can be sent in one turn. */
  async function withThread(test: (thread: PostingsThread, tableOf: (name: string) => number, db: BetterSqlite3.Database) => Promise<void>): Promise<void> {
    const thread = new PostingsThread(path.join(dir, 'vss.db'), 0, { ms: 0, reads: 0 });
    const db = new Database(path.join(dir, 'vss.db'), { readonly: true });
    try {
      await test(thread, (name) => s.indexStatus().find((t) => t.table === name)!.tableId, db);
    } finally {
      db.close();
      await thread.close();
    }
  }

  /** Searches until the thread's lists answer (the first search starts their build). */
  async function listsBuilt(search: () => Promise<unknown> | null): Promise<void> {
    for (let i = 0; (await search()) === null; i++) {
      assert.ok(i < 2000, 'the posting lists were never built');
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  /** Rows rewritten twice (longer texts first) and a fresh table of their final texts; compares their lexical answers. */
  async function rewrittenAgainstFresh(st: EmbeddedStorage, listed: boolean): Promise<void> {
    const r = mulberry32(5);
    const vocab = Array.from({ length: 60 }, (_, i) => `t${i}w`);
    const text = () => Array.from({ length: 2 + Math.floor(r() * 12) }, () => vocab[Math.floor(vocab.length * r() ** 2)]).join(' ');
    const final = new Map(Array.from({ length: 300 }, (_, i) => [`k${i}`, text()]));
    await st.createTable({ keyspace: 'ks', name: 'rewritten', dimension: 2, metric: 'cosine', model: null });
    await st.createTable({ keyspace: 'ks', name: 'fresh', dimension: 2, metric: 'cosine', model: null });
    // FTS5's own totals would count every version of a row.
    for (let v = 0; v < 2; v++) {
      await st.upsertVectors('ks', 'rewritten', [...final.keys()].map((key) => ({ key, vector, metadata: { g: 1 }, text: `${text()} ${text()} ${text()}` })));
    }
    await st.upsertVectors('ks', 'rewritten', [...final].map(([key, t]) => ({ key, vector, metadata: { g: 1 }, text: t })));
    await st.upsertVectors('ks', 'fresh', [...final].map(([key, t]) => ({ key, vector, metadata: { g: 1 }, text: t })));
    const queries = Array.from({ length: 15 }, (_, q) => Array.from({ length: 1 + (q % 3) }, () => vocab[Math.floor(vocab.length * r())]).join(' '));
    const compare = async (when: string) => {
      for (const q of queries) {
        for (const filter of [undefined, { g: 1 }]) {
          const [got, want] = await Promise.all([st.lexicalSearch('ks', 'rewritten', { text: q, limit: 20, filter }), st.lexicalSearch('ks', 'fresh', { text: q, limit: 20, filter })]);
          assert.ok(want.length > 0, q);
          assert.equal(got.length, want.length, `${when} ${q}`);
          got.forEach((m, i) => assert.ok(Math.abs(m.score - want[i].score) <= 1e-9 * want[i].score, `${when} ${q} #${i}: ${m.score} vs ${want[i].score}`));
          // The rows too, but for those tied with the last (the pruned path does not look for ties at the cut).
          const cut = want.at(-1)!.score * (1 + 1e-9);
          const keys = (ms: typeof got) => ms.filter((m) => m.score > cut).map((m) => m.key);
          assert.deepEqual(keys(got), keys(want), `${when} ${q} ${filter ? 'filtered' : ''}`);
        }
      }
    };
    await compare('before any lists');
    if (!listed) return;
    const answered = postingSearches.answered;
    await untilListsAnswer(st, 'rewritten', vocab[0]);
    await untilListsAnswer(st, 'fresh', vocab[0]);
    await compare('from the lists');
    assert.ok(postingSearches.answered - answered >= queries.length * 2, 'the lists answered the unfiltered searches');
  }

  it('scores rewritten rows of a small table as a fresh table of the same final rows does (no lists: the pruned path)', async () => {
    const other = await openEmbeddedStorage({ dataDir: path.join(dir, 'default'), index });
    try {
      await other.createKeyspace({ name: 'ks', owner: null });
      const answered = postingSearches.answered;
      await rewrittenAgainstFresh(other, false);
      assert.equal(postingSearches.answered, answered, 'a table under 20,000 rows has no lists by default');
    } finally {
      await other.close();
    }
  });

  it('scores rewritten rows as a fresh table of the same final rows does, from the posting lists', () => rewrittenAgainstFresh(s, true));
});
