import { ServiceError } from '../errors.ts';
import type { KeyspaceInfo, Storage, TableInfo } from '../storage/api.ts';

export async function requireTable(storage: Storage, keyspace: string, table: string): Promise<TableInfo> {
  const t = await storage.getTable(keyspace, table);
  if (t !== null) return t;
  if ((await storage.getKeyspace(keyspace)) === null) {
    throw new ServiceError('keyspace_not_found', `Keyspace "${keyspace}" does not exist.`);
  }
  throw new ServiceError('table_not_found', `Table "${table}" does not exist in keyspace "${keyspace}".`);
}

export async function requireKeyspaceExists(storage: Storage, keyspace: string): Promise<KeyspaceInfo> {
  const ks = await storage.getKeyspace(keyspace);
  if (ks === null) throw new ServiceError('keyspace_not_found', `Keyspace "${keyspace}" does not exist.`);
  return ks;
}
