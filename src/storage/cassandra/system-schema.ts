/**
 * The system keyspace (default `vss_system`): the catalog, accounts, metadata records and webhook
 * events, so that any number of service processes share one truth and hold no state of their own.
 *
 *   keyspaces         name -> owner, replication, created_at
 *   tables            (keyspace_name) table_name -> dimension, metric, model, created_at
 *   users             id -> name, email, plan, connections (JSON), created_at
 *   users_by_email    lower-cased email -> user id   (an LWT makes e-mails unique)
 *   api_keys          hash -> the key record         (authentication is one partition read)
 *   metadata_records  (keyspace_name, table_name) source_file -> the record's fields
 *   webhook_events    id -> type, payload, received_at (payment-provider deliveries, for dedup)
 *
 * Creation is idempotent and skips what system_schema already lists, so concurrent starts of
 * several service processes issue no DDL once the schema exists.
 */
import { q } from './names.ts';
import type { Session } from './session.ts';

const TABLES: Record<string, string> = {
  keyspaces: '(name text PRIMARY KEY, owner text, replication text, created_at timestamp)',
  tables:
    '(keyspace_name text, table_name text, dimension int, metric text, model text, created_at timestamp, PRIMARY KEY (keyspace_name, table_name))',
  users: '(id text PRIMARY KEY, name text, email text, plan text, connections text, created_at timestamp)',
  users_by_email: '(email text PRIMARY KEY, user_id text)',
  api_keys:
    '(hash text PRIMARY KEY, id text, user_id text, name text, permissions text, resources list<text>, created_at timestamp, revoked_at timestamp)',
  metadata_records:
    '(keyspace_name text, table_name text, source_file text, raw_value text, source_type text, processing_details text, PRIMARY KEY ((keyspace_name, table_name), source_file))',
  webhook_events: '(id text PRIMARY KEY, type text, payload text, received_at timestamp)',
};

export async function ensureSystemSchema(session: Session, systemKeyspace: string, replication: string): Promise<void> {
  const ctx = { keyspace: systemKeyspace, action: 'creating the system keyspace' };
  const ks = await session.execute('read', 'SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = ?', [systemKeyspace], { ctx });
  if (ks.rowLength === 0) {
    await session.execute('ddl', `CREATE KEYSPACE IF NOT EXISTS ${q(systemKeyspace)} WITH replication = ${replication}`, [], { ctx });
  }
  const existing = await session.execute('read', 'SELECT table_name FROM system_schema.tables WHERE keyspace_name = ?', [systemKeyspace], { ctx });
  const have = new Set(existing.rows.map((r) => r.table_name as string));
  for (const [name, columns] of Object.entries(TABLES)) {
    if (!have.has(name)) {
      await session.execute('ddl', `CREATE TABLE IF NOT EXISTS ${q(systemKeyspace)}.${q(name)} ${columns}`, [], { ctx });
    }
  }
}
