/**
 * Stage 2 of a search alone: re-scoring a graph walk's candidates exactly in float64 (exact.ts's
 * `rescore`, from the table's in-memory matrix) against the same work one row at a time
 * (`exactScore` per row, what rescore did before it took rows four at a time), in one run.
 *
 *   node --import tsx bench/rescore.bench.ts [--n 100000] [--dim 384] [--candidates 100] [--searches 2000]
 *
 * Rows: the clustered unit vectors of the other benches in a FileMatrix with its memory copy, as
 * the server keeps a table within VSS_VECTOR_MEMORY_MB (a file under the system's temp directory,
 * removed after), read as stage 2 reads them (residentView); each search re-scores `candidates`
 * rows drawn at random (a walk's candidates lie scattered over the table). "Cold" writes 32 MB
 * before each search (untimed), as the server's other threads evict the caches between two
 * searches. The two ways alternate search by search, over the same candidates, and must give the
 * same scores; each is timed whole (rescore: looking the rows up, scoring them, keeping the best)
 * and its scoring alone.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { compareScored, rescore, type Scored } from '../src/index/exact.ts';
import { exactScore, exactScores } from '../src/index/metric.ts';
import { TopK } from '../src/index/topk.ts';
import { FileMatrix, MemoryBudget } from '../src/index/vector-file.ts';
import { machineKind } from './machine-check.ts';
import { cacheEvictor, makeCentres, makeVectors } from './workload.ts';

const { values: args } = parseArgs({
  options: { n: { type: 'string', default: '100000' }, dim: { type: 'string', default: '384' }, candidates: { type: 'string', default: '100' }, searches: { type: 'string', default: '2000' } },
});
const N = Number(args.n);
const DIM = Number(args.dim);
const CANDIDATES = Number(args.candidates);
const SEARCHES = Number(args.searches);

/** rescore as it was: each row scored alone. */
function oneAtATime(query: Float32Array, rowIds: number[], rows: { get: (rowId: number) => Float32Array | undefined }, limit: number): Scored[] {
  const top = new TopK<Scored>(limit, compareScored('cosine'));
  const seen = new Set<number>();
  for (const rowId of rowIds) {
    if (seen.has(rowId)) continue;
    seen.add(rowId);
    const v = rows.get(rowId);
    if (v !== undefined) top.push({ rowId, score: exactScore('cosine', query, v) });
  }
  return top.sorted();
}

console.log(`machine: ${machineKind()}`);
const centres = makeCentres(64, DIM);
const dir = mkdtempSync(path.join(os.tmpdir(), 'vss-rescore-'));
const matrix = FileMatrix.create(path.join(dir, 'vectors.f32'), DIM, new MemoryBudget(2 * N * DIM * 4));
for (let start = 0; start < N; start += 10_000) {
  const vs = makeVectors(start, Math.min(10_000, N - start), DIM, centres);
  matrix.setMany(Array.from(vs, (_, i) => start + i), vs);
}
// Stage 2's reader of a table whose vectors are in memory (vectors.ts, #rescoreCandidates).
const rows = { get: (id: number): Float32Array | undefined => matrix.residentView(id) ?? undefined };
if (matrix.residentView(0) === null) throw new Error('the matrix kept no memory copy');
const queries = makeVectors(N, 64, DIM, centres);
const evict = cacheEvictor(32);
let seed = 42;
const random = (): number => ((seed = (seed * 16807) % 2147483647) / 2147483647);

const table: string[] = [];
for (const cold of [false, true]) {
  const spent = { now: 0, before: 0, scoresNow: 0, scoresBefore: 0 };
  const timed = (what: keyof typeof spent, f: () => void): void => {
    if (cold) evict();
    const t0 = performance.now();
    f();
    spent[what] += performance.now() - t0;
  };
  for (let s = 0; s < SEARCHES; s++) {
    const ids = Array.from({ length: CANDIDATES }, () => Math.floor(random() * N));
    const q = queries[s % queries.length];
    const vectors = ids.map((id) => rows.get(id)!);
    const answers: Scored[][] = [];
    const scores = [new Float64Array(ids.length), new Float64Array(ids.length)];
    // Each way first in turn, so neither always finds the other's rows in the caches.
    for (const way of s % 2 === 0 ? (['now', 'before'] as const) : (['before', 'now'] as const)) {
      timed(way, () => answers.push(way === 'now' ? rescore(q, ids, rows, 'cosine', CANDIDATES) : oneAtATime(q, ids, rows, CANDIDATES)));
      // The scoring alone, over the rows' vectors looked up beforehand.
      if (way === 'now') timed('scoresNow', () => exactScores('cosine', q, vectors, scores[0]));
      else timed('scoresBefore', () => vectors.forEach((v, i) => (scores[1][i] = exactScore('cosine', q, v))));
    }
    if (JSON.stringify(answers[0]) !== JSON.stringify(answers[1]) || scores[0].some((x, i) => !Object.is(x, scores[1][i]))) throw new Error(`search ${s}: the two ways answered differently`);
  }
  const per = (ms: number) => `${((ms / SEARCHES) * 1000).toFixed(1)} µs`;
  const how = cold ? 'cold (32 MB written before each)' : 'warm';
  table.push(`| rescore, ${how} | ${per(spent.now)} | ${per(spent.before)} | ${(spent.before / spent.now).toFixed(2)}× |`);
  table.push(`| the scoring alone, ${how} | ${per(spent.scoresNow)} | ${per(spent.scoresBefore)} | ${(spent.scoresBefore / spent.scoresNow).toFixed(2)}× |`);
}
console.log(`\n| ${CANDIDATES} candidates of ${N.toLocaleString('en')} × ${DIM}, ${SEARCHES} searches | four rows at a time (exactScores) | one row at a time (exactScore) | speed-up |\n|---|---|---|---|\n${table.join('\n')}`);
matrix.close();
rmSync(dir, { recursive: true, force: true });
