/** Metadata records: one per (keyspace, table, source_file); writing one again replaces it. */
import { invalid, type FieldError } from '../../errors.ts';
import type { MetadataRecord } from '../api.ts';
import type { Db } from './sql.ts';

const FIELDS = ['keyspace', 'table', 'source_file', 'raw_value', 'source_type', 'processing_details'] as const;

interface Row {
  keyspace: string;
  table_name: string;
  source_file: string;
  raw_value: string;
  source_type: string;
  processing_details: string;
  expires_at: number | null;
}

const toRecord = (r: Row): MetadataRecord => ({
  keyspace: r.keyspace,
  table: r.table_name,
  source_file: r.source_file,
  raw_value: r.raw_value,
  source_type: r.source_type,
  processing_details: r.processing_details,
  // Only records that expire carry the field, as they were written.
  ...(r.expires_at !== null ? { expires_at: r.expires_at } : {}),
});

export class MetadataRecords {
  readonly #db: Db;

  readonly #now: () => number;

  /** `now`: the clock records expire by (ms since the epoch). */
  constructor(db: Db, now: () => number) {
    this.#db = db;
    this.#now = now;
  }

  upsert(records: MetadataRecord[]): void {
    const errors: FieldError[] = [];
    records.forEach((r, i) => {
      for (const f of FIELDS) if (typeof r[f] !== 'string') errors.push({ path: `/records/${i}/${f}`, message: 'must be a string' });
      if (r.expires_at != null && !Number.isSafeInteger(r.expires_at)) errors.push({ path: `/records/${i}/expires_at`, message: 'must be an integer (ms since the epoch) or null' });
    });
    if (errors.length > 0) throw invalid(errors);
    const put = this.#db.stmt(
      `INSERT INTO metadata_records (keyspace, table_name, source_file, raw_value, source_type, processing_details, expires_at)
       VALUES (@keyspace, @table, @source_file, @raw_value, @source_type, @processing_details, @expires_at)
       ON CONFLICT (keyspace, table_name, source_file) DO UPDATE SET
         raw_value = excluded.raw_value, source_type = excluded.source_type, processing_details = excluded.processing_details,
         expires_at = excluded.expires_at`,
    );
    this.#db.tx(() => {
      for (const r of records) put.run({ keyspace: r.keyspace, table: r.table, source_file: r.source_file, raw_value: r.raw_value, source_type: r.source_type, processing_details: r.processing_details, expires_at: r.expires_at ?? null });
    });
  }

  get(keyspace: string, table: string, sourceFiles: string[]): Map<string, MetadataRecord> {
    const out = new Map<string, MetadataRecord>();
    if (sourceFiles.length === 0) return out;
    const rows = this.#db
      .stmt(
        `SELECT * FROM metadata_records WHERE keyspace = ? AND table_name = ? AND source_file IN (SELECT value FROM json_each(?))
         AND (expires_at IS NULL OR expires_at > ?)`,
      )
      .all(keyspace, table, JSON.stringify(sourceFiles), this.#now()) as Row[];
    for (const r of rows) out.set(r.source_file, toRecord(r));
    return out;
  }

  /** Deletes up to `max` records expired as of now; answers how many (expiry-sweep.ts). */
  sweepExpired(max: number): number {
    return this.#db.txUnsynced(() => this.#db
      .stmt(
        `DELETE FROM metadata_records WHERE (keyspace, table_name, source_file) IN
           (SELECT keyspace, table_name, source_file FROM metadata_records WHERE expires_at <= ? LIMIT ?)`,
      )
      .run(this.#now(), max).changes);
  }

  /** Records by source_file; the cursor is the last source_file of the page. */
  scan(keyspace: string, table: string, opts: { cursor?: string | null; limit: number }): { records: MetadataRecord[]; cursor: string | null } {
    const limit = Math.max(1, Math.min(Math.floor(opts.limit) || 1, 10_000));
    const after = opts.cursor ?? null;
    const rows = this.#db
      .stmt('SELECT * FROM metadata_records WHERE keyspace = ? AND table_name = ? AND (? IS NULL OR source_file > ?) AND (expires_at IS NULL OR expires_at > ?) ORDER BY source_file LIMIT ?')
      .all(keyspace, table, after, after, this.#now(), limit + 1) as Row[];
    const page = rows.slice(0, limit).map(toRecord);
    return { records: page, cursor: rows.length > limit ? page[page.length - 1].source_file : null };
  }
}
