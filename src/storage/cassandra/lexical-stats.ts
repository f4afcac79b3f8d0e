/**
 * BM25's table statistics on Cassandra (rows with text, N, and their tokens, for the average
 * length), kept so that rows written with a TTL leave them when they expire, with no sweep of ours.
 *
 * Cassandra counters cannot take a TTL, so a row's share is counted in one of two places:
 *   lexical_stats ((keyspace_name, table_name)): rows that never expire;
 *   lexical_stats_expiring ((keyspace_name, table_name), bucket): rows that expire, in the counter
 *     cell of their expiry bucket (the bucket's end, in seconds since the epoch; bucketOf).
 * A read sums the first and the buckets still ahead (`bucket > now`), so an expired row stops
 * counting when its bucket ends, from every process at once. The bucket is wider the further the
 * expiry (BUCKET_CLASSES), which bounds the buckets a read sums (MAX_LIVE_BUCKETS) and the time an
 * expired row still counts (its bucket's width, plus a second for the write's own clock).
 *
 * A rewrite or delete must take an expiring row's share out of the bucket its write put it in,
 * which the row's remaining TTL cannot tell exactly (the engine's and the service's seconds need
 * not tick together). So each expiring row with text also writes its bucket in
 * lexical_row_buckets ((keyspace_name, table_name, key)), in the row's own batch and with the row's
 * TTL: it lasts as long as the row. A row read with a TTL but no such entry (written before
 * these tables existed) was counted in lexical_stats and is taken out of it.
 *
 * Counter updates are not idempotent; like row_counts (counts.ts) they follow the row writes and
 * are never retried. Old buckets are never read again; a write removes those over an hour past
 * (one range delete per table and process every 10 minutes), so a counter is never deleted while a
 * write may still add to it (Cassandra leaves a counter incremented after its deletion undefined).
 */
import type { TableInfo } from '../api.ts';
import type { Bm25Stats } from '../lexical/bm25.ts';
import { chunks } from './codec.ts';
import { type Ctx, sysTable } from './context.ts';
import type { Indexed, Stmt } from './lexical.ts';
import { forEachLimit } from './session.ts';

/** [longest TTL in seconds, bucket width in seconds]: a row is counted in the first class its TTL fits. */
export const BUCKET_CLASSES: readonly (readonly [number, number])[] = [
  [600, 1],
  [36_000, 60],
  [2_160_000, 3_600],
  [51_840_000, 86_400],
  [Infinity, 30 * 86_400],
];

/** The most buckets a read can find ahead of now for TTLs up to `maxTtl` (each class: its span over its width, plus one). */
export const liveBucketBound = (maxTtl: number): number =>
  BUCKET_CLASSES.reduce((n, [max, width], i) => {
    const from = i === 0 ? 0 : BUCKET_CLASSES[i - 1][0];
    return from >= maxTtl ? n : n + Math.ceil((Math.min(max, maxTtl) + 1) / width) + 1;
  }, 0);

/**
 * The bucket (its end, seconds since the epoch) counting a row written at `nowMs` with a TTL of
 * `ttl` seconds. The engine expires the row at its own second of the write plus `ttl`; one second
 * more allows for the write reaching it in the next second, so a row never leaves N before it
 * leaves the table.
 */
export function bucketOf(nowMs: number, ttl: number): number {
  const width = BUCKET_CLASSES.find(([max]) => ttl <= max)![1];
  const expiry = Math.floor(nowMs / 1000) + ttl + 1;
  return Math.ceil(expiry / width) * width;
}

/** How long past now old buckets are kept: far beyond any write in flight that could still add to them. */
const KEEP_PAST_S = 3_600;
const SWEEP_EVERY_MS = 10 * 60_000;
const swept = new WeakMap<Ctx, Map<string, number>>();
const IN_CHUNK = 100;

const num = (v: unknown): number => (v === null || v === undefined ? 0 : typeof v === 'number' ? v : Number(String(v)));

const readCtx = (t: TableInfo) => ({ keyspace: t.keyspace, table: t.name, action: 'reading lexical statistics' });
const countCtx = (t: TableInfo) => ({ keyspace: t.keyspace, table: t.name, action: 'counting text for lexical search' });

/** The counters of rows that never expire (lexical-backfill.ts sets them to what its scan counted). */
export async function readLasting(ctx: Ctx, t: TableInfo): Promise<Bm25Stats> {
  const rs = await ctx.session.execute('read', `SELECT docs, tokens FROM ${sysTable(ctx, 'lexical_stats')} WHERE keyspace_name = ? AND table_name = ?`, [t.keyspace, t.name], { ctx: readCtx(t) });
  return { rows: num(rs.first()?.docs), tokens: num(rs.first()?.tokens) };
}

/** Adds to the counters of rows that never expire. */
export async function addLasting(ctx: Ctx, t: TableInfo, rows: number, tokens: number): Promise<void> {
  if (rows === 0 && tokens === 0) return;
  await ctx.session.execute('counter', `UPDATE ${sysTable(ctx, 'lexical_stats')} SET docs = docs + ?, tokens = tokens + ? WHERE keyspace_name = ? AND table_name = ?`, [rows, tokens, t.keyspace, t.name], {
    ctx: countCtx(t),
  });
}

/** BM25's N and total length as of `nowMs`: rows that never expire plus those whose bucket is ahead (two reads at once; the engine sums the buckets). */
export async function readStats(ctx: Ctx, t: TableInfo, nowMs = Date.now()): Promise<Bm25Stats> {
  const [lasting, expiring] = await Promise.all([
    readLasting(ctx, t),
    ctx.session.execute(
      'read',
      `SELECT sum(docs) AS docs, sum(tokens) AS tokens FROM ${sysTable(ctx, 'lexical_stats_expiring')} WHERE keyspace_name = ? AND table_name = ? AND bucket > ?`,
      [t.keyspace, t.name, Math.floor(nowMs / 1000)],
      { ctx: readCtx(t) },
    ),
  ]);
  const b = expiring.first();
  return { rows: Math.max(0, lasting.rows + num(b?.docs)), tokens: Math.max(0, lasting.tokens + num(b?.tokens)) };
}

/** A counter cell: the one of rows that never expire (null), or an expiry bucket. */
type Cell = number | null;

/**
 * The change a write or delete makes to a table's statistics: built from the rows as they were
 * (remove) and as written (add), applied once the rows are written (apply).
 */
export class StatsChange {
  readonly #ctx: Ctx;
  readonly #t: TableInfo;
  /** The buckets the rows read with a TTL were counted in (lexical_row_buckets). */
  readonly #buckets: Map<string, number>;
  readonly #expiring: ReadonlySet<string>;
  readonly #cells = new Map<Cell, { docs: number; tokens: number }>();

  private constructor(ctx: Ctx, t: TableInfo, expiring: ReadonlySet<string>, buckets: Map<string, number>) {
    this.#ctx = ctx;
    this.#t = t;
    this.#expiring = expiring;
    this.#buckets = buckets;
  }

  /** For rows about to change; `expiring` are the keys whose text was read with a TTL (their buckets are read, 100 keys a read). */
  static async of(ctx: Ctx, t: TableInfo, expiring: ReadonlySet<string>): Promise<StatsChange> {
    const buckets = new Map<string, number>();
    const cql = `SELECT key, bucket FROM ${sysTable(ctx, 'lexical_row_buckets')} WHERE keyspace_name = ? AND table_name = ? AND key IN ?`;
    await forEachLimit(chunks([...expiring], IN_CHUNK), 4, async (part) => {
      const rs = await ctx.session.execute('read', cql, [t.keyspace, t.name, part], { ctx: readCtx(t) });
      for (const r of rs.rows) buckets.set(r.key as string, num(r.bucket));
    });
    return new StatsChange(ctx, t, expiring, buckets);
  }

  #add(cell: Cell, x: Indexed, sign: 1 | -1): void {
    if (x === null) return;
    const c = this.#cells.get(cell) ?? { docs: 0, tokens: 0 };
    c.docs += sign;
    c.tokens += sign * x.length;
    this.#cells.set(cell, c);
  }

  /** Whether the row `key`, read with a TTL, is counted in a bucket (a write since these tables existed counted it). */
  inBucket(key: string): boolean {
    return this.#buckets.has(key);
  }

  /** The row `key` as it was read: out of the cell its write counted it in. */
  remove(key: string, before: Indexed): void {
    this.#add(this.#expiring.has(key) ? (this.#buckets.get(key) ?? null) : null, before, -1);
  }

  /**
   * The row `key` as written at `nowMs` with a TTL of `ttl` seconds (0: never): into its cell.
   * Answers the statement recording an expiring row's bucket, to write with the row.
   */
  add(key: string, after: Indexed, ttl: number, nowMs: number): Stmt[] {
    if (after === null || ttl === 0) {
      this.#add(null, after, 1);
      return [];
    }
    const bucket = bucketOf(nowMs, ttl);
    this.#add(bucket, after, 1);
    return [
      {
        query: `INSERT INTO ${sysTable(this.#ctx, 'lexical_row_buckets')} (keyspace_name, table_name, key, bucket) VALUES (?, ?, ?, ?) USING TTL ?`,
        params: [this.#t.keyspace, this.#t.name, key, bucket, ttl],
        bytes: Buffer.byteLength(key) + 96,
      },
    ];
  }

  /** Adds the change to the counters: one update per cell it moves (after the rows are written); now and then drops old buckets. */
  async apply(nowMs = Date.now()): Promise<void> {
    const t = this.#t;
    const changed = [...this.#cells].filter(([, c]) => c.docs !== 0 || c.tokens !== 0);
    await Promise.all(
      changed.map(([cell, c]) =>
        cell === null
          ? addLasting(this.#ctx, t, c.docs, c.tokens)
          : this.#ctx.session.execute(
              'counter',
              `UPDATE ${sysTable(this.#ctx, 'lexical_stats_expiring')} SET docs = docs + ?, tokens = tokens + ? WHERE keyspace_name = ? AND table_name = ? AND bucket = ?`,
              [c.docs, c.tokens, t.keyspace, t.name, cell],
              { ctx: countCtx(t) },
            ),
      ),
    );
    if (changed.some(([cell]) => cell !== null)) await sweepBuckets(this.#ctx, this.#t, nowMs);
  }
}

/** Removes the table's buckets that ended over KEEP_PAST_S ago, at most every SWEEP_EVERY_MS per process (one range delete). */
async function sweepBuckets(ctx: Ctx, t: TableInfo, nowMs: number): Promise<void> {
  const last = swept.get(ctx) ?? new Map<string, number>();
  swept.set(ctx, last);
  const id = `${t.keyspace}.${t.name}`;
  if (nowMs - (last.get(id) ?? -Infinity) < SWEEP_EVERY_MS) return;
  last.set(id, nowMs);
  await ctx.session.write(`DELETE FROM ${sysTable(ctx, 'lexical_stats_expiring')} WHERE keyspace_name = ? AND table_name = ? AND bucket < ?`, [
    t.keyspace,
    t.name,
    Math.floor(nowMs / 1000) - KEEP_PAST_S,
  ], { keyspace: t.keyspace, table: t.name, action: 'dropping old lexical statistics' });
}
