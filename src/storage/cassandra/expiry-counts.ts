/**
 * The expiring share of a table's row count, exact from the second a row expires, without a scan.
 *
 * Counters cannot expire, so an expiring row is counted by the bucket of its expiry instead:
 *   - the row itself records its bucket `f` (the end of its expiry minute, seconds since the epoch)
 *     in the data table's "expiry_bucket" column, written with the row and its TTL, under an SAI
 *     index (`<table>_expiry_idx`);
 *   - row_counts_expiring ((keyspace_name, table_name), width, bucket) counts it three times: in
 *     its minute (width 60, bucket f), its day (86,400) and its 30-day period (2,592,000), each
 *     bucket named by its end.
 * A count at `now` then adds, with no overlap and nothing left out:
 *   - the rows whose minute ends by T (a few minutes ahead: WINDOW_S), counted by the engine through
 *     the SAI index (`expiry_bucket > L AND expiry_bucket <= T`): the engine hides the expired ones,
 *     so this is exact to its second; L, an hour back, only bounds the index walk;
 *   - the minute counters after T up to the end of T's day D, the day counters after D up to the
 *     end of D's period M, the period counters after M: rows that expire after T, alive now.
 * That is at most ~1,500 counter cells (a day of minutes, a period of days, the periods ahead), and
 * the SAI count is skipped when no minute counter up to T is non-zero (nothing expires meanwhile).
 * A write's counter changes come from the rows as read before it (their "expiry_bucket") and as
 * written, like the lasting counter's (counts.ts). Cells more than KEEP_PAST_S past are never read
 * nor written again (a live row's bucket is ahead of now); a write removes them, one range delete
 * per width, at most every SWEEP_EVERY_MS per table and process.
 */
import { type Ctx, dataTable, sysTable } from './context.ts';

export const MINUTE = 60;
export const DAY = 86_400;
export const PERIOD = 30 * DAY;
const WIDTHS = [MINUTE, DAY, PERIOD] as const;
/** How far ahead of now the engine counts: a minute bucket's width, plus clock differences between processes and nodes. */
const WINDOW_S = 2 * MINUTE;
/** How far back the engine's count looks (rows expired longer ago are not read again). */
const BACK_S = 3_600;

const ceilTo = (x: number, width: number): number => Math.ceil(x / width) * width;

/**
 * The bucket (its minute's end, seconds since the epoch) of a row written at `nowMs` with a TTL of
 * `ttl` seconds: the engine expires it at its second of the write plus `ttl`; one more second
 * allows for the write reaching it in the next second.
 */
export const expiryBucket = (nowMs: number, ttl: number): number => ceilTo(Math.floor(nowMs / 1000) + ttl + 1, MINUTE);

/** The counter cells [width, bucket] a row of bucket `f` is counted in. */
export const cellsOf = (f: number): [number, number][] => WIDTHS.map((w) => [w, ceilTo(f, w)]);

/** What a count at `nowMs` reads: the engine counts rows of bucket in (low, window]; counters after that, by width. */
export interface CountPlan {
  readonly low: number;
  readonly window: number;
  /** [width, after, upTo (Infinity: no end)] per counter range. */
  readonly ranges: readonly (readonly [number, number, number])[];
}

export function countPlan(nowMs: number): CountPlan {
  const now = Math.floor(nowMs / 1000);
  const window = ceilTo(now + WINDOW_S, MINUTE);
  const day = ceilTo(window, DAY);
  const period = ceilTo(day, PERIOD);
  return {
    low: now - BACK_S,
    window,
    ranges: [
      [MINUTE, window, day],
      [DAY, day, period],
      [PERIOD, period, Infinity],
    ],
  };
}

const num = (v: unknown): number => (v === null || v === undefined ? 0 : typeof v === 'number' ? v : Number(String(v)));
const errCtx = (keyspace: string, table: string) => ({ keyspace, table, action: 'counting expiring rows' });

/** Rows of the table that expire and have not yet, as of `nowMs` (see the file comment). */
export async function expiringRows(ctx: Ctx, keyspace: string, table: string, nowMs = Date.now()): Promise<number> {
  const plan = countPlan(nowMs);
  const from = sysTable(ctx, 'row_counts_expiring');
  const [soon, ...later] = await Promise.all([
    ctx.session.execute('read', `SELECT "rows" FROM ${from} WHERE keyspace_name = ? AND table_name = ? AND width = ? AND bucket > ? AND bucket <= ?`, [keyspace, table, MINUTE, plan.low, plan.window], {
      ctx: errCtx(keyspace, table),
    }),
    ...plan.ranges.map(([width, after, upTo]) =>
      ctx.session.execute(
        'read',
        `SELECT sum("rows") AS n FROM ${from} WHERE keyspace_name = ? AND table_name = ? AND width = ? AND bucket > ?${Number.isFinite(upTo) ? ' AND bucket <= ?' : ''}`,
        [keyspace, table, width, after, ...(Number.isFinite(upTo) ? [upTo] : [])],
        { ctx: errCtx(keyspace, table) },
      ),
    ),
  ]);
  let n = later.reduce((s, rs) => s + num(rs.first()?.n), 0);
  if (soon.rows.some((r) => num(r.rows) !== 0)) {
    const rs = await ctx.session.execute('read', `SELECT COUNT(*) AS n FROM ${dataTable(ctx, keyspace, table)} WHERE "expiry_bucket" > ? AND "expiry_bucket" <= ?`, [plan.low, plan.window], {
      ctx: errCtx(keyspace, table),
    });
    n += num(rs.first()?.n);
  }
  return n;
}

/** The counter updates moving rows between buckets: `delta` rows per bucket, as [cql, params]. */
export function bucketUpdates(ctx: Ctx, keyspace: string, table: string, deltas: ReadonlyMap<number, number>): { query: string; params: unknown[] }[] {
  const cells = new Map<string, [number, number, number]>();
  for (const [f, d] of deltas) {
    if (d === 0) continue;
    for (const [w, b] of cellsOf(f)) {
      const id = `${w}:${b}`;
      const c = cells.get(id) ?? [w, b, 0];
      c[2] += d;
      cells.set(id, c);
    }
  }
  const cql = `UPDATE ${sysTable(ctx, 'row_counts_expiring')} SET "rows" = "rows" + ? WHERE keyspace_name = ? AND table_name = ? AND width = ? AND bucket = ?`;
  return [...cells.values()].filter(([, , d]) => d !== 0).map(([w, b, d]) => ({ query: cql, params: [d, keyspace, table, w, b] }));
}

const KEEP_PAST_S = 2 * BACK_S;
const SWEEP_EVERY_MS = 10 * 60_000;
const swept = new WeakMap<Ctx, Map<string, number>>();

/** Removes the table's counter cells that ended over KEEP_PAST_S ago, at most every SWEEP_EVERY_MS per process. */
export async function sweepPastBuckets(ctx: Ctx, keyspace: string, table: string, nowMs = Date.now()): Promise<void> {
  const last = swept.get(ctx) ?? new Map<string, number>();
  swept.set(ctx, last);
  const id = `${keyspace}.${table}`;
  if (nowMs - (last.get(id) ?? -Infinity) < SWEEP_EVERY_MS) return;
  last.set(id, nowMs);
  const before = Math.floor(nowMs / 1000) - KEEP_PAST_S;
  const cql = `DELETE FROM ${sysTable(ctx, 'row_counts_expiring')} WHERE keyspace_name = ? AND table_name = ? AND width = ? AND bucket < ?`;
  await Promise.all(WIDTHS.map((w) => ctx.session.write(cql, [keyspace, table, w, before], errCtx(keyspace, table))));
}
