import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mulberry32 } from '../contract-random.case.ts';
import { idf, scoreTokens } from './bm25.ts';
import { PostingIndex } from './postings.ts';
import { seedPhrases, weigh } from './prune.ts';

/** Every row's BM25 over the terms from its tokens (bm25.ts), best first: what topK must agree with. */
function bruteForce(rows: Map<number, string[]>, terms: string[], seeds: number[]) {
  const stats = { rows: rows.size, tokens: [...rows.values()].reduce((s, t) => s + t.length, 0) };
  const idfs = terms.map((t) => idf(stats.rows, [...rows.values()].filter((r) => r.includes(t)).length));
  const phrases = terms.map((t, i) => ({ phrase: [t], idf: idfs[i] }));
  const scored = [...rows]
    .filter(([, tokens]) => seeds.some((i) => tokens.includes(terms[i])))
    .map(([rowId, tokens]) => ({ rowId, score: scoreTokens(tokens, phrases, stats) }))
    .sort((a, b) => b.score - a.score || a.rowId - b.rowId);
  return { stats, idfs, scored };
}

/** Runs a search in steps to its end: its answer (the work each step says was done so far never goes down). */
function untilDone<T>(steps: Generator<number, T>): T {
  for (let work = 0; ; ) {
    const step = steps.next();
    if (step.done === true) return step.value;
    assert.ok(step.value >= work, `work ${step.value} after ${work}`);
    work = step.value;
  }
}

/**
 * Random writes to ids 1..ids, to the rows and the index alike: a new text (share `rewrites`),
 * an empty one (half the rest), or a delete.
 */
function churn(r: () => number, rows: Map<number, string[]>, index: PostingIndex, text: () => string[], o: { writes: number; ids: number; rewrites: number }): void {
  for (let k = 0; k < o.writes; k++) {
    const id = 1 + Math.floor(r() * o.ids);
    const what = r();
    const tokens = what < o.rewrites ? text() : what < (1 + o.rewrites) / 2 ? [] : null;
    if (tokens === null) rows.delete(id);
    else rows.set(id, tokens);
    index.set(id, tokens);
  }
}

/**
 * topK against bruteForce over a corpus of Zipf(1) words from 5,000 (the commonest in most rows,
 * brought by no row of their own: prune.ts; a few hundred in thousands; most in a handful), rows
 * of `length` words: queries of 1-5 words (every fifth of the commonest words only, some words
 * twice) at limits 1-1,000, once frozen and once after a third of the rows are rewritten,
 * emptied or deleted and new ones written (frozen and added postings read together).
 */
function zipfAgainstBruteForce(o: { seed: number; rows: number; length: (r: () => number) => number; queries: number }): { compared: number; commonOnly: number; longRows: number } {
  const r = mulberry32(o.seed);
  const vocab = Array.from({ length: 5000 }, (_, i) => `w${i}`);
  const harmonic = vocab.reduce((s, _, i) => s + 1 / (i + 1), 0);
  const zipf = (): string => {
    let u = r() * harmonic;
    for (let i = 0; i < vocab.length; i++) if ((u -= 1 / (i + 1)) <= 0) return vocab[i];
    return vocab[vocab.length - 1];
  };
  const text = () => Array.from({ length: o.length(r) }, zipf);
  const rows = new Map<number, string[]>();
  const index = new PostingIndex();
  for (let id = 1; id <= o.rows; id++) rows.set(id, text()), index.set(id, rows.get(id)!);
  // As the postings thread does once it has built the lists: round 1 reads frozen and added postings.
  index.freeze();
  let compared = 0;
  let commonOnly = 0;
  let longRows = 0;
  for (let round = 0; round < 2; round++) {
    for (const tokens of rows.values()) if (tokens.length >= 254) longRows++;
    for (let q = 0; q < o.queries; q++) {
      const terms = Array.from({ length: 1 + (q % 5) }, () => (q % 5 === 4 ? vocab[Math.floor(r() * 4)] : zipf()));
      if (q % 7 === 0) terms.push(terms[0]);
      const dfs = terms.map((t) => index.documentFrequency(t));
      const phrases = weigh(terms.map((t, i) => ({ phrase: [t], df: dfs[i] })), rows.size);
      const seeds = seedPhrases(phrases, rows.size);
      if (seeds.length === terms.length && phrases.every((p) => 2 * p.df >= rows.size)) commonOnly++;
      const { stats, idfs, scored } = bruteForce(rows, terms, seeds);
      assert.deepEqual(idfs, phrases.map((p) => p.idf));
      const slack = phrases.reduce((s, p, i) => (p.df > 0 && !seeds.includes(i) ? s + p.idf * 2.2 : s), 0);
      const limit = [1, 10, 100, 1000][q % 4];
      const whole = index.topK(terms, idfs, seeds, stats, limit, slack);
      // In steps of a few postings (or rows) each, as the postings thread takes turns: the same answer.
      assert.deepEqual(untilDone(index.topKSteps(terms, idfs, seeds, stats, limit, slack, 1 + (q % 50))), whole, `round ${round}, ${terms.join(' ')}: in steps`);
      const got = whole.sort((a, b) => b.score - a.score || a.rowId - b.rowId);
      const want = scored.slice(0, limit);
      assert.ok(got.length >= want.length, `${terms.join(' ')}: ${got.length} rows, ${want.length} expected`);
      // The k-th's score, and every row above it, exactly; ties at the k-th may be any of the tied rows.
      for (let i = 0; i < want.length; i++) {
        assert.ok(Math.abs(got[i].score - want[i].score) <= 1e-12 * want[i].score, `round ${round}, ${terms.join(' ')} #${i}: ${got[i].score} against ${want[i].score}`);
        if (want[i].score > want[want.length - 1].score) assert.equal(got[i].rowId, want[i].rowId);
        compared++;
      }
    }
    churn(r, rows, index, text, { writes: Math.round(o.rows / 3), ids: o.rows + 1000, rewrites: 0.8 });
  }
  return { compared, commonOnly, longRows };
}

describe('PostingIndex', () => {
  it('gives the top k rows and exact scores of a brute-force BM25, through rewrites and deletes', () => {
    const r = mulberry32(5);
    const vocab = Array.from({ length: 60 }, (_, i) => `t${i}`);
    const text = () => Array.from({ length: 1 + Math.floor(r() * 12) }, () => vocab[Math.floor(vocab.length * r() ** 2)]);
    const rows = new Map<number, string[]>();
    const index = new PostingIndex();
    for (let id = 1; id <= 2000; id++) {
      rows.set(id, text());
      index.set(id, rows.get(id)!);
    }
    let compared = 0;
    for (let round = 0; round < 3; round++) {
      // Round 0 reads frozen postings only, round 1 frozen ones (dead rows among them) and added
      // ones, round 2 frozen again (the dead left out).
      if (round !== 1) index.freeze();
      for (let q = 0; q < 30; q++) {
        const terms = Array.from({ length: 1 + (q % 4) }, () => vocab[Math.floor(vocab.length * r())]);
        const seeds = terms.map((_, i) => i).filter((i) => i !== 0 || terms.length === 1);
        const { stats, idfs, scored } = bruteForce(rows, terms, seeds);
        for (const t of terms) assert.equal(index.documentFrequency(t), [...rows.values()].filter((x) => x.includes(t)).length);
        // Term 0 brings no rows of its own: its share is bounded by idf (k1 + 1).
        const slack = seeds.includes(0) ? 0 : idfs[0] * 2.2;
        const limit = 1 + (q % 20);
        const got = index.topK(terms, idfs, seeds, stats, limit, slack).sort((a, b) => b.score - a.score || a.rowId - b.rowId);
        assert.ok(got.length >= Math.min(limit, scored.length));
        for (let i = 0; i < Math.min(limit, scored.length); i++) {
          assert.equal(got[i].score, scored[i].score, `round ${round} query ${terms.join(' ')} #${i}`);
          compared++;
        }
        // Every row returned beyond the first `limit` is tied with, or close to, the k-th.
        for (const g of got) assert.equal(g.score, scored.find((s) => s.rowId === g.rowId)!.score);
      }
      // Rewrites (same and other texts), rows losing their text, deletes, new rows.
      churn(r, rows, index, text, { writes: 300, ids: 2100, rewrites: 0.7 });
      assert.equal(index.size, rows.size);
    }
    assert.ok(compared > 500, `compared ${compared}`);
    assert.ok(index.deadShare > 0);
  });

  it('counts a term past 65,535 times in one row, frozen or not', () => {
    const index = new PostingIndex();
    const long = Array.from({ length: 70_000 }, () => 'echo');
    index.set(7, [...long, 'other']);
    index.set(8, ['echo', 'other']);
    const { stats, idfs, scored } = bruteForce(new Map([[7, [...long, 'other']], [8, ['echo', 'other']]]), ['echo'], [0]);
    const top = () => index.topK(['echo'], idfs, [0], stats, 2, 0).sort((a, b) => b.score - a.score).map(({ rowId, score }) => ({ rowId, score }));
    assert.deepEqual(top(), scored);
    index.freeze();
    assert.deepEqual(top(), scored);
  });

  it('bounds a later term by its short rows that hold it often: such a row the rarer terms never reached still makes the top k', () => {
    // After `rare`'s two long rows, a bound over rows holding `often` once (all long) says it cannot
    // lift another row past them; the short row holding it five times is first all the same.
    const rows = new Map<number, string[]>([
      [1, ['rare', ...Array.from({ length: 9 }, (_, i) => `a${i}`)]],
      [2, ['rare', ...Array.from({ length: 9 }, (_, i) => `b${i}`)]],
      [3, ['often', 'often', 'often', 'often', 'often']],
    ]);
    for (let id = 10; id < 20; id++) rows.set(id, ['often', ...Array.from({ length: 29 }, (_, i) => `c${id}-${i}`)]);
    for (let id = 20; id < 100; id++) rows.set(id, ['filler']);
    const index = new PostingIndex();
    for (const [id, tokens] of rows) index.set(id, tokens);
    const terms = ['rare', 'often'];
    const { stats, idfs, scored } = bruteForce(rows, terms, [0, 1]);
    assert.equal(scored[0].rowId, 3, 'the short row is first');
    for (const freeze of [false, true]) {
      if (freeze) index.freeze();
      const got = index.topK(terms, idfs, [0, 1], stats, 2, 0).sort((a, b) => b.score - a.score || a.rowId - b.rowId);
      assert.deepEqual(got.slice(0, 2).map(({ rowId, score }) => ({ rowId, score })), scored.slice(0, 2));
    }
  });

  it('answers as an index never frozen while a freeze goes a few postings at a time between writes', () => {
    const r = mulberry32(3);
    const vocab = ['a', 'b', 'c', 'd', 'e'];
    let steps = 0;
    for (let trial = 0; trial < 300; trial++) {
      const frozen = new PostingIndex();
      const plain = new PostingIndex();
      const rows = new Map<number, string[]>();
      for (let k = 0; k < 40; k++) {
        if (r() < 0.3) {
          frozen.freezeStep(1 + Math.floor(r() * 4));
          steps++;
        } else {
          const id = 1 + Math.floor(r() * 8);
          const tokens = r() < 0.2 ? null : Array.from({ length: 1 + Math.floor(r() * 4) }, () => vocab[Math.floor(r() * vocab.length)]);
          frozen.set(id, tokens);
          plain.set(id, tokens);
          if (tokens === null) rows.delete(id);
          else rows.set(id, tokens);
        }
        if (rows.size === 0) continue;
        const stats = { rows: rows.size, tokens: [...rows.values()].reduce((sum, t) => sum + t.length, 0) };
        const terms = [vocab[Math.floor(r() * vocab.length)], vocab[Math.floor(r() * vocab.length)]];
        const byRow = (x: { rowId: number }, y: { rowId: number }) => x.rowId - y.rowId;
        for (const t of terms) assert.equal(frozen.documentFrequency(t), plain.documentFrequency(t));
        assert.deepEqual(frozen.topK(terms, [1.5, 0.5], [0, 1], stats, 3, 0).sort(byRow), plain.topK(terms, [1.5, 0.5], [0, 1], stats, 3, 0).sort(byRow), `trial ${trial}, step ${k}`);
      }
    }
    assert.ok(steps > 2000);
  });

  it("answers each row with the key given with its tokens, a rewritten row's new one", () => {
    const index = new PostingIndex();
    for (let id = 1; id <= 30; id++) index.set(id, ['w', `only${id}`], `k${id}`);
    index.set(7, ['w', 'w', 'w'], 'k7-again');
    index.set(9, null);
    index.set(40, ['w'], 'k40');
    const stats = { rows: 30, tokens: 30 * 2 + 1 };
    for (const freeze of [false, true]) {
      if (freeze) index.freeze();
      const got = index.topK(['w'], [1], [0], stats, 100, 0);
      assert.equal(got.length, 30);
      for (const r of got) assert.equal(r.key, r.rowId === 7 ? 'k7-again' : `k${r.rowId}`);
    }
  });

  it('freezes again once the postings added since are an eighth of the frozen ones', () => {
    const index = new PostingIndex();
    for (let id = 1; id <= 80; id++) index.set(id, ['a', 'b']);
    assert.equal(index.freezeDue, true);
    index.freeze();
    assert.equal(index.freezeDue, false);
    for (let id = 81; id <= 99; id++) index.set(id, ['a']);
    assert.equal(index.freezeDue, false, '19 added against 160 frozen');
    index.set(100, ['c']);
    assert.equal(index.freezeDue, true, '20 added');
    // A term whose rows are all gone leaves the index at the freeze; the others keep their counts.
    index.set(100, null);
    index.freeze();
    assert.equal(index.documentFrequency('c'), 0);
    assert.equal(index.documentFrequency('a'), 99);
    assert.equal(index.documentFrequency('b'), 80);
  });
  it('answers searches whose steps interleave as it answers each alone (each has scratch of its own)', () => {
    const r = mulberry32(21);
    const index = new PostingIndex();
    const word = () => `w${Math.floor(r() ** 3 * 300)}`;
    for (let id = 1; id <= 3000; id++) index.set(id, Array.from({ length: 5 + Math.floor(r() * 20) }, word), `k${id}`);
    index.freeze();
    const stats = { rows: 3000, tokens: 3000 * 15 };
    const queries = [['w0', 'w1', 'w2', 'w3', 'w5', 'w8'], ['w1', 'w40'], ['w2', 'w7', 'w30', 'w90']];
    const search = (terms: string[]) => [terms, terms.map((_, i) => 1 + i / 10), terms.map((_, i) => i), stats, 10, 0] as const;
    const alone = queries.map((q) => index.topK(...search(q)));
    const [a, b] = [index.topKSteps(...search(queries[0]), 50), index.topKSteps(...search(queries[1]), 50)];
    // The first a few steps into its lists, the second begun, the third run whole, then the other two to their ends.
    for (let i = 0; i < 3; i++) assert.equal(a.next().done, false);
    assert.equal(b.next().done, false);
    assert.deepEqual(index.topK(...search(queries[2])), alone[2]);
    assert.deepEqual(untilDone(a), alone[0]);
    assert.deepEqual(untilDone(b), alone[1]);
    // And the scratch they gave back is clean: the same answers again.
    assert.deepEqual(queries.map((q) => index.topK(...search(q))), alone);
  });

  it('ends a search in steps whose lists changed between its steps with an error, and gives its scratch back clean', () => {
    const index = new PostingIndex();
    for (let id = 1; id <= 50; id++) index.set(id, ['a', 'b', `c${id % 5}`], `k${id}`);
    const stats = { rows: 50, tokens: 150 };
    const steps = index.topKSteps(['a', 'b', 'c1'], [1, 1, 1], [0, 1, 2], stats, 5, 0);
    assert.equal(steps.next().done, false);
    index.set(51, ['a'], 'k51');
    assert.throws(() => steps.next(), /changed during a search/);
    const again = index.topK(['c1'], [1], [0], { rows: 51, tokens: 151 }, 100, 0);
    assert.deepEqual(again.map((x) => x.rowId).sort((x, y) => x - y), [1, 6, 11, 16, 21, 26, 31, 36, 41, 46]);
  });

  it('ranks a Zipf corpus of 24,000 rows as an exhaustive BM25 does, common-word queries included, through rewrites and deletes', () => {
    const { compared, commonOnly } = zipfAgainstBruteForce({ seed: 11, rows: 24_000, length: (r) => 5 + Math.floor(r() * 36), queries: 40 });
    assert.ok(compared > 10_000, `compared ${compared}`);
    assert.ok(commonOnly >= 5, `queries of common words only: ${commonOnly}`);
  });
  it('ranks rows of 254 tokens or more (a length past the byte a search reads) as an exhaustive BM25 does', () => {
    const { compared, longRows } = zipfAgainstBruteForce({ seed: 12, rows: 3_000, length: (r) => 200 + Math.floor(r() * 120), queries: 40 });
    assert.ok(compared > 1_000, `compared ${compared}`);
    assert.ok(longRows > 1_000, `rows of 254 tokens or more: ${longRows}`);
  });
});
