import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestApp, TEST_STORAGE, type TestApp } from './testing.ts';

/*
 * Text searches over the ANN path (sealed graphs walked on both threads, then exact re-scoring),
 * with the real model and real sentences: the graphs change only which candidates are considered,
 * never a score, and find what an exact scan finds.
 */

const SUBJECTS = ['A cat', 'The old dog', 'A young girl', 'My neighbour', 'The chef', 'A farmer', 'The pilot', 'A student', 'The banker', 'A child', 'The doctor', 'A tourist', 'The violinist'];
const VERBS = ['is sleeping', 'is reading', 'waits', 'is eating bread', 'sings', 'is painting', 'is repairing a bike', 'cries', 'laughs', 'is writing code', 'is counting money', 'drinks coffee', 'is playing chess', 'argues about stocks', 'is baking a cake', 'dances', 'is fixing the roof', 'is sewing a dress', 'watches the rain', 'is studying maps'];
const PLACES = ['on a sofa', 'in the kitchen', 'at the airport', 'in a small boat', 'near the river', 'in the library', 'on the roof', 'at the market'];
// All 13 × 20 × 8: two sealed segments of 1,000 rows and a delta. initial_top_k 30 is under 1/64 of
// the rows, where search uses the graphs at all.
const COUNT = 2_080;

describe('POST /v1/search/ by text over the graphs (real model)', { skip: TEST_STORAGE !== 'embedded' && 'the graphs are the embedded backend\'s' }, () => {
  let t: TestApp;
  const sentences: string[] = [];
  for (const s of SUBJECTS) for (const v of VERBS) for (const p of PLACES) sentences.push(`${s} ${v} ${p}.`);
  const counts = () => (t.deps.storage as unknown as { searchCounts(): { ann: number; exact: number } }).searchCounts();
  const search = async (query: string, initial_top_k: number) => {
    const res = await t.call('POST', '/v1/search/', { keyspace: 'default_keyspace', table: 'vector', query, initial_top_k, final_top_k: 10 });
    assert.equal(res.statusCode, 200, res.body);
    return res.json().matches as { key: string; score: number; metadata: { text: string } }[];
  };

  before(async () => {
    assert.equal(sentences.length, COUNT);
    t = await startTestApp({ model: 'real', env: { VSS_INDEX_SEGMENT_ROWS: '1000', VSS_EXACT_BELOW_ROWS: '0' } });
    for (let i = 0; i < COUNT; i += 260) {
      const vectors = sentences.slice(i, i + 260).map((text, j) => ({ key: `s${i + j}`, text }));
      const res = await t.call('POST', '/v1/vector/batch', { keyspace: 'default_keyspace', table: 'vector', vectors });
      assert.equal(res.statusCode, 200, res.body);
    }
    // Until the rows are indexed, searches scan them exactly.
    const t0 = Date.now();
    for (let i = 0; counts().ann === 0; i++) {
      assert.ok(Date.now() - t0 < 60_000, `no search used the graphs: ${JSON.stringify(t.deps.storage.indexStatus?.())}`);
      await search(`warming up ${i}`, 30);
      await new Promise((r) => setTimeout(r, 100));
    }
  });
  after(() => t?.close());

  it('finds the exact answers, with the exact scores', async () => {
    const queries = [
      'a kitten napping on the couch', 'someone cooking in a kitchen', 'a traveller at the airport', 'fishing from a little boat',
      'a person reading books', 'repairing a bicycle', 'making music with a violin', 'money and the stock market',
      'a kid playing board games', 'someone painting near the water', 'a doctor drinking an espresso', 'baking pastries',
      'programming a computer', 'sewing clothes', 'rain outside the window', 'a dog waiting by the river',
    ];
    const before = counts();
    let hits = 0;
    for (const q of queries) {
      const ann = await search(q, 30);
      const exact = new Map((await search(q, 1_000_000)).map((m) => [m.key, m.score]));
      for (const m of ann) {
        const e = exact.get(m.key);
        if (e === undefined) continue;
        hits++;
        assert.ok(Math.abs(m.score - e) < 1e-6, `${q}: ${m.key} scored ${m.score}, exactly ${e}`);
      }
    }
    const after = counts();
    // Every initial_top_k 30 search here used the graphs, every 1,000,000 one scanned exactly.
    assert.equal(after.ann - before.ann, queries.length, JSON.stringify({ before, after }));
    assert.equal(after.exact - before.exact, queries.length, JSON.stringify({ before, after }));
    const recall = hits / (queries.length * 10);
    assert.ok(recall >= 0.9, `recall@10 ${recall}`);
  });

  it('finds the cat on the sofa for a kitten on a couch', async () => {
    const before = counts().ann;
    const [first] = await search('a little kitten dozing on the couch', 30);
    assert.equal(counts().ann, before + 1);
    assert.match(first.metadata.text, /^A cat .* on a sofa\.$/);
  });
});
