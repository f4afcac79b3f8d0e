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
}

const toRecord = (r: Row): MetadataRecord => ({
  keyspace: r.keyspace,
  table: r.table_name,
  source_file: r.source_file,
  raw_value: r.raw_value,
  source_type: r.source_type,
  processing_details: r.processing_details,
});

export class MetadataRecords {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  upsert(records: MetadataRecord[]): void {
    const errors: FieldError[] = [];
    records.forEach((r, i) => {
      for (const f of FIELDS) if (typeof r[f] !== 'string') errors.push({ path: `/records/${i}/${f}`, message: 'must be a string' });
    });
    if (errors.length > 0) throw invalid(errors);
    const put = this.#db.stmt(
      `INSERT INTO metadata_records (keyspace, table_name, source_file, raw_value, source_type, processing_details)
       VALUES (@keyspace, @table, @source_file, @raw_value, @source_type, @processing_details)
       ON CONFLICT (keyspace, table_name, source_file) DO UPDATE SET
         raw_value = excluded.raw_value, source_type = excluded.source_type, processing_details = excluded.processing_details`,
    );
    this.#db.tx(() => {
      for (const r of records) put.run({ keyspace: r.keyspace, table: r.table, source_file: r.source_file, raw_value: r.raw_value, source_type: r.source_type, processing_details: r.processing_details });
    });
  }

  get(keyspace: string, table: string, sourceFiles: string[]): Map<string, MetadataRecord> {
    const out = new Map<string, MetadataRecord>();
    if (sourceFiles.length === 0) return out;
    const rows = this.#db
      .stmt('SELECT * FROM metadata_records WHERE keyspace = ? AND table_name = ? AND source_file IN (SELECT value FROM json_each(?))')
      .all(keyspace, table, JSON.stringify(sourceFiles)) as Row[];
    for (const r of rows) out.set(r.source_file, toRecord(r));
    return out;
  }

  /** Records by source_file; the cursor is the last source_file of the page. */
  scan(keyspace: string, table: string, opts: { cursor?: string | null; limit: number }): { records: MetadataRecord[]; cursor: string | null } {
    const limit = Math.max(1, Math.min(Math.floor(opts.limit) || 1, 10_000));
    const after = opts.cursor ?? null;
    const rows = this.#db
      .stmt('SELECT * FROM metadata_records WHERE keyspace = ? AND table_name = ? AND (? IS NULL OR source_file > ?) ORDER BY source_file LIMIT ?')
      .all(keyspace, table, after, after, limit + 1) as Row[];
    const page = rows.slice(0, limit).map(toRecord);
    return { records: page, cursor: rows.length > limit ? page[page.length - 1].source_file : null };
  }
}
