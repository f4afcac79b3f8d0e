/**
 * Row counts kept with the writes, so that countVectors, listTables and usage read one counter
 * instead of scanning a table.
 *
 * Every write already reads which of its keys exist (for the lexical postings, vectors.ts), so it
 * knows how many rows it adds or removes; it adds that to the table's `row_counts` counter once its
 * rows are written. A call repeated after a failure finds its rows there and adds nothing; writes of
 * different keys, from any number of processes, add up. Counter updates cannot be retried safely
 * (a retry may count twice), so when one fails the table is marked uncounted (`counted = false` in
 * the catalog, an idempotent write) and is counted by a key scan from then on, as tables made before
 * this counter are. What a counter cannot see: two calls creating (or deleting) the same key at the
 * same moment both count it. See docs/CASSANDRA.md.
 */
import type { TableInfo } from '../api.ts';
import { type Ctx, dataTable, sysTable } from './context.ts';
import { memosOf, tableId } from './memos.ts';

/** A table as this backend keeps it: the catalog's info and the state of its derived columns. */
export interface StoredTable extends TableInfo {
  /** row_counts has counted it since its creation. */
  readonly counted: boolean;
  /** Its "terms" column is complete (filter-terms.ts): filters can use the index. */
  readonly filterTerms: boolean;
}

/** Adds `delta` rows to the table's counter; on failure marks the table uncounted and rethrows. */
export async function addRows(ctx: Ctx, t: StoredTable, delta: number): Promise<void> {
  if (delta === 0 || !t.counted) return;
  await memosOf(ctx).rowCounts.changing(tableId(t.keyspace, t.name), async () => {
    try {
      await ctx.session.execute('counter', `UPDATE ${sysTable(ctx, 'row_counts')} SET "rows" = "rows" + ? WHERE keyspace_name = ? AND table_name = ?`, [delta, t.keyspace, t.name], {
        ctx: { keyspace: t.keyspace, table: t.name, action: 'counting rows' },
      });
    } catch (err) {
      await stopCounting(ctx, t).catch(() => undefined);
      throw err;
    }
  });
}

/**
 * The row count a search plans by: the counter as read within the last TABLE_FACTS_MS (memos.ts),
 * so most searches send only their ANN query. This process's writes drop it at once; another
 * process's are seen within that second.
 */
export async function recentRowCount(ctx: Ctx, t: StoredTable): Promise<number> {
  const n = await memosOf(ctx).rowCounts.get(tableId(t.keyspace, t.name), () => rowCount(ctx, t), () => t.counted);
  return n!; // rowCount always answers a number
}

/**
 * Marks the table uncounted (an idempotent catalog write): counted by a key scan from then on. For
 * a failed counter update, and before a table's first rows that expire (the engine drops them
 * without a write this counter could see).
 */
export async function stopCounting(ctx: Ctx, t: StoredTable): Promise<void> {
  await ctx.session.write(`UPDATE ${sysTable(ctx, 'tables')} SET counted = false WHERE keyspace_name = ? AND table_name = ?`, [t.keyspace, t.name]);
}

/** The table's rows: its counter, or a key scan for a table not counted (stopping past `upTo`). */
export async function rowCount(ctx: Ctx, t: StoredTable, upTo = Infinity): Promise<number> {
  if (t.counted) {
    const rs = await ctx.session.execute('read', `SELECT "rows" FROM ${sysTable(ctx, 'row_counts')} WHERE keyspace_name = ? AND table_name = ?`, [t.keyspace, t.name], {
      ctx: { keyspace: t.keyspace, table: t.name, action: 'counting rows' },
    });
    const n = rs.rowLength > 0 ? Number(String(rs.first().rows ?? 0)) : 0;
    return Math.max(0, n);
  }
  return scanCount(ctx, t.keyspace, t.name, upTo);
}

/** Rows of a table, counted by a paged scan of its keys: O(rows). */
export async function scanCount(ctx: Ctx, keyspace: string, table: string, upTo = Infinity): Promise<number> {
  let n = 0;
  const limit = Number.isFinite(upTo) ? ` LIMIT ${Math.floor(upTo)}` : '';
  for await (const page of ctx.session.pages(`SELECT "key" FROM ${dataTable(ctx, keyspace, table)}${limit}`, [], {
    fetchSize: 5000,
    ctx: { keyspace, table, action: 'counting rows' },
  })) {
    n += page.length;
  }
  return n;
}
