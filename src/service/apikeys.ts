import { ServiceError } from '../errors.ts';
import type { ApiKeyRecord, Permission } from '../storage/api.ts';
import { coversResource, isAdministrator, permits, type Caller } from './caller.ts';
import type { Deps } from './deps.ts';
import { hashKey, newSecret } from './keys.ts';
import { requireUser } from './users.ts';

export interface KeyView {
  key_id: string;
  name: string;
  user_id: string;
  permissions: Permission;
  resources: string[];
  created_at: string;
  revoked_at: string | null;
}

const keyView = (k: ApiKeyRecord): KeyView => ({
  key_id: k.id,
  name: k.name,
  user_id: k.userId,
  permissions: k.permissions,
  resources: k.resources,
  created_at: k.createdAt,
  revoked_at: k.revokedAt,
});

/**
 * The escalation rules in one place: a key gives at most what it has. Permission at most the
 * caller's; resources a subset of the caller's (`*` only from a `*` key); another user only
 * from an administrator (an `All` key over `*`).
 */
function checkGrant(caller: Caller, userId: string, permissions: Permission, resources: string[]): void {
  if (userId !== caller.userId && !isAdministrator(caller)) {
    throw new ServiceError('forbidden', "Only an administrator key (All, resources \"*\") can manage another user's keys.");
  }
  if (!permits(caller.permissions, permissions)) {
    throw new ServiceError('forbidden', `A ${caller.permissions} key cannot make a ${permissions} key.`);
  }
  const wider = widerThan(caller, resources);
  if (wider.length > 0) {
    throw new ServiceError('forbidden', `This key does not cover ${wider.map((r) => `"${r}"`).join(', ')}, so it cannot grant it.`);
  }
}

/** Those of `resources` the caller does not cover (`*` is covered only by `*`). */
const widerThan = (caller: Caller, resources: readonly string[]): string[] =>
  resources.filter((r) => (r === '*' ? !caller.resources.includes('*') : !coversResource(caller.resources, r)));

export async function generateKey(deps: Deps, caller: Caller, input: { name?: string; user_id?: string; permissions?: Permission; resources?: string[] }) {
  const userId = input.user_id ?? caller.userId;
  const permissions = input.permissions ?? caller.permissions;
  const resources = [...new Set(input.resources ?? caller.resources)];
  checkGrant(caller, userId, permissions, resources);
  await requireUser(deps, userId);
  const secret = newSecret();
  const record = await deps.storage.createApiKey({ userId, name: input.name ?? 'key', hash: hashKey(secret), permissions, resources });
  // The one and only time the secret leaves the server.
  return { key: secret, ...keyView(record) };
}

/** A user's keys: the caller's own user's within its resources, or any user's for an administrator. */
export async function listKeys(deps: Deps, caller: Caller, userId?: string): Promise<{ keys: KeyView[] }> {
  const target = userId ?? caller.userId;
  if (target !== caller.userId && !isAdministrator(caller)) {
    throw new ServiceError('forbidden', "Only an administrator key (All, resources \"*\") can list another user's keys.");
  }
  const keys = await deps.storage.listApiKeys(target);
  return { keys: keys.filter((k) => widerThan(caller, k.resources).length === 0).map(keyView) };
}

/**
 * A key the caller may manage (revoke or rotate): its own user's (or any, for an administrator),
 * and no wider than itself, in permission and in resources: a key it could have granted.
 * Another user's key is reported as missing, as another user's keyspace is.
 */
async function manageable(deps: Deps, caller: Caller, keyId: string): Promise<ApiKeyRecord> {
  const key = await deps.storage.getApiKey(keyId);
  if (key === null || (key.userId !== caller.userId && !isAdministrator(caller))) {
    throw new ServiceError('key_not_found', `No key "${keyId}".`);
  }
  if (!permits(caller.permissions, key.permissions)) {
    throw new ServiceError('forbidden', `A ${caller.permissions} key cannot manage a ${key.permissions} key.`);
  }
  checkGrant(caller, key.userId, key.permissions, key.resources);
  return key;
}

export async function revokeKey(deps: Deps, caller: Caller, keyId: string): Promise<KeyView> {
  const key = await manageable(deps, caller, keyId);
  const revoked = await deps.storage.revokeApiKey(key.id);
  return keyView(revoked ?? key);
}

/** A new secret with the same grant; the old key stays valid until it is revoked. */
export async function rotateKey(deps: Deps, caller: Caller, keyId: string) {
  const old = await manageable(deps, caller, keyId);
  const secret = newSecret();
  const record = await deps.storage.createApiKey({ userId: old.userId, name: old.name, hash: hashKey(secret), permissions: old.permissions, resources: old.resources });
  return { key: secret, ...keyView(record), rotated_from: old.id };
}
