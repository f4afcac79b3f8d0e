/**
 * Two-stage search over a Cassandra table.
 *
 * Stage 1 picks candidates one of two ways:
 * - exact scan: every (key, vector) row is read page by page and scored. Used when the table has
 *   at most `exactScanMaxRows` rows (default 10,000; found by a key-only scan that stops there:
 *   ~100-250 ms at 10,001 rows here, as much as the ANN query itself, so a table found larger is
 *   remembered as such for LARGE_VERDICT_MS, or until this process deletes rows from it),
 *   when the query's metric differs from the table's similarity function, and for a query the
 *   index cannot rank (zero or near-zero under cosine, zero under dot product, huge components). This keeps the contract's
 *   promise that `candidates >= rowCount` gives the exact answer for every table up to that size.
 * - ANN: `SELECT key, vector FROM ks.t ORDER BY vector ANN OF ? LIMIT n` with
 *   n = min(1000, max(limit * 5, min(candidates, 1000))): Cassandra allows LIMIT <= 1000 and no
 *   paging, and over-fetching ~5x lifts recall@10 from ~0.93 to ~1.0. Runs at consistency ONE.
 *   For tables above `exactScanMaxRows` the answer is approximate even when candidates >= rows;
 *   so is it for up to LARGE_VERDICT_MS after another process deletes a large table below it.
 * Cost of the exact scan, measured on 2 shared cores: ~7,000-9,000 rows/s of 384 dimensions
 * (half of it the driver decoding vectors), i.e. ~0.45 s for 3,000 rows, ~1.3 s for 10,000.
 * Stage 2 re-scores the candidates exactly (float64 over the stored float32 vectors), sorts best
 * first (ties by key), cuts to `limit`, then reads metadata and text of the final keys only.
 *
 * Filters: metadata is JSON in a text column, which SAI cannot serve, so rows are post-filtered
 * here with index/filter.ts. Small tables: exact scan with the filter, exact answer. Large tables:
 * the ANN stage fetches the most it may (1,000 candidates) and filters those, so a selective
 * filter can return fewer than `limit` matches.
 */
import { compareScores, exactScore } from '../../index/metric.ts';
import { compareCodePoints } from '../../index/filter.ts';
import { TopK } from '../../index/topk.ts';
import type { Metadata, SearchQuery, StoredMatch, TableInfo } from '../api.ts';
import { requireQueryDimension } from '../vector-dimension.ts';
import { chunks, fromCqlVector, fromMetadataText, indexable, toCqlVector } from './codec.ts';
import { countRows, requireTable } from './catalog.ts';
import { type Ctx, dataTable } from './context.ts';
import { forEachLimit } from './session.ts';
import { compile } from './vectors.ts';

/** Cassandra's cap on LIMIT with ORDER BY ... ANN OF. */
export const ANN_MAX_LIMIT = 1000;
const OVERFETCH = 5;

interface Candidate {
  key: string;
  score: number;
  vector: Float32Array;
}

export type SearchPlan = 'exact' | 'ann';

export async function search(ctx: Ctx, keyspace: string, table: string, q: SearchQuery): Promise<StoredMatch[]> {
  return (await searchWithPlan(ctx, keyspace, table, q)).matches;
}

/** As search, also telling which stage 1 ran (for tests and diagnostics). */
export async function searchWithPlan(ctx: Ctx, keyspace: string, table: string, q: SearchQuery): Promise<{ plan: SearchPlan; matches: StoredMatch[] }> {
  const t = await requireTable(ctx, keyspace, table);
  requireQueryDimension(q.vector, t.dimension);
  const limit = Math.min(Math.floor(q.limit), Math.floor(q.candidates));
  if (!(limit > 0)) return { plan: 'exact', matches: [] };
  const match = q.filter && Object.keys(q.filter).length > 0 ? compile(q.filter) : null;

  // A query the index cannot rank (zero or near-zero under cosine, all zeros under dot product,
  // overflowing components) is answered by the exact scan instead of a server error.
  const zeroDot = q.metric === 'dot_product' && q.vector.every((x) => x === 0);
  const mustScan = q.metric !== t.metric || zeroDot || !indexable(q.vector, q.metric);
  const small = mustScan || (await isSmall(ctx, keyspace, table));

  const plan: SearchPlan = small ? 'exact' : 'ann';
  const best = small ? await exactScan(ctx, t, q, limit, match) : await ann(ctx, t, q, limit, match);
  return { plan, matches: await finish(ctx, t, best, q.includeVector === true) };
}

/** How long a table counted above exactScanMaxRows is taken to still be so without counting again. */
export const LARGE_VERDICT_MS = 30_000;

/** At most exactScanMaxRows rows? Counts keys (stopping past the threshold) unless the table was recently found larger. */
async function isSmall(ctx: Ctx, keyspace: string, table: string): Promise<boolean> {
  const id = `${keyspace}.${table}`;
  const until = ctx.largeTables.get(id);
  if (until !== undefined && until > Date.now()) return false;
  const small = (await countRows(ctx, keyspace, table, ctx.exactScanMaxRows + 1)) <= ctx.exactScanMaxRows;
  if (small) ctx.largeTables.delete(id);
  else ctx.largeTables.set(id, Date.now() + LARGE_VERDICT_MS);
  return small;
}

const byScoreThenKey = (metric: SearchQuery['metric']) => {
  const cmp = compareScores(metric);
  return (a: Candidate, b: Candidate): number => cmp(a, b) || compareCodePoints(a.key, b.key);
};

async function exactScan(ctx: Ctx, t: TableInfo, q: SearchQuery, limit: number, match: ((m: Metadata) => boolean) | null): Promise<Candidate[]> {
  const top = new TopK<Candidate>(limit, byScoreThenKey(q.metric));
  const cols = match ? '"key", "vector", "metadata"' : '"key", "vector"';
  for await (const page of ctx.session.pages(`SELECT ${cols} FROM ${dataTable(ctx, t.keyspace, t.name)}`, [], {
    fetchSize: 2000,
    ctx: { keyspace: t.keyspace, table: t.name, action: 'searching (exact scan)' },
  })) {
    for (const r of page) {
      if (r.vector === null || r.vector === undefined) continue;
      if (match && !match(fromMetadataText(r.metadata))) continue;
      const vector = fromCqlVector(r.vector);
      top.push({ key: r.key as string, score: exactScore(q.metric, q.vector, vector), vector });
    }
  }
  return top.sorted();
}

async function ann(ctx: Ctx, t: TableInfo, q: SearchQuery, limit: number, match: ((m: Metadata) => boolean) | null): Promise<Candidate[]> {
  const n = match ? ANN_MAX_LIMIT : Math.min(ANN_MAX_LIMIT, Math.max(limit * OVERFETCH, Math.min(q.candidates, ANN_MAX_LIMIT)));
  const cols = match ? '"key", "vector", "metadata"' : '"key", "vector"';
  const rs = await ctx.session.execute(
    'ann',
    `SELECT ${cols} FROM ${dataTable(ctx, t.keyspace, t.name)} ORDER BY "vector" ANN OF ? LIMIT ?`,
    [toCqlVector(q.vector), n],
    { ctx: { keyspace: t.keyspace, table: t.name, action: 'searching (ANN)' }, fetchSize: n },
  );
  const top = new TopK<Candidate>(limit, byScoreThenKey(q.metric));
  for (const r of rs.rows) {
    if (match && !match(fromMetadataText(r.metadata))) continue;
    const vector = fromCqlVector(r.vector);
    top.push({ key: r.key as string, score: exactScore(q.metric, q.vector, vector), vector });
  }
  return top.sorted();
}

/** Metadata and text of the final keys; a key deleted meanwhile drops out. */
async function finish(ctx: Ctx, t: TableInfo, best: Candidate[], includeVector: boolean): Promise<StoredMatch[]> {
  if (best.length === 0) return [];
  const rows = new Map<string, { metadata: Metadata; text: string | null }>();
  const cql = `SELECT "key", "metadata", "text" FROM ${dataTable(ctx, t.keyspace, t.name)} WHERE "key" IN ?`;
  await forEachLimit(chunks(best.map((c) => c.key), 100), 4, async (keys) => {
    const rs = await ctx.session.execute('read', cql, [keys], { ctx: { keyspace: t.keyspace, table: t.name, action: 'reading matches' } });
    for (const r of rs.rows) rows.set(r.key as string, { metadata: fromMetadataText(r.metadata), text: (r.text as string | null) ?? null });
  });
  const out: StoredMatch[] = [];
  for (const c of best) {
    const row = rows.get(c.key);
    if (!row) continue;
    out.push(includeVector ? { key: c.key, score: c.score, metadata: row.metadata, text: row.text, vector: c.vector } : { key: c.key, score: c.score, metadata: row.metadata, text: row.text });
  }
  return out;
}
