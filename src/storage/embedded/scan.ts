/** Paging through a table by key, for export: the UNIQUE (table_id, key) index serves it. */
import type { VectorRow, Metadata } from '../api.ts';
import type { Catalog } from './catalog.ts';
import { blobToVector, type Db } from './sql.ts';
import { expiryField, LIVE } from './expiry.ts';

/** Rows expired as of `now` are left out (the sweep may not have removed them yet). */
export function scanVectors(db: Db, catalog: Catalog, keyspace: string, table: string, opts: { cursor?: string | null; limit: number }, now: number): { rows: VectorRow[]; cursor: string | null } {
  const t = catalog.require(keyspace, table);
  const limit = Math.max(1, Math.min(opts.limit, 10_000));
  const after = opts.cursor ?? null;
  const rows = db
    .stmt(
      `SELECT v.key, p.vector, v.metadata, p.text, v.expires_at FROM vectors v JOIN vector_payloads p ON p.id = v.id
       WHERE v.table_id = ? AND (? IS NULL OR v.key > ?) AND ${LIVE} ORDER BY v.key LIMIT ?`,
    )
    .all(t.meta.id, after, after, now, limit + 1) as { key: string; vector: Buffer; metadata: string; text: string | null; expires_at: number | null }[];
  const more = rows.length > limit;
  const page = rows.slice(0, limit).map((r) => ({ key: r.key, vector: blobToVector(r.vector), metadata: JSON.parse(r.metadata) as Metadata, text: r.text, ...expiryField(r.expires_at) }));
  // The cursor is the last key itself: keys are the order, and a key is at most 512 bytes.
  return { rows: page, cursor: more ? page[page.length - 1].key : null };
}
