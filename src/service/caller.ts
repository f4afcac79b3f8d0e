import { ServiceError } from '../errors.ts';
import type { KeyspaceInfo, Permission, Storage } from '../storage/api.ts';

/** The authenticated principal of a request: one API key of one user. */
export interface Caller {
  readonly keyId: string;
  readonly userId: string;
  readonly permissions: Permission;
  /** Keyspace names the key may reach, or ['*']. */
  readonly resources: readonly string[];
}

const RANK: Record<Permission, number> = { Read: 1, Write: 2, All: 3 };

/** True when `have` includes everything `need` allows. */
export const permits = (have: Permission, need: Permission): boolean => RANK[have] >= RANK[need];

/**
 * An administrator: an `All` key whose resources are `*`. Only it manages users, other users'
 * keys and keyspaces, and sees what spans tenants (metrics, system information, containers);
 * an `All` key limited to some keyspaces is its own user's, within those keyspaces.
 */
export const isAdministrator = (caller: Caller): boolean => caller.permissions === 'All' && caller.resources.includes('*');

export function requireAdministrator(caller: Caller): void {
  if (!isAdministrator(caller)) {
    throw new ServiceError('forbidden', 'This operation needs an administrator key: All permission over every keyspace (resources "*").');
  }
}

export function requirePermission(caller: Caller, need: Permission): void {
  if (!permits(caller.permissions, need)) {
    throw new ServiceError('forbidden', `This operation needs a key with ${need} permission; this key has ${caller.permissions}.`);
  }
}

export const coversResource = (resources: readonly string[], keyspace: string): boolean =>
  resources.includes('*') || resources.includes(keyspace);

/**
 * The one keyspace gate every route goes through. A keyspace outside the key's `resources`
 * is forbidden (403); one owned by another user is reported as missing (404) so that keys
 * cannot probe which names other tenants use. Administrators reach every keyspace.
 * Returns the keyspace, or null when it does not exist (the caller decides whether that is a 404).
 */
export async function authorizeKeyspace(storage: Storage, caller: Caller, keyspace: string): Promise<KeyspaceInfo | null> {
  if (!coversResource(caller.resources, keyspace)) {
    throw new ServiceError('forbidden', `This key does not cover keyspace "${keyspace}".`);
  }
  const ks = await storage.getKeyspace(keyspace);
  if (ks === null) return null;
  return ownsOrAdministers(caller, ks) ? ks : null;
}

/** The caller's own keyspaces and ownerless ones, or every one for an administrator. */
const ownsOrAdministers = (caller: Caller, ks: KeyspaceInfo): boolean => isAdministrator(caller) || ks.owner === null || ks.owner === caller.userId;

/** Names of the keyspaces the caller reaches: as authorizeKeyspace, over every keyspace there is. */
export async function reachableKeyspaces(storage: Storage, caller: Caller): Promise<string[]> {
  return (await storage.listKeyspaces()).filter((k) => ownsOrAdministers(caller, k) && coversResource(caller.resources, k.name)).map((k) => k.name);
}

export async function requireKeyspace(storage: Storage, caller: Caller, keyspace: string): Promise<KeyspaceInfo> {
  const ks = await authorizeKeyspace(storage, caller, keyspace);
  if (ks === null) throw new ServiceError('keyspace_not_found', `Keyspace "${keyspace}" does not exist.`);
  return ks;
}
