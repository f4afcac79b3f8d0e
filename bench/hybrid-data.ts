/**
 * The rows and queries of bench/hybrid.bench.ts (and its profile): texts of 20-60 words drawn
 * from a 50,000-word made-up vocabulary with Zipf frequencies, deterministic by row number, and a
 * fast load that writes them through the storage API in process (no HTTP, no JSON) for tables too
 * large to ingest through the server in a bench's time.
 */
import { performance } from 'node:perf_hooks';
import { loadConfig } from '../src/config/config.ts';
import { openStorage } from '../src/storage/factory.ts';
import { makeVectors } from './workload.ts';

/** The admin key, keyspace and table of the data directory hybrid.bench loads (hybrid-neighbour.bench searches it). */
export const BENCH_KEY = 'bench-admin-key-0123456789abcdef';
export const BENCH_KEYSPACE = 'default_keyspace';
export const BENCH_TABLE = 'hybrid';

export const VOCAB_SIZE = 50_000;
const SYL = 'ka lo mi ne ra tu ve so pa li an er on in st ch th qu ar el or us is ex'.split(' ');
export const vocab: string[] = [];
{
  let s = 7;
  const seen = new Set<string>();
  // Lengths 2-5 syllables by draw, not by word count: the 576 two-syllable words run out.
  for (let draw = 0; vocab.length < VOCAB_SIZE; draw++) {
    let w = '';
    const len = 2 + (draw % 4);
    for (let i = 0; i < len; i++) (s = (Math.imul(s, 1103515245) + 12345) >>> 0), (w += SYL[(s >>> 8) % SYL.length]);
    if (!seen.has(w)) seen.add(w), vocab.push(w);
  }
}
// Zipf(1) over the vocabulary: word r is drawn with probability ∝ 1/r.
const cumulative = new Float64Array(VOCAB_SIZE);
{
  let acc = 0;
  for (let r = 0; r < VOCAB_SIZE; r++) cumulative[r] = acc += 1 / (r + 1);
}
function zipfWord(u: number): string {
  const target = u * cumulative[VOCAB_SIZE - 1];
  let lo = 0, hi = VOCAB_SIZE - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (cumulative[mid] < target) lo = mid + 1;
    else hi = mid;
  }
  return vocab[lo];
}
/** Row i's words (deterministic): `count` Zipf draws seeded by i. */
export function words(i: number, count: number): string {
  let s = (i * 2246822519 + 3266489917) >>> 0 || 1;
  const out: string[] = [];
  for (let k = 0; k < count; k++) {
    s ^= s << 13; s ^= s >>> 17; s ^= s << 5; s >>>= 0;
    out.push(zipfWord(s / 2 ** 32));
  }
  return out.join(' ');
}
export const rowText = (i: number): string => words(i, 20 + (i % 41));

/** `count` queries over `n` rows: vectors of the rows' clusters, and 2-5 words each, drawn past every row's numbers. */
export function queriesOver(n: number, count: number, dim: number, centres: Float32Array[]): { vectors: Float32Array[]; texts: string[] } {
  const vectors = makeVectors(n + 1_000_000, count, dim, centres);
  return { vectors, texts: vectors.map((_, i) => words(n + 5_000_000 + i, 2 + (i % 4))) };
}

/**
 * Writes rows 0..n-1 (the same keys, vectors, texts and metadata the HTTP ingest sends) into the
 * data directory through the storage API, in process, into a table that must exist; closes the
 * store, so a server started on the directory afterwards finds them. Returns rows/s (of the rows
 * written now). `resume`: rows are written in key order, so a load cut short goes on from the
 * table's row count.
 */
export async function loadInProcess(dataDir: string, keyspace: string, table: string, n: number, dim: number, centres: Float32Array[], resume: boolean, progress?: (done: number) => void): Promise<number> {
  const storage = await openStorage(loadConfig({ VSS_DATA_DIR: dataDir }));
  const t0 = performance.now();
  const from = resume ? await storage.countVectors(keyspace, table) : 0;
  try {
    const BATCH = 5000;
    for (let start = from - (from % BATCH); start < n; start += BATCH) {
      const count = Math.min(BATCH, n - start);
      const rows = makeVectors(start, count, dim, centres).map((vector, k) => ({ key: `v${start + k}`, vector, text: rowText(start + k), metadata: { i: start + k } }));
      await storage.upsertVectors(keyspace, table, rows);
      progress?.(start + count);
      // Lets the index upkeep take its turns between batches, as it does between requests.
      await new Promise((r) => setImmediate(r));
    }
    return (n - from) / ((performance.now() - t0) / 1000);
  } finally {
    await storage.close();
  }
}
