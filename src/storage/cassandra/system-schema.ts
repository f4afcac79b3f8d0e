/**
 * The system keyspace (default `vss_system`): catalog, accounts, metadata records, files and
 * webhook events, so that any number of service processes share one truth and hold no state of
 * their own.
 *
 *   keyspaces         name -> owner, replication, created_at
 *   tables            (keyspace_name) table_name -> dimension, metric, model, created_at, lexical_tokenizer,
 *                     filter_terms, counted, expiry_counts
 *   users             id -> name, email, plan, connections (JSON), created_at
 *   users_by_email    lower-cased email -> user id   (an LWT makes e-mails unique)
 *   api_keys          hash -> the key record         (authentication is one partition read)
 *   api_key_ids       id -> hash                      (get and revoke by id)
 *   metadata_records  (keyspace_name, table_name) source_file -> the record's fields
 *   files             (keyspace_name) table_name, name -> size, sha256, type, chunks, content_id,
 *                     op, op_until, key_bound (LWT-only: one upload or delete of a name at a time)
 *   file_content      (content_id) seq -> 256 KiB pieces of a file's bytes
 *   webhook_events    id -> type, user_id, plan, applied, received_at
 *   lexical_postings  (keyspace_name, table_name, term) tf DESC, dl, key   (lexical.ts)
 *   lexical_stats     (keyspace_name, table_name) -> docs, tokens counters (rows that never expire)
 *   lexical_stats_expiring (keyspace_name, table_name) bucket -> docs, tokens counters (lexical-stats.ts)
 *   lexical_row_buckets (keyspace_name, table_name, key) -> bucket   (with the row's TTL)
 *   row_counts        (keyspace_name, table_name) -> rows, expiring counters (counts.ts)
 *   row_counts_expiring (keyspace_name, table_name) width, bucket -> rows counter (expiry-counts.ts)
 *
 * Creation is idempotent and skips what system_schema already lists, so concurrent starts of
 * several service processes issue no DDL once the schema exists; columns added here later are
 * added to existing tables (ALTER TABLE ... ADD).
 */
import { q } from './names.ts';
import type { Session } from './session.ts';

interface TableDef {
  columns: [name: string, type: string][];
  primaryKey: string;
  /** CQL table options, e.g. a clustering order. */
  options?: string;
}

const TABLES: Record<string, TableDef> = {
  keyspaces: { columns: [['name', 'text'], ['owner', 'text'], ['replication', 'text'], ['created_at', 'timestamp']], primaryKey: '(name)' },
  tables: {
    columns: [
      ['keyspace_name', 'text'],
      ['table_name', 'text'],
      ['dimension', 'int'],
      ['metric', 'text'],
      ['model', 'text'],
      ['created_at', 'timestamp'],
      // null on tables made before lexical search: they tokenize as porter.
      ['lexical_tokenizer', 'text'],
      // true once the table's "terms" column holds every row's metadata terms (filter-terms.ts).
      ['filter_terms', 'boolean'],
      // true when row_counts (plus count_correction) counts the table: since its creation, or since
      // a repair after a failed counter update (counts-repair.ts).
      ['counted', 'boolean'],
      // Added to row_counts' "rows" by a count: what a repair found the counter off by (null: 0).
      ['count_correction', 'bigint'],
      // true when the data table has "expiry_bucket" and its index: expiring rows are counted by bucket (expiry-counts.ts).
      ['expiry_counts', 'boolean'],
    ],
    primaryKey: '(keyspace_name, table_name)',
  },
  users: {
    columns: [['id', 'text'], ['name', 'text'], ['email', 'text'], ['plan', 'text'], ['connections', 'text'], ['created_at', 'timestamp']],
    primaryKey: '(id)',
  },
  users_by_email: { columns: [['email', 'text'], ['user_id', 'text']], primaryKey: '(email)' },
  api_keys: {
    columns: [
      ['hash', 'text'],
      ['id', 'text'],
      ['user_id', 'text'],
      ['name', 'text'],
      ['permissions', 'text'],
      ['resources', 'list<text>'],
      ['created_at', 'timestamp'],
      ['revoked_at', 'timestamp'],
    ],
    primaryKey: '(hash)',
  },
  api_key_ids: { columns: [['id', 'text'], ['hash', 'text']], primaryKey: '(id)' },
  metadata_records: {
    columns: [
      ['keyspace_name', 'text'],
      ['table_name', 'text'],
      ['source_file', 'text'],
      ['raw_value', 'text'],
      ['source_type', 'text'],
      ['processing_details', 'text'],
    ],
    primaryKey: '((keyspace_name, table_name), source_file)',
  },
  files: {
    columns: [
      ['keyspace_name', 'text'],
      ['table_name', 'text'],
      ['name', 'text'],
      ['size', 'bigint'],
      ['sha256', 'text'],
      ['type', 'text'],
      ['chunks', 'int'],
      ['content_id', 'uuid'],
      ['created_at', 'text'],
      // The upload or delete that last took the name, the end of its lease, and how many chunk
      // keys `<name>#<i>` may exist (files.ts).
      ['op', 'uuid'],
      ['op_until', 'timestamp'],
      ['key_bound', 'int'],
    ],
    primaryKey: '((keyspace_name), table_name, name)',
  },
  file_content: { columns: [['content_id', 'uuid'], ['seq', 'int'], ['data', 'blob']], primaryKey: '((content_id), seq)' },
  // Lexical search (lexical.ts): a row's terms, each with its count in the row (tf) and the row's
  // length in tokens (dl), best first within a term; and per table the rows with text and their tokens.
  lexical_postings: {
    columns: [['keyspace_name', 'text'], ['table_name', 'text'], ['term', 'text'], ['tf', 'int'], ['dl', 'int'], ['key', 'text']],
    primaryKey: '((keyspace_name, table_name, term), tf, dl, key)',
    options: 'WITH CLUSTERING ORDER BY (tf DESC, dl ASC, key ASC)',
  },
  lexical_stats: {
    columns: [['keyspace_name', 'text'], ['table_name', 'text'], ['docs', 'counter'], ['tokens', 'counter']],
    primaryKey: '((keyspace_name, table_name))',
  },
  // Expiring rows' share of those counters by expiry bucket, and the bucket each such row is
  // counted in (written with the row's TTL), so that they leave BM25's statistics when they expire.
  lexical_stats_expiring: {
    columns: [['keyspace_name', 'text'], ['table_name', 'text'], ['bucket', 'bigint'], ['docs', 'counter'], ['tokens', 'counter']],
    primaryKey: '((keyspace_name, table_name), bucket)',
  },
  lexical_row_buckets: {
    columns: [['keyspace_name', 'text'], ['table_name', 'text'], ['key', 'text'], ['bucket', 'bigint']],
    primaryKey: '((keyspace_name, table_name, key))',
  },
  row_counts: {
    // expiring: above 0 once the table has had rows that expire (counted in row_counts_expiring);
    // changes: one more at every update of "rows", so a repair can tell that none landed (counts-repair.ts).
    columns: [['keyspace_name', 'text'], ['table_name', 'text'], ['rows', 'counter'], ['expiring', 'counter'], ['changes', 'counter']],
    primaryKey: '((keyspace_name, table_name))',
  },
  // Expiring rows by the end of their expiry minute, day and 30-day period (expiry-counts.ts).
  row_counts_expiring: {
    columns: [['keyspace_name', 'text'], ['table_name', 'text'], ['width', 'int'], ['bucket', 'bigint'], ['rows', 'counter']],
    primaryKey: '((keyspace_name, table_name), width, bucket)',
  },
  webhook_events: {
    columns: [['id', 'text'], ['type', 'text'], ['user_id', 'text'], ['plan', 'text'], ['applied', 'boolean'], ['received_at', 'timestamp']],
    primaryKey: '(id)',
  },
};

export async function ensureSystemSchema(session: Session, systemKeyspace: string, replication: string): Promise<void> {
  const ctx = { keyspace: systemKeyspace, action: 'creating the system keyspace' };
  const ks = await session.execute('read', 'SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = ?', [systemKeyspace], { ctx });
  if (ks.rowLength === 0) {
    await session.execute('ddl', `CREATE KEYSPACE IF NOT EXISTS ${q(systemKeyspace)} WITH replication = ${replication}`, [], { ctx });
  }
  const existing = await session.execute('read', 'SELECT table_name, column_name FROM system_schema.columns WHERE keyspace_name = ?', [systemKeyspace], { ctx });
  const have = new Map<string, Set<string>>();
  for (const r of existing.rows) {
    const t = r.table_name as string;
    if (!have.has(t)) have.set(t, new Set());
    have.get(t)!.add(r.column_name as string);
  }
  for (const [name, def] of Object.entries(TABLES)) {
    const table = `${q(systemKeyspace)}.${q(name)}`;
    const cols = have.get(name);
    if (!cols) {
      const columns = def.columns.map(([c, type]) => `${q(c)} ${type}`).join(', ');
      await session.execute('ddl', `CREATE TABLE IF NOT EXISTS ${table} (${columns}, PRIMARY KEY ${def.primaryKey})${def.options ? ` ${def.options}` : ''}`, [], { ctx });
      continue;
    }
    for (const [c, type] of def.columns) {
      if (cols.has(c)) continue;
      try {
        await session.execute('ddl', `ALTER TABLE ${table} ADD ${q(c)} ${type}`, [], { ctx });
      } catch (err) {
        // Another process starting at the same time added it first.
        if (!/exist|conflicts/i.test((err as Error).message)) throw err;
      }
    }
  }
}
