/**
 * The lexical half of the storage contract (lexicalSearch and the tables' tokenizers), run by
 * storageContract against every backend. Scores are checked against BM25 computed here by hand,
 * from texts whose words no tokenizer changes, so both backends must rank and score alike.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { FileRecord, MetadataRecord, Storage, StoredMatch, VectorRow } from './api.ts';
import { rejectsWithCode } from './contract.case.ts';

const D = 3;
const vec = (i: number): Float32Array => Float32Array.of(1, (i % 7) / 7, (i % 3) / 3);
const row = (key: string, text: string | null, metadata: Record<string, unknown> = {}, i = key.length): VectorRow => ({
  key,
  vector: vec(i),
  metadata: metadata as VectorRow['metadata'],
  text,
});

/** FTS5's bm25() over whitespace-separated texts: k1 1.2, b 0.75, idf floored at 1e-6; null: no term matched. */
function bm25(texts: string[], query: string[], doc: string): number | null {
  const docs = texts.map((t) => t.split(' '));
  const n = docs.length;
  const avgdl = docs.reduce((s, d) => s + d.length, 0) / n;
  const words = doc.split(' ');
  let score = 0;
  let hit = false;
  for (const term of new Set(query)) {
    const tf = words.filter((w) => w === term).length;
    if (tf === 0) continue;
    hit = true;
    const df = docs.filter((d) => d.includes(term)).length;
    let idf = Math.log((n - df + 0.5) / (df + 0.5));
    if (idf <= 0) idf = 1e-6;
    score += (idf * (tf * 2.2)) / (tf + 1.2 * (1 - 0.75 + (0.75 * words.length) / avgdl));
  }
  return hit ? score : null;
}

const keys = (ms: StoredMatch[]): string[] => ms.map((m) => m.key);

export function lexicalContract(get: () => Storage): void {
  describe('lexical search', () => {
    let s: Storage;
    const KS = 'lex';
    before(async () => {
      s = get();
      await s.createKeyspace({ name: KS, owner: null });
    });

    it('tables keep the tokenizer they were made with (porter by default) and refuse an unknown one', async () => {
      const t = await s.createTable({ keyspace: KS, name: 'tok_default', dimension: D, metric: 'cosine', model: null });
      assert.deepEqual(t.lexical, { tokenizer: 'porter' });
      const tri = await s.createTable({ keyspace: KS, name: 'tok_tri', dimension: D, metric: 'cosine', model: null, lexical: { tokenizer: 'trigram' } });
      assert.deepEqual(tri.lexical, { tokenizer: 'trigram' });
      assert.deepEqual((await s.getTable(KS, 'tok_tri'))!.lexical, { tokenizer: 'trigram' });
      assert.deepEqual((await s.listTables(KS)).find((x) => x.name === 'tok_tri')!.lexical, { tokenizer: 'trigram' });
      await assert.rejects(
        s.createTable({ keyspace: KS, name: 'tok_bad', dimension: D, metric: 'cosine', model: null, lexical: { tokenizer: 'icu' as 'porter' } }),
        (e: { code?: string; errors?: { path: string }[] }) => e.code === 'validation_failed' && e.errors!.some((x) => x.path === '/lexical/tokenizer'),
      );
      assert.equal(await s.getTable(KS, 'tok_bad'), null);
    });

    it('scores BM25 per table exactly as FTS5 does, best first, and finds a rare identifier first', async () => {
      const texts: Record<string, string> = {
        a: 'the pump failed with code zx41 at start',
        b: 'the pump started and the pump ran',
        c: 'a valve opened at start',
        d: 'the valve and the pump',
        e: 'nothing of interest here',
      };
      await s.createTable({ keyspace: KS, name: 'bm', dimension: D, metric: 'cosine', model: null, lexical: { tokenizer: 'unicode61' } });
      await s.upsertVectors(KS, 'bm', [...Object.entries(texts).map(([k, t]) => row(k, t)), row('no_text', null), row('empty', '')]);
      // A second table with other texts: its statistics must not leak into the first's.
      await s.createTable({ keyspace: KS, name: 'bm_other', dimension: D, metric: 'cosine', model: null, lexical: { tokenizer: 'unicode61' } });
      await s.upsertVectors(KS, 'bm_other', [row('x', 'pump pump pump'), row('y', 'pump')]);

      const all = Object.values(texts);
      for (const q of ['pump start', 'zx41', 'the valve', 'pump pump zx41']) {
        const got = await s.lexicalSearch(KS, 'bm', { text: q, limit: 10 });
        const want = Object.entries(texts)
          .map(([k, t]) => ({ key: k, score: bm25(all, q.split(' '), t) }))
          .filter((x): x is { key: string; score: number } => x.score !== null)
          .sort((x, y) => y.score - x.score || (x.key < y.key ? -1 : 1));
        assert.deepEqual(keys(got).sort(), keys(want as StoredMatch[]).sort(), q);
        for (const m of got) {
          const w = want.find((x) => x.key === m.key)!;
          assert.ok(Math.abs(m.score - w.score) < 1e-9 * Math.max(1, w.score), `${q}: ${m.key} scored ${m.score}, BM25 ${w.score}`);
        }
        for (let i = 1; i < got.length; i++) assert.ok(got[i - 1].score >= got[i].score, `${q}: best first`);
      }
      const rare = await s.lexicalSearch(KS, 'bm', { text: 'what does error ZX41 mean', limit: 3 });
      assert.equal(rare[0].key, 'a');
      assert.equal(rare[0].text, texts.a);
      assert.deepEqual(rare[0].metadata, {});
      assert.equal(rare[0].vector, undefined);
      const withVector = await s.lexicalSearch(KS, 'bm', { text: 'zx41', limit: 1, includeVector: true });
      assert.deepEqual([...withVector[0].vector!], [...vec(1)]);
      assert.equal((await s.lexicalSearch(KS, 'bm', { text: 'pump', limit: 2 })).length, 2);
      assert.deepEqual(await s.lexicalSearch(KS, 'bm', { text: 'absent words only', limit: 10 }), []);
      const other = await s.lexicalSearch(KS, 'bm_other', { text: 'pump', limit: 10 });
      assert.deepEqual(keys(other), ['x', 'y']);
      await rejectsWithCode(s.lexicalSearch(KS, 'missing', { text: 'pump', limit: 10 }), 'table_not_found');
      await rejectsWithCode(s.lexicalSearch('lex_missing', 'bm', { text: 'pump', limit: 10 }), 'keyspace_not_found', 'table_not_found');
    });

    it('applies the filter before ranking', async () => {
      await s.createTable({ keyspace: KS, name: 'filt', dimension: D, metric: 'cosine', model: null });
      await s.upsertVectors(KS, 'filt', [
        row('best', 'gasket gasket gasket', { lang: 'en' }),
        row('mid', 'gasket seal', { lang: 'de' }),
        row('low', 'gasket seal ring and more words here', { lang: 'de', year: 2020 }),
      ]);
      assert.deepEqual(keys(await s.lexicalSearch(KS, 'filt', { text: 'gasket', limit: 1 })), ['best']);
      assert.deepEqual(keys(await s.lexicalSearch(KS, 'filt', { text: 'gasket', limit: 1, filter: { lang: 'de' } })), ['mid']);
      assert.deepEqual(keys(await s.lexicalSearch(KS, 'filt', { text: 'gasket', limit: 5, filter: { year: { $gte: 2000 } } })), ['low']);
      assert.deepEqual(await s.lexicalSearch(KS, 'filt', { text: 'gasket', limit: 5, filter: { lang: 'fr' } }), []);
    });

    it('stems with porter, not with unicode61; trigram finds substrings; non-Latin words match', async () => {
      for (const tokenizer of ['porter', 'unicode61', 'trigram'] as const) {
        await s.createTable({ keyspace: KS, name: `st_${tokenizer}`, dimension: D, metric: 'cosine', model: null, lexical: { tokenizer } });
        await s.upsertVectors(KS, `st_${tokenizer}`, [
          row('run', 'the engines were running hot'),
          row('ru', 'Привет мир, как дела'),
          row('ja', '東京大学の研究室'),
          row('fr', 'un résumé détaillé'),
        ]);
      }
      assert.deepEqual(keys(await s.lexicalSearch(KS, 'st_porter', { text: 'runs', limit: 5 })), ['run']);
      assert.deepEqual(await s.lexicalSearch(KS, 'st_unicode61', { text: 'runs', limit: 5 }), []);
      assert.deepEqual(keys(await s.lexicalSearch(KS, 'st_unicode61', { text: 'RUNNING', limit: 5 })), ['run']);
      assert.deepEqual(keys(await s.lexicalSearch(KS, 'st_trigram', { text: 'ngine', limit: 5 })), ['run']);
      assert.deepEqual(keys(await s.lexicalSearch(KS, 'st_trigram', { text: '東京大', limit: 5 })), ['ja']);
      for (const t of ['porter', 'unicode61', 'trigram']) {
        assert.deepEqual(keys(await s.lexicalSearch(KS, `st_${t}`, { text: 'привет', limit: 5 })), ['ru'], t);
        assert.deepEqual(keys(await s.lexicalSearch(KS, `st_${t}`, { text: 'Résumé', limit: 5 })), ['fr'], t);
      }
      assert.deepEqual(keys(await s.lexicalSearch(KS, 'st_unicode61', { text: 'resume', limit: 5 })), ['fr'], 'unicode61 removes diacritics');
    });

    it('searches syntax characters and operator words literally, never as query syntax', async () => {
      await s.createTable({ keyspace: KS, name: 'syn', dimension: D, metric: 'cosine', model: null });
      await s.upsertVectors(KS, 'syn', [
        row('near', 'stations near the coast'),
        row('and', 'salt and pepper'),
        row('col', 'text colon value'),
        row('plain', 'an ordinary sentence'),
      ]);
      const q = (text: string) => s.lexicalSearch(KS, 'syn', { text, limit: 10 });
      assert.deepEqual(new Set(keys(await q('NEAR(coast pepper)'))), new Set(['near', 'and']));
      assert.deepEqual(keys(await q('AND')), ['and']);
      assert.deepEqual(keys(await q('near')), ['near']);
      assert.deepEqual(new Set(keys(await q('salt OR coast'))), new Set(['and', 'near']));
      assert.deepEqual(keys(await q('NOT pepper')), ['and']);
      assert.deepEqual(keys(await q('text:colon')), ['col']);
      assert.deepEqual(keys(await q('^ordinary*')), ['plain']);
      assert.deepEqual(keys(await q('"coast')), ['near']);
      for (const empty of ['"', '*', '^', ':', '()', '"" * ^ : - + ( ) { } [ ] ,', '   ', '']) {
        assert.deepEqual(await q(empty), [], JSON.stringify(empty));
      }
      const long = ('pepper ' + 'lorem ipsum dolor sit amet "*^: NEAR( '.repeat(8)).repeat(30).slice(0, 8192);
      assert.equal(long.length, 8192);
      assert.deepEqual(keys(await q(long)), ['and', 'near']);
      assert.deepEqual(keys(await q('the')), ['near'], 'no stop words: a common word is a word');
      const distinct = Array.from({ length: 2000 }, (_, i) => `w${i}`).join(' ');
      assert.ok(Array.isArray(await q(distinct)));
    });

    it('keeps the index exact through overwrites, deletes, delete-by-filter and file replacement', async () => {
      await s.createTable({ keyspace: KS, name: 'upk', dimension: D, metric: 'cosine', model: null });
      await s.upsertVectors(KS, 'upk', [row('k1', 'alpha bravo', { g: 1 }), row('k2', 'alpha charlie', { g: 2 }), row('k3', 'delta', { g: 2 })]);
      const q = (text: string) => s.lexicalSearch(KS, 'upk', { text, limit: 10 }).then(keys);
      assert.deepEqual((await q('alpha')).sort(), ['k1', 'k2']);
      await s.upsertVectors(KS, 'upk', [row('k1', 'echo', { g: 1 })]);
      assert.deepEqual(await q('alpha'), ['k2']);
      assert.deepEqual(await q('echo'), ['k1']);
      await s.upsertVectors(KS, 'upk', [row('k1', null, { g: 1 })]);
      assert.deepEqual(await q('echo'), []);
      assert.equal(await s.deleteVectors(KS, 'upk', ['k2']), 1);
      assert.deepEqual(await q('alpha charlie'), []);
      assert.equal(await s.deleteByFilter(KS, 'upk', { g: 2 }), 1);
      assert.deepEqual(await q('delta'), []);

      const file = (chunks: number): FileRecord => ({ keyspace: KS, table: 'upk', name: 'f.txt', size: 2, sha256: 'x'.repeat(64), type: 'txt', chunks, createdAt: new Date().toISOString() });
      const record: MetadataRecord = { keyspace: KS, table: 'upk', source_file: 'f.txt', raw_value: '/v1/files/lex/upk/f.txt', source_type: 'txt', processing_details: '' };
      const chunk = (i: number, text: string): VectorRow => row(`f.txt#${i}`, text, { source_file: 'f.txt', chunk_index: i }, i);
      await s.replaceFile(file(2), Buffer.from('v1'), [chunk(0, 'oldword first'), chunk(1, 'oldword second')], record);
      assert.deepEqual((await q('oldword')).sort(), ['f.txt#0', 'f.txt#1']);
      await s.replaceFile(file(1), Buffer.from('v2'), [chunk(0, 'newword only')], record);
      assert.deepEqual(await q('oldword'), []);
      assert.deepEqual(await q('newword'), ['f.txt#0']);
      assert.equal(await s.deleteFile(KS, 'upk', 'f.txt'), true);
      assert.deepEqual(await q('newword'), []);
    });
  });
}
