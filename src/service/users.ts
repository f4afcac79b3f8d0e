import { invalid, ServiceError, type FieldError } from '../errors.ts';
import type { User } from '../storage/api.ts';
import type { Caller } from './caller.ts';
import type { Deps } from './deps.ts';
import { planOf } from './quota.ts';
import { checkWellFormed } from './validate.ts';

/** The specification's user record (2.9) plus the plan; `account_id` is the user's id. */
export interface UserView {
  account_id: string;
  name: string;
  email: string;
  plan: string;
  connections: { type: string; id: string }[];
  created_at: string;
}

export const userView = (u: User): UserView => ({
  account_id: u.id,
  name: u.name,
  email: u.email,
  plan: u.plan,
  connections: u.connections,
  created_at: u.createdAt,
});

export async function requireUser(deps: Deps, id: string): Promise<User> {
  const user = await deps.storage.getUser(id);
  if (user === null) throw new ServiceError('user_not_found', `No user with account_id "${id}".`);
  return user;
}

/** Printable text for names and ids that are shown back: no control characters, well-formed. */
function checkLabel(value: string, path: string, errors: FieldError[]): void {
  if (value.trim() === '') errors.push({ path, message: 'must not be blank' });
  else if (/[\u0000-\u001f\u007f]/.test(value)) errors.push({ path, message: 'must not contain control characters' });
  else checkWellFormed(value, path, errors);
}

/** Only administrators reach this (route permission). */
export async function createUser(deps: Deps, input: { name: string; email: string }): Promise<UserView> {
  const errors: FieldError[] = [];
  checkLabel(input.name, '/body/name', errors);
  if (errors.length) throw invalid(errors);
  return userView(await deps.storage.createUser({ name: input.name.trim(), email: input.email, plan: 'free' }));
}

/** Connections a user may hold: each is stored with the user and shown by GET /v1/user/. */
const MAX_CONNECTIONS = 100;

/** The caller's own user, with its plan's limits and current usage. */
export async function currentUser(deps: Deps, caller: Caller) {
  const user = await requireUser(deps, caller.userId);
  const limits = planOf(deps.config, user);
  const usage = await deps.storage.usageOf(user.id);
  return {
    ...userView(user),
    limits: { max_vectors: limits.maxVectors, max_file_bytes: limits.maxFileBytes, requests_per_minute: limits.requestsPerMinute, max_keyspaces: limits.maxKeyspaces },
    usage: { vectors: usage.vectors, file_bytes: usage.fileBytes },
    // What the calling key itself may do, so clients (the console) need not probe.
    key: { key_id: caller.keyId, permissions: caller.permissions, resources: caller.resources },
  };
}

export async function listUsers(deps: Deps): Promise<{ users: UserView[] }> {
  return { users: (await deps.storage.listUsers()).map(userView) };
}

export async function getUser(deps: Deps, id: string): Promise<UserView> {
  return userView(await requireUser(deps, id));
}

/** Records a connection on the caller's user; recording the same one again changes nothing. */
export async function addConnection(deps: Deps, caller: Caller, conn: { type: string; id: string }) {
  const errors: FieldError[] = [];
  checkLabel(conn.type, '/body/type', errors);
  checkLabel(conn.id, '/body/id', errors);
  if (errors.length) throw invalid(errors);
  const user = await requireUser(deps, caller.userId);
  const known = user.connections.some((c) => c.type === conn.type && c.id === conn.id);
  if (!known && user.connections.length >= MAX_CONNECTIONS) {
    throw invalid([{ path: '/body', message: `a user holds at most ${MAX_CONNECTIONS} connections` }]);
  }
  await deps.storage.addConnection(caller.userId, { type: conn.type, id: conn.id });
  return { type: conn.type, id: conn.id, status: 'connected' as const };
}
