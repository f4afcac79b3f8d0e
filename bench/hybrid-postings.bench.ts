/**
 * The posting lists' BM25 top k alone (storage/lexical/postings.ts, as the postings thread calls
 * it), in process, against an anchor's, over hybrid.bench's rows and queries: CPU per search, and
 * the lists' memory (heap and array buffers).
 *
 *   node --expose-gc --import tsx bench/hybrid-postings.bench.ts --anchor DIR [--n 100000] [--queries 400] [--limit 100] [--cold MB]
 *
 * Both indexes take the same rows (tokenized once); the searches alternate between them, and each
 * query's least time over several runs is its cost (a search preempted midway on a shared machine
 * is not), reported as the mean over the queries, with this checkout's over the anchor's. The answers are
 * compared too: the same rows and scores, or the bench fails.
 * --cold MB writes a buffer of that size before each search (untimed): in the server the other
 * threads' work evicts the lists and scratch from the caches between two lexical searches, and a
 * design that wins with warm caches may lose there.
 */
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { BM25_K1 } from '../src/storage/lexical/bm25.ts';
import { PostingIndex } from '../src/storage/lexical/postings.ts';
import { seedPhrases, weigh } from '../src/storage/lexical/prune.ts';
import { tokenize } from '../src/storage/lexical/tokenize.ts';
import { rowText, words } from './hybrid-data.ts';
import { cacheEvictor } from './workload.ts';

const { values: args } = parseArgs({
  options: { anchor: { type: 'string' }, n: { type: 'string', default: '100000' }, queries: { type: 'string', default: '400' }, limit: { type: 'string', default: '100' }, cold: { type: 'string' } },
});
const N = Number(args.n);
const Q = Number(args.queries);
const LIMIT = Number(args.limit);

type Index = Pick<PostingIndex, 'set' | 'documentFrequency'> & { topK(...a: unknown[]): { rowId: number; score: number }[]; freeze?(): void };
const gc = (globalThis as { gc?: () => void }).gc;
const heap = (): number => {
  gc?.();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
};

/** The index built from the rows as the postings thread builds it (frozen, where the code has that), and the memory it holds (with --expose-gc). */
function built(make: () => Index, rows: string[][]): { index: Index; bytes: number } {
  const before = heap();
  const index = make();
  for (let i = 0; i < rows.length; i++) index.set(i + 1, rows[i]);
  index.freeze?.();
  return { index, bytes: heap() - before };
}

const rows = Array.from({ length: N }, (_, i) => tokenize('porter', rowText(i)));
const tokens = rows.reduce((s, r) => s + r.length, 0);
const stats = { rows: N, tokens };
const queries = Array.from({ length: Q }, (_, i) => tokenize('porter', words(N + 5_000_000 + i, 2 + (i % 4))));

const sides: { name: string; index: Index; bytes: number }[] = [{ name: 'this checkout', ...built(() => new PostingIndex() as unknown as Index, rows) }];
if (args.anchor) {
  const mod = (await import(path.resolve(args.anchor, 'src/storage/lexical/postings.ts'))) as { PostingIndex: new () => Index };
  sides.push({ name: `anchor ${args.anchor}`, ...built(() => new mod.PostingIndex(), rows) });
}

function search(side: (typeof sides)[number], terms: string[]) {
  const phrases = weigh(terms.map((t) => ({ phrase: [t], df: side.index.documentFrequency(t) })), stats.rows);
  const seeds = seedPhrases(phrases, stats.rows);
  if (seeds.length === 0) return [];
  const idfs = phrases.map((p) => p.idf);
  // As the postings thread asks: the terms bringing no rows add at most idf (k1 + 1) each.
  const slack = phrases.reduce((s, p, i) => (p.df > 0 && !seeds.includes(i) ? s + p.idf * (BM25_K1 + 1) : s), 0);
  const found = side.index.topK(terms, idfs, seeds, stats, LIMIT, slack);
  return found.sort((a, b) => b.score - a.score || a.rowId - b.rowId).slice(0, LIMIT);
}

// The same answers (warms both up too).
let compared = 0;
for (const q of queries) {
  const answers = sides.map((s) => search(s, q));
  for (const a of answers.slice(1)) {
    if (a.length !== answers[0].length) throw new Error(`query ${q.join(' ')}: ${answers[0].length} rows against ${a.length}`);
    for (let k = 0; k < a.length; k++) {
      if (Math.abs(a[k].score - answers[0][k].score) > 1e-9 * a[k].score) throw new Error(`query ${q.join(' ')} #${k}: ${answers[0][k].score} against ${a[k].score}`);
      compared++;
    }
  }
}
// Each query's least time over REPS runs, the sides alternating run by run: on a shared machine a
// search preempted midway is not its cost. The mean over the queries is reported.
const REPS = 7;
const evict = args.cold === undefined ? null : cacheEvictor(Number(args.cold));
const least = sides.map(() => new Float64Array(Q).fill(Infinity));
for (let rep = 0; rep < REPS; rep++) {
  queries.forEach((q, i) => {
    sides.forEach((s, k) => {
      evict?.();
      const t0 = performance.now();
      search(s, q);
      least[k][i] = Math.min(least[k][i], performance.now() - t0);
    });
  });
}
const mean = (xs: Float64Array): number => xs.reduce((a, b) => a + b, 0) / xs.length;
const p50 = (xs: Float64Array): number => [...xs].sort((a, b) => a - b)[xs.length >> 1];
console.log(`${N.toLocaleString('en')} rows, ${Q} queries of 2-5 words, top ${LIMIT}; ${compared} ranked rows compared, equal${evict === null ? '' : `; ${args.cold} MB written before each search`}`);
sides.forEach((s, k) => {
  console.log(`${s.name}: ${mean(least[k]).toFixed(3)} ms per search (mean of each query's least of ${REPS}; p50 ${p50(least[k]).toFixed(3)}); memory ${(s.bytes / 2 ** 20).toFixed(0)} MiB${gc ? '' : ' (run with --expose-gc)'}`);
});
if (sides.length === 2) console.log(`this checkout / anchor: ${(mean(least[0]) / mean(least[1])).toFixed(2)} time, ${(sides[0].bytes / sides[1].bytes).toFixed(2)} memory`);
