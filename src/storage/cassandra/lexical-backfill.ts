/**
 * Indexes tables made before lexical search existed (their catalog row has no lexical_tokenizer):
 * started in the background when a service process opens the store. Each row's postings are
 * written `USING TIMESTAMP` of the row's text as read, so a rewrite or delete made meanwhile
 * (a later timestamp) wins over them, and with the TTL the text has left, so they expire with it.
 * Once every row is indexed, one process claims the table by an LWT setting its tokenizer (porter,
 * what such tables read as) and sets the counters of rows that never expire to what the scan
 * counted; writes made during the scan can leave them off by those rows. Expiring rows not yet
 * counted in an expiry bucket (lexical-stats.ts) are added to theirs page by page; a second process
 * scanning at the same time counts them again, until they expire. A process that dies midway
 * leaves the tokenizer unset, and the next start indexes the table again (idempotent).
 */
import type { TableInfo } from '../api.ts';
import { DEFAULT_LEXICAL } from '../api.ts';
import { getTable } from './catalog.ts';
import { type Ctx, dataTable, sysTable } from './context.ts';
import { indexed, postingInserts } from './lexical.ts';
import { addLasting, readLasting, StatsChange } from './lexical-stats.ts';
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
  const cql = `SELECT "key", "text", WRITETIME("text") AS wt, TTL("text") AS tl FROM ${dataTable(ctx, t.keyspace, t.name)}`;
  for await (const page of ctx.session.pages(cql, [], { fetchSize: 500, ctx: errCtx })) {
    const expiring = new Set(page.filter((r) => r.tl != null).map((r) => r.key as string));
    const stats = await StatsChange.of(ctx, t, expiring);
    const now = Date.now();
    const groups = page.map((r) => {
      const key = r.key as string;
      const x = indexed(t, r.text as string | null);
      const ttl = r.tl == null ? 0 : Number(r.tl);
      if (ttl === 0 && x !== null) {
        rows += 1;
        tokens += x.length;
      }
      const bucket = ttl > 0 && !stats.inBucket(key) ? stats.add(key, x, ttl, now) : [];
      return [...postingInserts(ctx, t, key, x, r.wt, ttl), ...bucket];
    });
    await writeGroups(ctx, groups, errCtx);
    await stats.apply();
  }
  const claim = await ctx.session.execute(
    'lwt',
    `UPDATE ${sysTable(ctx, 'tables')} SET lexical_tokenizer = ? WHERE keyspace_name = ? AND table_name = ? IF lexical_tokenizer = null`,
    [DEFAULT_LEXICAL.tokenizer, t.keyspace, t.name],
    { ctx: errCtx },
  );
  if (!claim.wasApplied()) return;
  const now = await readLasting(ctx, t);
  await addLasting(ctx, t, rows - now.rows, tokens - now.tokens);
}
