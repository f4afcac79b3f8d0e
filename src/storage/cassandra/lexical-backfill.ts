/**
 * Indexes tables made before lexical search existed (their catalog row has no lexical_tokenizer):
 * started in the background when a service process opens the store. Each row's postings are
 * written `USING TIMESTAMP` of the row's text as read, so a rewrite or delete made meanwhile
 * (a later timestamp) wins over them. Once every row is indexed, one process claims the table by
 * an LWT setting its tokenizer (porter, what such tables read as) and sets the counters to what the
 * scan counted; writes made during the scan can leave them off by those rows. A process that dies
 * midway leaves the tokenizer unset, and the next start indexes the table again (idempotent).
 */
import type { TableInfo } from '../api.ts';
import { DEFAULT_LEXICAL } from '../api.ts';
import { getTable } from './catalog.ts';
import { type Ctx, dataTable, sysTable } from './context.ts';
import { addStats, indexed, postingInserts, readStats, statsOf } from './lexical.ts';
import { writeGroups } from './vectors.ts';

/** Indexes every table whose catalog row has no tokenizer yet, one after another. */
export async function backfillLexical(ctx: Ctx): Promise<void> {
  const pending: { keyspace: string; table: string }[] = [];
  for await (const page of ctx.session.pages(`SELECT keyspace_name, table_name, lexical_tokenizer FROM ${sysTable(ctx, 'tables')}`)) {
    for (const r of page) if (r.lexical_tokenizer == null) pending.push({ keyspace: r.keyspace_name as string, table: r.table_name as string });
  }
  for (const { keyspace, table } of pending) {
    const t = await getTable(ctx, keyspace, table);
    if (t !== null) await backfillTable(ctx, t);
  }
}

async function backfillTable(ctx: Ctx, t: TableInfo): Promise<void> {
  let rows = 0;
  let tokens = 0;
  const errCtx = { keyspace: t.keyspace, table: t.name, action: 'indexing text for lexical search' };
  for await (const page of ctx.session.pages(`SELECT "key", "text", WRITETIME("text") AS wt FROM ${dataTable(ctx, t.keyspace, t.name)}`, [], { fetchSize: 500, ctx: errCtx })) {
    const groups = page.map((r) => {
      const x = indexed(t, r.text as string | null);
      rows += statsOf(x).rows;
      tokens += statsOf(x).tokens;
      return postingInserts(ctx, t, r.key as string, x, r.wt);
    });
    await writeGroups(ctx, groups, errCtx);
  }
  const claim = await ctx.session.execute(
    'lwt',
    `UPDATE ${sysTable(ctx, 'tables')} SET lexical_tokenizer = ? WHERE keyspace_name = ? AND table_name = ? IF lexical_tokenizer = null`,
    [DEFAULT_LEXICAL.tokenizer, t.keyspace, t.name],
    { ctx: errCtx },
  );
  if (!claim.wasApplied()) return;
  const now = await readStats(ctx, t);
  await addStats(ctx, t, rows - now.rows, tokens - now.tokens);
}
