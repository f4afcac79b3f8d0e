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
import { postingSearches } from './lexical-postings.ts';

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
    s = await openEmbeddedStorage({ dataDir: dir, index });
    await s.createKeyspace({ name: 'ks', owner: null });
  });
  after(async () => {
    await s.close();
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('answers every search with the writes acknowledged before it: new words, rewritten and deleted rows', async () => {
    await s.createTable({ keyspace: 'ks', name: 'ryw', dimension: 2, metric: 'cosine', model: null });
    await s.upsertVectors('ks', 'ryw', Array.from({ length: 500 }, (_, i) => ({ key: `r${i}`, vector, metadata: {}, text: `common filler number${i}` })));
    await untilListsAnswer(s, 'ryw', 'common');
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

  it('scores rewritten rows as a fresh table of the same final rows does, below and after the lists are built', async () => {
    const r = mulberry32(5);
    const vocab = Array.from({ length: 60 }, (_, i) => `t${i}w`);
    const text = () => Array.from({ length: 2 + Math.floor(r() * 12) }, () => vocab[Math.floor(vocab.length * r() ** 2)]).join(' ');
    const final = new Map(Array.from({ length: 300 }, (_, i) => [`k${i}`, text()]));
    await s.createTable({ keyspace: 'ks', name: 'rewritten', dimension: 2, metric: 'cosine', model: null });
    await s.createTable({ keyspace: 'ks', name: 'fresh', dimension: 2, metric: 'cosine', model: null });
    // Three versions of every row, longer ones first: FTS5's own totals would count all of them.
    for (let v = 0; v < 2; v++) {
      await s.upsertVectors('ks', 'rewritten', [...final.keys()].map((key) => ({ key, vector, metadata: { g: 1 }, text: `${text()} ${text()} ${text()}` })));
    }
    await s.upsertVectors('ks', 'rewritten', [...final].map(([key, t]) => ({ key, vector, metadata: { g: 1 }, text: t })));
    await s.upsertVectors('ks', 'fresh', [...final].map(([key, t]) => ({ key, vector, metadata: { g: 1 }, text: t })));
    const queries = Array.from({ length: 15 }, (_, q) => Array.from({ length: 1 + (q % 3) }, () => vocab[Math.floor(vocab.length * r())]).join(' '));
    const compare = async (when: string) => {
      for (const q of queries) {
        const [got, want] = await Promise.all([s.lexicalSearch('ks', 'rewritten', { text: q, limit: 20 }), s.lexicalSearch('ks', 'fresh', { text: q, limit: 20 })]);
        assert.ok(want.length > 0, q);
        assert.deepEqual(got.map((m) => m.key), want.map((m) => m.key), `${when} ${q}`);
        got.forEach((m, i) => assert.ok(Math.abs(m.score - want[i].score) <= 1e-9 * want[i].score, `${when} ${q} #${i}: ${m.score} vs ${want[i].score}`));
      }
      // A filtered search is never answered by the lists.
      const filtered = await s.lexicalSearch('ks', 'rewritten', { text: queries[0], limit: 20, filter: { g: 1 } });
      const fresh = await s.lexicalSearch('ks', 'fresh', { text: queries[0], limit: 20, filter: { g: 1 } });
      assert.ok(fresh.length > 0);
      assert.deepEqual(filtered.map((m) => m.key), fresh.map((m) => m.key), `${when}, filtered`);
      filtered.forEach((m, i) => assert.ok(Math.abs(m.score - fresh[i].score) <= 1e-9 * fresh[i].score, `${when}, filtered #${i}`));
    };
    await compare('before the lists');
    await untilListsAnswer(s, 'rewritten', vocab[0]);
    await untilListsAnswer(s, 'fresh', vocab[0]);
    await compare('from the lists');
  });
});
