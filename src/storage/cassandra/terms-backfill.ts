/**
 * Fills the "terms" column (filter-terms.ts) of tables made before it, in the background once a
 * service process has opened the store (catalog.ensureTermsColumns gave them the column first).
 * Each row's terms are written `USING TIMESTAMP` of its metadata as read, so a rewrite or delete
 * made meanwhile (a later timestamp) wins over them. Once every row has its terms and the index
 * answers, the table is marked (`filter_terms = true`) and filters use the index; a process that dies midway leaves it
 * unmarked and the next start fills it again (idempotent).
 */
import { fromMetadataText } from './codec.ts';
import { type Ctx, dataTable, sysTable } from './context.ts';
import type { StoredTable } from './counts.ts';
import { metadataTerms } from './filter-terms.ts';
import { forEachLimit } from './session.ts';

export async function backfillTerms(ctx: Ctx, tables: readonly StoredTable[]): Promise<void> {
  for (const t of tables) await backfillTable(ctx, t);
}

async function backfillTable(ctx: Ctx, t: StoredTable): Promise<void> {
  const errCtx = { keyspace: t.keyspace, table: t.name, action: 'indexing metadata for filters' };
  const from = dataTable(ctx, t.keyspace, t.name);
  const cql = `UPDATE ${from} USING TIMESTAMP ? SET "terms" = ? WHERE "key" = ?`;
  for await (const page of ctx.session.pages(`SELECT "key", "metadata", WRITETIME("metadata") AS wm FROM ${from}`, [], { fetchSize: 500, ctx: errCtx })) {
    await forEachLimit(
      page.filter((r) => r.wm !== null && r.wm !== undefined),
      16,
      (r) => ctx.session.write(cql, [r.wm, metadataTerms(fromMetadataText(r.metadata)), r.key], errCtx),
    );
  }
  await indexQueryable(ctx, t);
  await ctx.session.write(`UPDATE ${sysTable(ctx, 'tables')} SET filter_terms = true WHERE keyspace_name = ? AND table_name = ?`, [t.keyspace, t.name], errCtx);
}

/**
 * Waits (up to 30 minutes) until a query through the terms index succeeds: an SAI index made on a
 * table with data fails every query (readFailure) until it has indexed what was there.
 */
async function indexQueryable(ctx: Ctx, t: StoredTable): Promise<void> {
  const probe = `SELECT "key" FROM ${dataTable(ctx, t.keyspace, t.name)} WHERE "terms" CONTAINS ? LIMIT 1`;
  const deadline = Date.now() + 30 * 60_000;
  for (;;) {
    try {
      await ctx.session.execute('read', probe, ['[]']);
      return;
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
}
