import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { PROJECT_ROOT } from '../config/config.ts';
import { loadModel, type EmbeddingModel } from '../embedding/model.ts';
import { ServiceError } from '../errors.ts';
import { assertLinearOnWorstCases } from '../platform/text-worst-cases.ts';
import { chunkText, chunkTextAsync, DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE, MAX_CHUNK_SIZE, validateChunkOptions, type Chunk } from './chunk.ts';

const WORDS =
  'harbour ship captain storm northern wind sail anchor crew cargo port island lighthouse keeper fog signal tide rope deck mast compass chart voyage weather'.split(
    ' ',
  );

/** Paragraphs of numbered sentences ("... S17."), 6-30 words each; returns the text and its sentences. */
function prose(paragraphs: number, seed = 1): { text: string; sentences: string[] } {
  let s = seed;
  const r = () => (s = (s * 1103515245 + 12345) >>> 0) >>> 8;
  const sentences: string[] = [];
  const paras: string[] = [];
  for (let p = 0; p < paragraphs; p++) {
    const out: string[] = [];
    for (let k = 0, n = 2 + (r() % 6); k < n; k++) {
      const w = Array.from({ length: 6 + (r() % 25) }, () => WORDS[r() % WORDS.length]);
      w[0] = w[0][0].toUpperCase() + w[0].slice(1);
      const sentence = `${w.join(' ')} S${sentences.length}${r() % 3 === 0 ? '!' : '.'}`;
      sentences.push(sentence);
      out.push(sentence);
    }
    paras.push(out.join(r() % 4 === 0 ? '\n' : ' '));
  }
  return { text: paras.join('\n\n'), sentences };
}

describe('chunkText with the real all-MiniLM-L6-v2 tokenizer', () => {
  let model: EmbeddingModel;
  const tokens = (s: string) => model.tokenize(s).ids.length;

  before(async () => {
    model = await loadModel(path.join(PROJECT_ROOT, 'models'), 'all-MiniLM-L6-v2');
  });
  after(async () => {
    await model?.dispose();
  });

  const checkChunks = (text: string, chunks: Chunk[], chunkSize: number) => {
    assert.ok(chunks.length > 0);
    chunks.forEach((c, i) => {
      assert.equal(c.index, i);
      assert.equal(c.text, text.slice(c.start, c.end), 'a chunk is a slice of the original text');
      assert.equal(c.tokens, tokens(c.text));
      assert.ok(c.tokens <= chunkSize, `chunk ${i} has ${c.tokens} > ${chunkSize} tokens`);
      assert.ok(model.countTokens(c.text) <= model.maxTokens, 'fits the window with [CLS] and [SEP] (no truncation)');
      if (i > 0) assert.ok(c.start > chunks[i - 1].start && c.end > chunks[i - 1].end, 'chunks advance');
    });
  };

  test('defaults fit the model window with the special tokens', () => {
    assert.equal(model.maxTokens, 256);
    assert.ok(DEFAULT_CHUNK_SIZE + 2 <= model.maxTokens);
    assert.equal(MAX_CHUNK_SIZE + 2, model.maxTokens);
    assert.ok(DEFAULT_CHUNK_OVERLAP <= DEFAULT_CHUNK_SIZE / 2);
  });

  test('long multi-paragraph text: chunks within size, every sentence whole in some chunk, overlap between neighbours', () => {
    const { text, sentences } = prose(120);
    for (const [chunkSize, overlap] of [
      [DEFAULT_CHUNK_SIZE, DEFAULT_CHUNK_OVERLAP],
      [64, 32],
      [254, 0],
    ]) {
      const chunks = chunkText(text, model, { chunkSize, overlap });
      checkChunks(text, chunks, chunkSize);
      assert.ok(chunks.length > 3);
      for (const s of sentences) assert.ok(chunks.some((c) => c.text.includes(s)), `sentence not covered: ${s}`);
      // Chunks end on sentence boundaries and start on one, or (when the previous chunk's last
      // sentence is longer than the overlap) on a word boundary inside that sentence.
      chunks.forEach((c, i) => {
        assert.match(c.text, /S\d+[.!]$/);
        if (!/^[A-Z]/.test(c.text)) {
          assert.ok(i > 0 && overlap > 0 && c.start < chunks[i - 1].end && /\s/.test(text[c.start - 1]), `chunk ${i} starts mid-word`);
          const before = text.slice(0, c.start);
          assert.ok(!/[.!]\s*$/.test(before), 'a partial overlap starts inside a sentence');
        }
      });
      const partial = chunks.filter((c) => !/^[A-Z]/.test(c.text)).length;
      assert.ok(partial < chunks.length / 2, `${partial} of ${chunks.length} chunks start mid-sentence`);
      for (let i = 1; i < chunks.length; i++) {
        const shared = chunks[i - 1].end - chunks[i].start;
        if (overlap === 0) assert.ok(shared < 0, 'no overlap asked, none given');
        else {
          assert.ok(shared > 0, `no overlap between chunks ${i - 1} and ${i}`);
          assert.ok(tokens(text.slice(chunks[i].start, chunks[i - 1].end)) <= overlap);
        }
      }
      // Most chunks are well filled.
      const mean = chunks.reduce((a, c) => a + c.tokens, 0) / chunks.length;
      assert.ok(mean > chunkSize * 0.6, `mean fill ${mean}`);
    }
  });

  test('prefers ending a chunk at a paragraph boundary', () => {
    const { text } = prose(60, 7);
    const chunks = chunkText(text, model, { chunkSize: 200, overlap: 40 });
    const atParagraph = chunks.slice(0, -1).filter((c) => text.startsWith('\n\n', c.end)).length;
    assert.ok(atParagraph / (chunks.length - 1) > 0.5, `${atParagraph} of ${chunks.length - 1} chunks end at a paragraph`);
  });

  test('one huge sentence without punctuation is split by tokens, with overlap', () => {
    const words = Array.from({ length: 3000 }, (_, i) => `${WORDS[i % WORDS.length]}${i % 7 === 0 ? i : ''}`);
    const text = words.join(' ');
    const chunks = chunkText(text, model, { chunkSize: 100, overlap: 20 });
    checkChunks(text, chunks, 100);
    assert.ok(chunks.length >= Math.ceil(tokens(text) / 100));
    assert.ok(chunks.filter((c) => c.tokens >= 90).length >= chunks.length - 1, 'windows are full');
    for (let i = 1; i < chunks.length; i++) assert.ok(chunks[i].start < chunks[i - 1].end, 'overlap');
    assert.equal(chunks[0].start, 0);
    assert.equal(chunks.at(-1)!.end, text.length);
    // Cut at word boundaries: every chunk is whole words.
    for (const c of chunks) assert.ok(/^\S/.test(c.text) && (c.end === text.length || text[c.end] === ' '));
  });

  test('an overlong word (no spaces) is split by characters', () => {
    const text = 'a1.b2;'.repeat(2000);
    const chunks = chunkText(text, model, { chunkSize: 50, overlap: 10 });
    checkChunks(text, chunks, 50);
    assert.equal(chunks.at(-1)!.end, text.length);
    for (let i = 1; i < chunks.length; i++) assert.ok(chunks[i].start <= chunks[i - 1].end, 'no gap');
  });

  test('runs without spaces stay linear and bounded in characters', () => {
    for (const text of ['.'.repeat(300_000), 'word—'.repeat(60_000), 'x'.repeat(300_000)]) {
      const t0 = performance.now();
      const chunks = chunkText(text, model, { chunkSize: 200, overlap: 40 });
      const ms = performance.now() - t0;
      assert.ok(ms < 5000, `${text.slice(0, 6)}…: ${ms.toFixed(0)} ms`);
      assert.equal(chunks.at(-1)!.end, text.length);
      for (const c of chunks) assert.ok(c.tokens <= 200 && c.text.length <= 200 * 32);
    }
  });

  test('hard lines: CSV-like rows stay whole', () => {
    const rows = Array.from(
      { length: 200 },
      (_, i) => `name: Person ${i}, city: ${WORDS[i % WORDS.length]} town, note: Arrived by ship. Left by ${WORDS[(i * 7) % WORDS.length]}., score: ${i * 3}`,
    );
    const text = rows.join('\n');
    const chunks = chunkText(text, model, { chunkSize: 120, overlap: 40, lines: 'hard' });
    checkChunks(text, chunks, 120);
    // Whole rows (not cut at the sentence inside a row), and as a row (27 tokens) fits in the
    // overlap, each overlap is whole rows too.
    for (const c of chunks) for (const line of c.text.split('\n')) assert.ok(rows.includes(line), `cut row: ${line}`);
    for (let i = 1; i < chunks.length; i++) assert.ok(chunks[i].start < chunks[i - 1].end, 'overlap');
    for (const r of rows) assert.ok(chunks.some((c) => c.text.split('\n').includes(r)));
  });

  test('short text: one chunk, trimmed; abbreviations do not end sentences', () => {
    const chunks = chunkText('  \n\nDr. Smith met J. Doe, e.g. at noon.  \n', model, { chunkSize: 16, overlap: 0 });
    assert.deepEqual(
      chunks.map((c) => c.text),
      ['Dr. Smith met J. Doe, e.g. at noon.'],
    );
    assert.deepEqual(chunkText('   ', model, { chunkSize: 16, overlap: 0 }), []);
  });

  test('chunkTextAsync: same chunks, and the event loop keeps running', async () => {
    const { text } = prose(3000, 5);
    let ticks = 0;
    const timer = setInterval(() => ticks++, 5);
    const t0 = performance.now();
    const chunks = await chunkTextAsync(text, model, { chunkSize: 200, overlap: 40 });
    const ms = performance.now() - t0;
    clearInterval(timer);
    assert.deepEqual(chunks, chunkText(text, model, { chunkSize: 200, overlap: 40 }));
    assert.ok(ticks >= Math.floor(ms / 100), `${ticks} timer ticks in ${ms.toFixed(0)} ms`);
    await assert.rejects(chunkTextAsync('x', model, { chunkSize: 8, overlap: 0 }), ServiceError);
  });

  test('multi-megabyte text is fast (sentences tokenized once)', () => {
    const { text } = prose(6000, 3); // ~1.1 MB
    const t0 = performance.now();
    const chunks = chunkText(text, model, { chunkSize: 200, overlap: 40 });
    const ms = performance.now() - t0;
    assert.ok(chunks.length > 1000);
    assert.ok(ms < 10_000, `${ms.toFixed(0)} ms for ${(text.length / 1e6).toFixed(1)} MB`);
    assert.ok(chunks.every((c) => c.tokens <= 200));
  });
});

describe('validateChunkOptions', () => {
  const fails = (opts: { chunkSize?: unknown; overlap?: unknown }, paths: string[], max?: number) =>
    assert.throws(
      () => validateChunkOptions(opts, max),
      (e) => e instanceof ServiceError && e.code === 'validation_failed' && JSON.stringify(e.errors?.map((x) => x.path)) === JSON.stringify(paths),
    );

  test('defaults and bounds', () => {
    assert.deepEqual(validateChunkOptions({}), { chunkSize: 200, overlap: 40 });
    assert.deepEqual(validateChunkOptions({ chunkSize: 16 }), { chunkSize: 16, overlap: 8 });
    assert.deepEqual(validateChunkOptions({ chunkSize: 254, overlap: 127 }), { chunkSize: 254, overlap: 127 });
    fails({ chunkSize: 15 }, ['/body/chunk_size']);
    fails({ chunkSize: 255 }, ['/body/chunk_size']);
    fails({ chunkSize: 100.5 }, ['/body/chunk_size']);
    fails({ chunkSize: '100' }, ['/body/chunk_size']);
    fails({ chunkSize: 100, overlap: 51 }, ['/body/chunk_overlap']);
    fails({ chunkSize: 100, overlap: -1 }, ['/body/chunk_overlap']);
    fails({ chunkSize: 0, overlap: 500 }, ['/body/chunk_size', '/body/chunk_overlap']);
    fails({ chunkSize: 200 }, ['/body/chunk_size'], 126); // a model with a 128-token window
  });

  test('chunkText validates too', () => {
    assert.throws(() => chunkText('x', { tokenize: () => ({ ids: [] }) }, { chunkSize: 8, overlap: 0 }), ServiceError);
  });
});

describe('chunkText work', () => {
  // One token per four characters: the test measures the chunker's own scans, not a tokenizer
  // (the real one's speed on megabytes is checked above).
  const quarter = { tokenize: (s: string) => ({ ids: new Array<number>(Math.ceil(s.length / 4)).fill(0) }) };

  test('is linear in its input, whatever the characters', () => {
    for (const lines of ['soft', 'hard'] as const) {
      assertLinearOnWorstCases((text) => chunkText(text, quarter, { chunkSize: DEFAULT_CHUNK_SIZE, overlap: DEFAULT_CHUNK_OVERLAP, lines }));
    }
  });
});
