/** A user's usage: vectors and file bytes over the keyspaces they own (row counters: counts.ts). */
import type { Usage } from '../api.ts';
import { listKeyspaces, listTables } from './catalog.ts';
import type { Ctx } from './context.ts';
import { fileBytes } from './files.ts';

export async function usageOf(ctx: Ctx, userId: string): Promise<Usage> {
  const owned = (await listKeyspaces(ctx, userId)).map((k) => k.name);
  let vectors = 0;
  for (const ks of owned) for (const t of await listTables(ctx, ks)) vectors += t.rowCount;
  return { vectors, fileBytes: await fileBytes(ctx, owned) };
}
