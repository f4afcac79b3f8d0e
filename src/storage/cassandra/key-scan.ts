/** Counting a table's rows the slow way, for tables whose counter cannot be trusted (counts.ts). */
import { type Ctx, dataTable } from './context.ts';

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
