/**
 * Restoring a table's row counter after a failed update. A counter update that times out may or
 * may not have landed, so the table is marked uncounted (counts.ts) and counted by key scans; its
 * writes keep updating the counter all the same. A repair finds what the counter is off by:
 *
 *   1. read the counter (its "rows", and "changes", which every update of "rows" bumps);
 *   2. count the keys by a scan;
 *   3. wait REPAIR_GRACE_MS, then read the counter again.
 *
 * A write updates the counter after its rows, so if "changes" did not move, no write's count landed
 * from before the scan until the grace after it: the scan and the counter saw the same rows (unless
 * a write's count came more than the grace after its rows). The difference goes to the catalog as
 * `count_correction`, with `counted = true`, written with the timestamp of the repair's start: a
 * failure marked meanwhile has a later one and wins, so the table stays uncounted until the next
 * repair. Two repairs at once that both find the counter still write the same correction.
 *
 * Tables with expiring rows are not repaired (rows expiring during the scan leave no trace in the
 * counter to check), nor tables made before the expiry buckets.
 */
import { type Ctx, sysTable } from './context.ts';
import type { StoredTable } from './counts.ts';
import { scanCount } from './key-scan.ts';
import { memosOf, tableId } from './memos.ts';

/** How late a write's count may land after its rows for a repair to still be right. */
export const REPAIR_GRACE_MS = 10_000;
/** A process tries a table's repair at most this often. */
const REPAIR_EVERY_MS = 10 * 60_000;

export type RepairOutcome = 'repaired' | 'busy' | 'unrepairable';

interface CounterState {
  rows: number;
  changes: number;
  expiring: number;
}

async function readCounter(ctx: Ctx, t: { keyspace: string; name: string }): Promise<CounterState> {
  const rs = await ctx.session.execute('read', `SELECT "rows", expiring, changes FROM ${sysTable(ctx, 'row_counts')} WHERE keyspace_name = ? AND table_name = ?`, [t.keyspace, t.name], {
    ctx: { keyspace: t.keyspace, table: t.name, action: 'repairing the row count' },
  });
  const r = rs.rowLength > 0 ? rs.first() : null;
  const num = (v: unknown): number => (v === null || v === undefined ? 0 : Number(String(v)));
  return { rows: num(r?.rows), changes: num(r?.changes), expiring: num(r?.expiring) };
}

/** One repair of the table's counter (see above); `busy`: writes landed meanwhile, try later. */
export async function repairRowCount(ctx: Ctx, keyspace: string, table: string, graceMs = REPAIR_GRACE_MS): Promise<RepairOutcome> {
  const since = Date.now();
  const flags = await ctx.session.execute('read', `SELECT counted, expiry_counts FROM ${sysTable(ctx, 'tables')} WHERE keyspace_name = ? AND table_name = ?`, [keyspace, table], {
    ctx: { keyspace, table, action: 'repairing the row count' },
  });
  if (flags.rowLength === 0 || flags.first().expiry_counts !== true) return 'unrepairable';
  if (flags.first().counted === true) return 'repaired';
  const t = { keyspace, name: table };
  const before = await readCounter(ctx, t);
  if (before.expiring > 0) return 'unrepairable';
  const n = await scanCount(ctx, t.keyspace, t.name);
  await new Promise((r) => setTimeout(r, graceMs).unref());
  const after = await readCounter(ctx, t);
  if (after.expiring > 0) return 'unrepairable';
  if (after.changes !== before.changes) return 'busy';
  await ctx.session.write(
    `UPDATE ${sysTable(ctx, 'tables')} USING TIMESTAMP ${since * 1000} SET counted = true, count_correction = ? WHERE keyspace_name = ? AND table_name = ?`,
    [n - after.rows, t.keyspace, t.name],
    { keyspace: t.keyspace, table: t.name, action: 'repairing the row count' },
  );
  // This process never remembered the table while uncounted (catalog.ts): its next use reads the flag.
  memosOf(ctx).rowScans.forget(tableId(t.keyspace, t.name));
  return 'repaired';
}

const tried = new WeakMap<Ctx, Map<string, number>>();

/**
 * Starts a repair of an uncounted table in the background, unless this process tried one in the
 * last REPAIR_EVERY_MS. Nothing waits on it; a failure (an outage, the store closed) is retried later.
 */
export function scheduleRepair(ctx: Ctx, t: StoredTable): void {
  if (t.counted || !t.expiryCounts) return;
  const last = tried.get(ctx) ?? new Map<string, number>();
  tried.set(ctx, last);
  const id = tableId(t.keyspace, t.name);
  const now = Date.now();
  if (now - (last.get(id) ?? -Infinity) < REPAIR_EVERY_MS) return;
  if (last.size >= 10_000) last.clear();
  last.set(id, now);
  void repairRowCount(ctx, t.keyspace, t.name).catch(() => undefined);
}
