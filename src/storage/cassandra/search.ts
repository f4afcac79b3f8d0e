/**
 * Two-stage search over a Cassandra table, scored by Cassandra itself.
 *
 * Stage 1 asks the engine for keys and scores:
 *   SELECT "key", similarity_<metric>("vector", ?) FROM ks.t [WHERE "terms" CONTAINS ? AND ...]
 *   ORDER BY "vector" ANN OF ? LIMIT n
 * The score comes back on Cassandra's 0..1 similarity scale, converted to the metric's own
 * (fromEngine), and picks the best `limit` with no vector over the wire. Cosine: that score is the
 * answer's (bounded, so the engine's float32 arithmetic is within ~2e-7 of the float64 score) and
 * stage 1 reads the rows' metadata and text with it: one query. Dot product and Euclidean (unbounded:
 * 5e-5 off on a dot product of 1,000), and any search with `includeVector`: stage 2 reads metadata,
 * text and vector of the `limit` best rows only and re-scores them exactly (float64 over the stored
 * float32 vectors, as the contract's scores are), best first, ties by key.
 *
 * n and exactness: stage 1 asks for n = min(candidates, max(limit, ef)): the engine's own query
 * for `limit` rows unless the caller widens it with `ef` (see annWidth). Beside that query it reads the
 * table's row count (counts.ts recentRowCount: the counter's partition, or on a table whose counter
 * failed a key scan stopping past `candidates`; remembered for a second), which says whether
 * `candidates` covers the table; when it does and the narrow query came back full, the answer must be exact and stage 1
 * asks again: up to 1,000 rows (Cassandra's cap on an ANN LIMIT) by an ANN LIMIT covering the
 * table (the index search is then exhaustive); from there to `exactScanMaxRows` rows by a scan
 * scored by the engine (key and score per row, no vectors: O(rows) on the server); above that the
 * ANN answer (LIMIT 1,000) is approximate.
 *
 * Filters run in the engine (filter-terms.ts): one ANN query per conjunction (at most 16, concurrently), merged.
 * A filter the index cannot serve (comparisons, negations), or any filter on a table whose terms are
 * still being filled in (terms-backfill.ts), is served exactly by the scored scan with the filter
 * applied here when the table holds at most `exactScanMaxRows` rows, and refused with
 * validation_failed naming the filter above that: never answered short.
 *
 * A query the index cannot rank (zero or near-zero under cosine, zero under dot product, huge
 * components), or one under a metric other than the table's, is answered by reading the vectors and
 * scoring here, exactly (the old exact scan: O(rows) over the wire).
 */
import { invalid, ServiceError } from '../../errors.ts';
import { compareScores, exactScore, type Metric } from '../../index/metric.ts';
import { compareCodePoints } from '../../index/filter.ts';
import { TopK } from '../../index/topk.ts';
import type { Metadata, ReadMatch, RowRef, ScoredRef, SearchQuery, StoredMatch } from '../api.ts';
import { requireQueryDimension } from '../vector-dimension.ts';
import { chunks, fromCqlVector, fromMetadataText, indexable, toCqlVector } from './codec.ts';
import { requireTable } from './catalog.ts';
import { type Ctx, dataTable } from './context.ts';
import { recentRowCount, rowCount, type StoredTable } from './counts.ts';
import { filterQuery, whereTerms } from './filter-terms.ts';
import { forEachLimit } from './session.ts';
import { compile } from './vectors.ts';

/** Cassandra's cap on LIMIT with ORDER BY ... ANN OF. */
export const ANN_MAX_LIMIT = 1000;
/**
 * The ANN LIMIT when `candidates` does not cover the table: `limit`, widened to `ef` when the caller
 * asks (up to `candidates` and the cap). The engine's scores are final and no row it returns is
 * dropped here, so more rows only widen its graph search (jvector's beam is the LIMIT) at the
 * engine's cost: by default a search costs Cassandra what its own `LIMIT final_top_k` query does
 * (LIMIT 20 for 10 rows gave 0.36-0.77x the QPS of LIMIT 10 at 16 in flight on 3,000 384-d rows).
 */
export function annWidth(limit: number, candidates: number, ef: number | undefined): number {
  return Math.min(ANN_MAX_LIMIT, candidates, Math.max(limit, Math.floor(ef ?? 0)));
}

interface Candidate {
  key: string;
  score: number;
  /** The row itself, when stage 1 read it (cosine: see INLINE). */
  row?: { metadata: Metadata; text: string | null };
}

/** ann: the engine's ANN query; scan: a scan scored by the engine; client: vectors read and scored here. */
export type SearchPlan = 'ann' | 'scan' | 'client';

type Match = ((m: Metadata) => boolean) | null;

const SIMILARITY_FN: Record<Metric, string> = { cosine: 'similarity_cosine', dot_product: 'similarity_dot_product', euclidean: 'similarity_euclidean' };

/**
 * Cassandra's similarity (as jvector computes it) back to the metric's own score:
 * cosine (1 + cos) / 2, dot product (1 + dot) / 2, Euclidean 1 / (1 + d²).
 */
export function fromEngine(metric: Metric, s: number): number {
  if (metric === 'euclidean') return s > 0 ? Math.sqrt(Math.max(0, 1 / s - 1)) : Infinity;
  return 2 * s - 1;
}

export async function search(ctx: Ctx, keyspace: string, table: string, q: SearchQuery): Promise<StoredMatch[]> {
  return (await searchWithPlan(ctx, keyspace, table, q)).matches;
}

/**
 * As search, refs (the keys) and scores only: a cosine ANN search then reads no rows at all (its
 * scores are final, see above); other plans and metrics read what their exact scores need, as search does.
 */
export async function searchRefs(ctx: Ctx, keyspace: string, table: string, q: SearchQuery): Promise<ScoredRef[]> {
  return (await searchWithPlan(ctx, keyspace, table, { ...q, includeVector: false }, true)).matches.map((m) => ({ ref: m.key, key: m.key, score: m.score }));
}

/** As search, also telling which stage 1 ran (for tests and diagnostics); `keysOnly`: matches' rows may be left unread (metadata {}, text null). */
export async function searchWithPlan(ctx: Ctx, keyspace: string, table: string, q: SearchQuery, keysOnly = false): Promise<{ plan: SearchPlan; matches: StoredMatch[] }> {
  // The caller's work beside the search (a hybrid search's lexical list) overlaps its round trips.
  q.startBeside?.();
  const t = await requireTable(ctx, keyspace, table);
  requireQueryDimension(q.vector, t.dimension);
  const limit = Math.min(Math.floor(q.limit), Math.floor(q.candidates));
  if (!(limit > 0)) return { plan: 'ann', matches: [] };
  const filtered = q.filter !== undefined && Object.keys(q.filter).length > 0;
  const match = filtered ? compile(q.filter!) : null;

  const zeroDot = q.metric === 'dot_product' && q.vector.every((x) => x === 0);
  if (q.metric !== t.metric || zeroDot || !indexable(q.vector, q.metric)) {
    return { plan: 'client', matches: await finish(ctx, t, q, await clientScan(ctx, t, q, limit, match)) };
  }
  const plan = filtered ? filterQuery(q.filter!) : { branches: [[]] };
  if ('unservable' in plan || !t.filterTerms) {
    // Exact by the scored scan where the table is small enough; refused above that.
    if ((await rowCount(ctx, t, ctx.exactScanMaxRows + 1)) > ctx.exactScanMaxRows) {
      const why = 'unservable' in plan ? plan.unservable : { path: '/filter', message: 'cannot use the index on this table until its metadata is indexed (after the next start of the service)' };
      throw invalid([why], `This filter cannot be served on a table above ${ctx.exactScanMaxRows} rows: ${why.path} ${why.message}.`);
    }
    return { plan: 'scan', matches: await finish(ctx, t, q, await scoredScan(ctx, t, q, limit, match)) };
  }
  const candidates = Math.floor(q.candidates);
  // Cosine scores are bounded: the engine's float32 score is within ~2e-7 of the exact one, so the
  // rows come with stage 1 and there is no second read; other metrics' scores are not (a dot
  // product of 1,000 is off by 5e-5) and are re-scored from the final rows' vectors.
  const cosine = t.metric === 'cosine' && q.includeVector !== true;
  const inline = cosine && !keysOnly;
  const annAll = (n: number) => Promise.all(plan.branches.map((terms) => ann(ctx, t, q, n, terms, inline)));
  const small = annWidth(limit, candidates, q.ef);
  // The row count says whether `candidates` covers the table; read beside the narrow ANN query,
  // which is the answer unless it does (and that query may not have covered the table).
  const enough = Math.min(candidates, Math.max(ANN_MAX_LIMIT, ctx.exactScanMaxRows)) + 1;
  const [rows, narrow] = await Promise.all([recentRowCount(ctx, t, enough), annAll(small)]);
  const complete = narrow.every((f) => f.length < small);
  let found: Candidate[][];
  if (candidates < rows || complete) found = narrow;
  else if (rows > ANN_MAX_LIMIT && rows <= ctx.exactScanMaxRows) return { plan: 'scan', matches: await finish(ctx, t, q, await scoredScan(ctx, t, q, limit, match)) };
  else found = await annAll(Math.min(ANN_MAX_LIMIT, Math.max(small, rows)));
  const top = new TopK<Candidate>(limit, byScoreThenKey(q.metric));
  const seen = new Set<string>();
  for (const rows of found) {
    for (const c of rows) {
      if (seen.has(c.key)) continue;
      seen.add(c.key);
      top.push(c);
    }
  }
  const best = top.sorted();
  if (cosine) return { plan: 'ann', matches: best.map((c) => ({ key: c.key, score: c.score, metadata: c.row?.metadata ?? {}, text: c.row?.text ?? null })) };
  return { plan: 'ann', matches: await finish(ctx, t, q, best) };
}

const byScoreThenKey = (metric: Metric) => {
  const cmp = compareScores(metric);
  return (a: Candidate, b: Candidate): number => cmp(a, b) || compareCodePoints(a.key, b.key);
};

/** One ANN query: keys and engine scores of the best `n` rows holding every term (with `inline`, their metadata and text too). */
async function ann(ctx: Ctx, t: StoredTable, q: SearchQuery, n: number, terms: string[], inline: boolean): Promise<Candidate[]> {
  const where = terms.length > 0 ? ` WHERE ${whereTerms(terms)}` : '';
  const v = toCqlVector(q.vector);
  const rs = await ctx.session.execute(
    'ann',
    `SELECT "key", ${SIMILARITY_FN[t.metric]}("vector", ?) AS s${inline ? ', "metadata", "text"' : ''} FROM ${dataTable(ctx, t.keyspace, t.name)}${where} ORDER BY "vector" ANN OF ? LIMIT ?`,
    [v, ...terms, v, n],
    { ctx: { keyspace: t.keyspace, table: t.name, action: 'searching (ANN)' }, fetchSize: n },
  );
  return rs.rows.map((r) => ({
    key: r.key as string,
    score: fromEngine(t.metric, r.s as number),
    ...(inline ? { row: { metadata: fromMetadataText(r.metadata), text: (r.text as string | null) ?? null } } : {}),
  }));
}

/** Every row scored by the engine (no vectors over the wire), filtered here when a filter is given. */
async function scoredScan(ctx: Ctx, t: StoredTable, q: SearchQuery, limit: number, match: Match): Promise<Candidate[]> {
  const top = new TopK<Candidate>(limit, byScoreThenKey(q.metric));
  const cols = match ? '"key", "metadata"' : '"key"';
  for await (const page of ctx.session.pages(`SELECT ${cols}, ${SIMILARITY_FN[t.metric]}("vector", ?) AS s FROM ${dataTable(ctx, t.keyspace, t.name)}`, [toCqlVector(q.vector)], {
    fetchSize: 5000,
    ctx: { keyspace: t.keyspace, table: t.name, action: 'searching (scored scan)' },
  })) {
    for (const r of page) {
      if (r.s === null || r.s === undefined) continue;
      if (match && !match(fromMetadataText(r.metadata))) continue;
      top.push({ key: r.key as string, score: fromEngine(t.metric, r.s as number) });
    }
  }
  return top.sorted();
}

/** Every row's vector read and scored here: for queries the engine cannot score. */
async function clientScan(ctx: Ctx, t: StoredTable, q: SearchQuery, limit: number, match: Match): Promise<Candidate[]> {
  const top = new TopK<Candidate>(limit, byScoreThenKey(q.metric));
  const cols = match ? '"key", "vector", "metadata"' : '"key", "vector"';
  for await (const page of ctx.session.pages(`SELECT ${cols} FROM ${dataTable(ctx, t.keyspace, t.name)}`, [], {
    fetchSize: 2000,
    ctx: { keyspace: t.keyspace, table: t.name, action: 'searching (exact scan)' },
  })) {
    for (const r of page) {
      if (r.vector === null || r.vector === undefined) continue;
      if (match && !match(fromMetadataText(r.metadata))) continue;
      top.push({ key: r.key as string, score: exactScore(q.metric, q.vector, fromCqlVector(r.vector)) });
    }
  }
  return top.sorted();
}

/** The rows of the refs (keys) that exist now, as a search answers them (see Storage.readMatches). */
export async function readMatches(ctx: Ctx, keyspace: string, table: string, refs: readonly RowRef[], includeVector: boolean): Promise<Map<RowRef, ReadMatch>> {
  const t = await requireTable(ctx, keyspace, table);
  const out = new Map<RowRef, ReadMatch>();
  const keys = refs.filter((r) => typeof r === 'string');
  const cql = `SELECT "key", "metadata", "text"${includeVector ? ', "vector"' : ''} FROM ${dataTable(ctx, t.keyspace, t.name)} WHERE "key" IN ?`;
  await forEachLimit(chunks([...new Set(keys)], 100), 4, async (part) => {
    const rs = await ctx.session.execute('read', cql, [part], { ctx: { keyspace: t.keyspace, table: t.name, action: 'reading matches' } });
    for (const r of rs.rows) {
      const m: ReadMatch = { key: r.key as string, metadata: fromMetadataText(r.metadata), text: (r.text as string | null) ?? null };
      if (includeVector) {
        if (r.vector === null || r.vector === undefined) continue;
        m.vector = fromCqlVector(r.vector);
      }
      out.set(r.key as string, m);
    }
  });
  return out;
}

/**
 * Metadata, text and vector of the final keys, each re-scored exactly (float64, as the contract's
 * scores are) and re-sorted: `limit` vectors read, never the candidates'. A key deleted meanwhile drops out.
 */
async function finish(ctx: Ctx, t: StoredTable, q: SearchQuery, best: Candidate[]): Promise<StoredMatch[]> {
  if (best.length === 0) return [];
  const rows = new Map<string, { metadata: Metadata; text: string | null; vector: Float32Array }>();
  const cql = `SELECT "key", "metadata", "text", "vector" FROM ${dataTable(ctx, t.keyspace, t.name)} WHERE "key" IN ?`;
  await forEachLimit(chunks(best.map((c) => c.key), 100), 4, async (keys) => {
    const rs = await ctx.session.execute('read', cql, [keys], { ctx: { keyspace: t.keyspace, table: t.name, action: 'reading matches' } });
    for (const r of rs.rows) rows.set(r.key as string, { metadata: fromMetadataText(r.metadata), text: (r.text as string | null) ?? null, vector: fromCqlVector(r.vector) });
  });
  const out: (StoredMatch & { vector: Float32Array })[] = [];
  for (const c of best) {
    const row = rows.get(c.key);
    if (row) out.push({ key: c.key, score: exactScore(q.metric, q.vector, row.vector), metadata: row.metadata, text: row.text, vector: row.vector });
  }
  out.sort(byScoreThenKey(q.metric));
  return q.includeVector === true ? out : out.map(({ vector: _v, ...m }) => m);
}
