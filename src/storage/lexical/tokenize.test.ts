import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Database } from '../embedded/sqlite-driver.ts';
import type { LexicalTokenizer } from '../api.ts';
import { mulberry32 } from '../contract-random.case.ts';
import { porterStem } from './porter.ts';
import { tokenize } from './tokenize.ts';

const FTS5_TOKENIZE: Record<LexicalTokenizer, string> = { porter: 'porter unicode61', unicode61: 'unicode61', trigram: 'trigram' };

/** FTS5's own tokens of each text, in order (through an fts5vocab 'instance' table). */
function fts5Tokens(tokenizer: LexicalTokenizer, texts: string[]): string[][] {
  const db = new Database(':memory:');
  try {
    db.exec(`CREATE VIRTUAL TABLE t USING fts5(x, tokenize = '${FTS5_TOKENIZE[tokenizer]}'); CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance');`);
    const ins = db.prepare('INSERT INTO t (rowid, x) VALUES (?, ?)');
    db.transaction(() => texts.forEach((x, i) => ins.run(i + 1, x)))();
    const out: string[][] = texts.map(() => []);
    for (const r of db.prepare('SELECT term, doc, "offset" AS o FROM v ORDER BY doc, o').iterate() as Iterable<{ term: string; doc: number }>) out[r.doc - 1].push(r.term);
    return out;
  } finally {
    db.close();
  }
}

// Pieces from many scripts and classes: ASCII words and punctuation, accented Latin (precomposed and
// combining), Greek, Cyrillic, Arabic, Hebrew, Devanagari, CJK, Hangul, emoji, digits of other
// scripts, private use, NUL and a lone surrogate.
const PIECES = [
  'running', 'Runs', 'generalization', 'hopping', 'CONDITIONAL', 'ability', 'sky', 'agreed', 'feed', 'bled', 'sing', 'ies', 'caresses', 'ponies',
  'x', 'ab', '42', '3.14', 'e-mail', "don't", 'snake_case', 'a.b.c', '"quoted"', '(x)', 'NEAR', 'OR', 'AND', 'NOT', '*', '^', ':', '-', '+',
  'café', 'cafe\u0301', 'Ångström', 'naïve', 'Œuvre', 'straße', 'İstanbul', 'ǅemal', 'ﬁne', 'Ａｂｃ', 'ǆ',
  'Σίσυφος', 'ΣΑΣ', 'Москва', 'ёлка', 'Й', 'مرحبا', 'שָׁלוֹם', 'नमस्ते', '東京タワー', '한국어', '😀👍🏽', '٣٤٥', '\u{e000}\u{f0000}',
  '\u0000', '\ud800', '\t', '\n', '  ', ',', '…', '—', '·', '\u200b', '\u00ad', 'a\u0308\u0301', 'ǘ', '\u{1d400}\u{1d41a}', 'ⅷ', '①',
];

function randomTexts(seed: number, count: number): string[] {
  const r = mulberry32(seed);
  return Array.from({ length: count }, () => {
    const n = 1 + Math.floor(r() * 12);
    let s = '';
    for (let i = 0; i < n; i++) s += PIECES[Math.floor(r() * PIECES.length)] + (r() < 0.6 ? ' ' : '');
    return s;
  });
}

for (const tokenizer of ['unicode61', 'porter', 'trigram'] as const) {
  test(`${tokenizer}: the same tokens as FTS5 on 3,000 mixed-script texts`, () => {
    const texts = randomTexts(tokenizer.length * 7919, 3000);
    const want = fts5Tokens(tokenizer, texts);
    let checked = 0;
    texts.forEach((t, i) => {
      assert.deepEqual(tokenize(tokenizer, t), want[i], `text ${JSON.stringify(t)}`);
      checked += want[i].length;
    });
    assert.ok(checked > 3000, 'the texts gave tokens to compare');
  });
}

test('porter: the same stems as FTS5 over English-like words built from every suffix the steps know', () => {
  const stems = ['cat', 'hop', 'fil', 'relat', 'condit', 'sensit', 'digit', 'rat', 'troubl', 'y', 'sky', 'tanner', 'oper', 'formal', 'predic', 'h', 'bee', 'generous', 'triplic', 'electr', 'effect', 'adopt', 'depend', 'irrit', 'ho', 'fizz', 'fail', 'tr'];
  const suffixes = ['', 's', 'es', 'ies', 'ss', 'sses', 'eed', 'ed', 'ing', 'ings', 'at', 'ational', 'tional', 'enci', 'anci', 'izer', 'logi', 'bli', 'alli', 'entli', 'eli', 'ousli', 'ization', 'ation', 'ator', 'alism', 'iveness', 'fulness', 'ousness', 'aliti', 'iviti', 'biliti', 'icate', 'ative', 'alize', 'iciti', 'ical', 'ful', 'ness', 'al', 'ance', 'ence', 'er', 'ic', 'able', 'ible', 'ant', 'ement', 'ment', 'ent', 'ion', 'sion', 'tion', 'ou', 'ism', 'ate', 'iti', 'ous', 'ive', 'ize', 'e', 'll', 'y', 'ly', 'bled', 'ized', 'ated'];
  const words = stems.flatMap((s) => suffixes.map((x) => s + x)).concat(['a'.repeat(64) + 'ing', 'b'.repeat(61) + 'ing', 'aing', 'éing', 'naïveness']);
  const want = fts5Tokens('porter', words);
  words.forEach((w, i) => assert.deepEqual(tokenize('porter', w), want[i], w));
  assert.equal(porterStem('generalizations'), 'gener');
});

test('trigram: texts under three characters give no tokens; spaces and case are part of them', () => {
  assert.deepEqual(tokenize('trigram', 'ab'), []);
  assert.deepEqual(tokenize('trigram', 'A b'), ['a b']);
});
