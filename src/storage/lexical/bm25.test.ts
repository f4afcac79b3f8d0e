import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compareCodePoints } from '../../index/filter.ts';
import { mulberry32 } from '../contract-random.case.ts';
import { idf, phraseCount, queryPhrases, scoreTokens } from './bm25.ts';
import { fts5Ranker } from './fts5-reference.case.ts';
import { tokenize } from './tokenize.ts';

const WORDS = ['runrunrun', 'running', 'runs', 'ran', 'cancer', 'breast', 'statin', 'statins', 'the', 'of', 'mortality', 'Café', 'cafe', 'generalization', 'general', 'diet', 'vitamin', 'D', 'x', 'é'];

function texts(seed: number, n: number): string[] {
  const r = mulberry32(seed);
  // Zipf-like: early words common, late ones rare; lengths vary so that length normalisation matters.
  return Array.from({ length: n }, () => Array.from({ length: 1 + Math.floor(r() * 30) }, () => WORDS[Math.floor(WORDS.length * r() ** 2)]).join(r() < 0.8 ? ' ' : ', '));
}

/** Every row scored by bm25.ts from its text, best first, as a backend computing BM25 in JS does. */
function jsRank(tokenizer: 'porter' | 'unicode61' | 'trigram', rows: [string, string][], query: string): { key: string; score: number }[] {
  const counted = rows.map(([k, t]) => ({ key: k, tokens: tokenize(tokenizer, t) }));
  const stats = { rows: counted.length, tokens: counted.reduce((s, r) => s + r.tokens.length, 0) };
  const phrases = queryPhrases(tokenizer, query).map((phrase) => ({ phrase, idf: idf(stats.rows, counted.filter((r) => phraseCount(r.tokens, phrase) > 0).length) }));
  return counted
    .map((r) => ({ key: r.key, score: scoreTokens(r.tokens, phrases, stats) }))
    .filter((r) => r.score > 0)
    .sort((a, b) => b.score - a.score || compareCodePoints(a.key, b.key));
}

for (const tokenizer of ['porter', 'unicode61', 'trigram'] as const) {
  test(`${tokenizer}: BM25 from bm25.ts gives FTS5's rows, order and scores`, () => {
    const rows = texts(tokenizer.length, 400).map((t, i): [string, string] => [`k${i}`, t]);
    const fts5 = fts5Ranker(tokenizer, rows);
    let compared = 0;
    try {
      for (const query of ['running statins', 'the of', 'cancer cancer breast', 'run running runs', 'café generalizations', 'D', 'vitamin "diet" OR NEAR(x)', 'alization', 'zzz']) {
        const want = fts5.rank(query);
        const got = jsRank(tokenizer, rows, query);
        assert.deepEqual(got.map((r) => r.key), want.map((r) => r.key), query);
        compared += want.length;
        got.forEach((r, i) => assert.ok(Math.abs(r.score - want[i].score) <= 1e-9 * Math.max(1, want[i].score), `${query}: ${r.key} ${r.score} vs ${want[i].score}`));
      }
      assert.ok(compared > 200, `FTS5 matched ${compared} rows in all`);
    } finally {
      fts5.close();
    }
  });
}

test('idf is floored at 1e-6 for a term in half the rows or more, as in FTS5', () => {
  assert.equal(idf(10, 5), 1e-6);
  assert.equal(idf(10, 9), 1e-6);
  assert.ok(Math.abs(idf(10, 1) - Math.log(9.5 / 1.5)) < 1e-12);
});
