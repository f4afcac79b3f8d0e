/**
 * Row counts kept with the writes, so that countVectors, listTables and usage read counters
 * instead of scanning a table.
 *
 * Every write already reads which of its keys exist (for the lexical postings, vectors.ts), and
 * with them the expiry bucket each one was counted in, so it knows which rows it adds, removes or
 * moves between buckets (RowCountChange). Rows that never expire are counted in the table's
 * `row_counts` counter, rows that expire by the bucket of their expiry (expiry-counts.ts), so a
 * count drops them from the second they expire. A call repeated after a failure finds its rows
 * there and adds nothing; writes of different keys, from any number of processes, add up. Counter
 * updates cannot be retried safely (a retry may count twice), so when one fails the table is marked
 * uncounted (`counted = false` in the catalog, an idempotent write) and is counted by a key scan
 * until a repair sets it right (counts-repair.ts), as tables made before this counter are for good
 * (and, once they hold expiring rows, tables made before the expiry buckets). What a counter
 * cannot see: two calls creating (or deleting) the same key at the same moment both count it. See
 * docs/CASSANDRA.md.
 */
import type { TableInfo } from '../api.ts';
import { type Ctx, dataTable, sysTable } from './context.ts';
import { bucketUpdates, expiringRows, sweepPastBuckets } from './expiry-counts.ts';
import { memosOf, tableId } from './memos.ts';
import { scheduleRepair } from './counts-repair.ts';
import { scanCount } from './key-scan.ts';

/** A table as this backend keeps it: the catalog's info and the state of its derived columns. */
export interface StoredTable extends TableInfo {
  /** row_counts (plus countCorrection) counts it: since its creation, or since a repair (counts-repair.ts). */
  readonly counted: boolean;
  /** What a repair found row_counts' "rows" off by, added to it by a count. */
  readonly countCorrection: number;
  /** Its "terms" column is complete (filter-terms.ts): filters can use the index. */
  readonly filterTerms: boolean;
  /** It has the "expiry_bucket" column and index: its expiring rows are counted by bucket (expiry-counts.ts). */
  readonly expiryCounts: boolean;
}

/**
 * The change a write or delete makes to a table's row count: rows as they were (remove) and as
 * written (add), each with its expiry bucket (null: never expires), applied once the rows are
 * written.
 */
export class RowCountChange {
  #lasting = 0;
  readonly #buckets = new Map<number, number>();

  #move(bucket: number | null, d: number): void {
    if (bucket === null) this.#lasting += d;
    else this.#buckets.set(bucket, (this.#buckets.get(bucket) ?? 0) + d);
  }

  remove(bucket: number | null): void {
    this.#move(bucket, -1);
  }

  add(bucket: number | null): void {
    this.#move(bucket, 1);
  }

  /** Adds the change to the counters (one counter batch for the buckets); on failure marks the table uncounted and rethrows. */
  async apply(ctx: Ctx, t: StoredTable): Promise<void> {
    // Its rows are counted by scans (recentRowCount) until a repair: the one remembered here is stale.
    if (!t.counted) memosOf(ctx).rowScans.forget(tableId(t.keyspace, t.name));
    // An uncounted table is still counted, for the repair to take over from; one made before the
    // expiry buckets is never repaired (counts-repair.ts), so its counter is left alone.
    if (!t.counted && !t.expiryCounts) return;
    const buckets = bucketUpdates(ctx, t.keyspace, t.name, this.#buckets);
    if (this.#lasting === 0 && buckets.length === 0) return;
    const errCtx = { keyspace: t.keyspace, table: t.name, action: 'counting rows' };
    await memosOf(ctx).rowCounts.changing(tableId(t.keyspace, t.name), async () => {
      try {
        await Promise.all([
          this.#lasting === 0
            ? undefined
            : ctx.session.execute('counter', `UPDATE ${sysTable(ctx, 'row_counts')} SET "rows" = "rows" + ?, changes = changes + 1 WHERE keyspace_name = ? AND table_name = ?`, [this.#lasting, t.keyspace, t.name], {
                ctx: errCtx,
              }),
          ctx.session.counterBatch(buckets, errCtx),
        ]);
      } catch (err) {
        await stopCounting(ctx, t).catch(() => undefined);
        throw err;
      }
    });
    // Housekeeping only: a failed sweep leaves cells no count reads, for the next write to remove.
    if (buckets.length > 0) await sweepPastBuckets(ctx, t.keyspace, t.name).catch(() => undefined);
  }
}

/**
 * The row count a search plans by, exact up to `upTo` (a larger count answers `upTo`).
 * A counted table: its counter as read within the last TABLE_FACTS_MS (memos.ts), so most searches
 * send only their ANN query. An uncounted one (a counter write failed, see apply): a key scan that
 * stops at `upTo`, remembered as long, so a search costs what it does on a counted table. This
 * process's writes drop either at once; another process's are seen within that second.
 */
export async function recentRowCount(ctx: Ctx, t: StoredTable, upTo: number): Promise<number> {
  const id = tableId(t.keyspace, t.name);
  if (t.counted) return Math.min(upTo, (await memosOf(ctx).rowCounts.get(id, () => rowCount(ctx, t)))!);
  const scan = await memosOf(ctx).rowScans.get(
    id,
    async () => ({ n: await scanCount(ctx, t.keyspace, t.name, upTo), upTo }),
    undefined,
    (s) => s.n < s.upTo || s.upTo >= upTo, // an exact count, or one that went far enough
  );
  scheduleRepair(ctx, t);
  return Math.min(upTo, scan!.n);
}

const marked = new WeakMap<Ctx, Set<string>>();

/**
 * Before a table's first expiring rows: marks it as holding some (row_counts.expiring), so that a
 * count reads its expiry buckets from then on; a count of a table never marked reads one partition.
 * Once per table and process.
 */
export async function markExpiring(ctx: Ctx, t: StoredTable): Promise<void> {
  const done = marked.get(ctx) ?? new Set<string>();
  marked.set(ctx, done);
  const id = tableId(t.keyspace, t.name);
  if (done.has(id)) return;
  if (done.size >= 10_000) done.clear();
  await ctx.session.execute('counter', `UPDATE ${sysTable(ctx, 'row_counts')} SET expiring = expiring + 1 WHERE keyspace_name = ? AND table_name = ?`, [t.keyspace, t.name], {
    ctx: { keyspace: t.keyspace, table: t.name, action: 'counting rows' },
  });
  done.add(id);
}

/**
 * Marks the table uncounted (an idempotent catalog write): counted by a key scan from then on. For
 * a failed counter update, and before the first expiring rows of a table without expiry buckets
 * (the engine drops them without a write its counter could see).
 */
export async function stopCounting(ctx: Ctx, t: StoredTable): Promise<void> {
  await ctx.session.write(`UPDATE ${sysTable(ctx, 'tables')} SET counted = false WHERE keyspace_name = ? AND table_name = ?`, [t.keyspace, t.name]);
}

/** The table's rows: its counters, or a key scan for a table not counted (stopping past `upTo`). */
export async function rowCount(ctx: Ctx, t: StoredTable, upTo = Infinity): Promise<number> {
  if (t.counted) {
    const rs = await ctx.session.execute('read', `SELECT "rows", expiring FROM ${sysTable(ctx, 'row_counts')} WHERE keyspace_name = ? AND table_name = ?`, [t.keyspace, t.name], {
      ctx: { keyspace: t.keyspace, table: t.name, action: 'counting rows' },
    });
    const n = (rs.rowLength > 0 ? Number(String(rs.first().rows ?? 0)) : 0) + t.countCorrection;
    const hasExpiring = rs.rowLength > 0 && Number(String(rs.first().expiring ?? 0)) > 0;
    return Math.max(0, n + (t.expiryCounts && hasExpiring ? await expiringRows(ctx, t.keyspace, t.name) : 0));
  }
  scheduleRepair(ctx, t);
  return scanCount(ctx, t.keyspace, t.name, upTo);
}
