/**
 * Users and API keys in the system keyspace. Only the per-request path remembers anything: with
 * `apiKeyCacheMs` (VSS_CASSANDRA_API_KEY_CACHE_MS, at most 1 s) a key found by its hash, and a user
 * found by id (its plan: rate limit, quotas), are not read again for that long (memos.ts). A
 * revocation or plan change through this process takes effect here at once; one through another
 * process within `apiKeyCacheMs`. Misses are never remembered.
 *
 * - E-mails are unique (case-insensitively) through an LWT on users_by_email; the user row is
 *   written after the claim and the claim is released if that write fails.
 * - API keys are stored by the hex SHA-256 of the secret, so authentication is one partition
 *   read (`findApiKeyByHash`); a second key with the same hash is already_exists.
 * - Listing and counting scan these small tables.
 * - Read-modify-write updates (connections, revocation) are compare-and-set LWTs, so concurrent
 *   processes never lose each other's changes; plan changes are `IF EXISTS` so a missing user is
 *   user_not_found rather than a row conjured by an upsert.
 */
import { randomUUID } from 'node:crypto';
import { ServiceError, invalid } from '../../errors.ts';
import type { ApiKeyRecord, Permission, User } from '../api.ts';
import { iso } from './codec.ts';
import { type Ctx, sysTable } from './context.ts';
import { memosOf } from './memos.ts';
import type { Row } from './session.ts';

const emailKey = (email: string): string => email.trim().toLowerCase();

function parseConnections(s: unknown): { type: string; id: string }[] {
  if (typeof s !== 'string' || s === '') return [];
  try {
    const v = JSON.parse(s) as unknown;
    return Array.isArray(v) ? (v as { type: string; id: string }[]) : [];
  } catch {
    return [];
  }
}

const userFromRow = (r: Row): User => ({
  id: r.id as string,
  name: r.name as string,
  email: r.email as string,
  plan: r.plan as string,
  connections: parseConnections(r.connections),
  createdAt: iso(r.created_at),
});

const keyFromRow = (r: Row): ApiKeyRecord => ({
  id: r.id as string,
  userId: r.user_id as string,
  name: r.name as string,
  hash: r.hash as string,
  permissions: r.permissions as Permission,
  resources: (r.resources as string[] | null) ?? [],
  createdAt: iso(r.created_at),
  revokedAt: r.revoked_at ? iso(r.revoked_at) : null,
});

const USER_COLS = 'id, name, email, plan, connections, created_at';
const KEY_COLS = 'hash, id, user_id, name, permissions, resources, created_at, revoked_at';

export async function createUser(ctx: Ctx, u: { name: string; email: string; plan?: string }): Promise<User> {
  if (typeof u?.name !== 'string' || typeof u?.email !== 'string' || u.email.trim() === '') {
    throw invalid([{ path: '/email', message: 'name and email must be strings; email must not be empty' }]);
  }
  const user: User = { id: randomUUID(), name: u.name, email: u.email, plan: u.plan ?? 'free', connections: [], createdAt: new Date().toISOString() };
  const errCtx = { action: 'creating a user' };
  const claim = await ctx.session.execute('lwt', `INSERT INTO ${sysTable(ctx, 'users_by_email')} (email, user_id) VALUES (?, ?) IF NOT EXISTS`, [emailKey(u.email), user.id], {
    ctx: errCtx,
  });
  if (!claim.wasApplied()) throw new ServiceError('already_exists', `A user with e-mail "${u.email}" already exists.`);
  try {
    await ctx.session.write(
      `INSERT INTO ${sysTable(ctx, 'users')} (${USER_COLS}) VALUES (?, ?, ?, ?, ?, ?)`,
      [user.id, user.name, user.email, user.plan, JSON.stringify(user.connections), new Date(user.createdAt)],
      errCtx,
    );
  } catch (e) {
    await ctx.session.execute('write', `DELETE FROM ${sysTable(ctx, 'users_by_email')} WHERE email = ?`, [emailKey(u.email)]).catch(() => undefined);
    throw e;
  }
  return user;
}

/** A user by id: remembered for `apiKeyCacheMs` when found (the rate limit reads the plan per request). */
export async function getUser(ctx: Ctx, id: string): Promise<User | null> {
  return memosOf(ctx).users.get(id, async () => {
    const rs = await ctx.session.execute('read', `SELECT ${USER_COLS} FROM ${sysTable(ctx, 'users')} WHERE id = ?`, [id], { ctx: { action: 'reading a user' } });
    return rs.rowLength > 0 ? userFromRow(rs.first()) : null;
  });
}

export async function getUserByEmail(ctx: Ctx, email: string): Promise<User | null> {
  if (typeof email !== 'string') return null;
  const rs = await ctx.session.execute('read', `SELECT user_id FROM ${sysTable(ctx, 'users_by_email')} WHERE email = ?`, [emailKey(email)], {
    ctx: { action: 'reading a user' },
  });
  if (rs.rowLength === 0) return null;
  return getUser(ctx, rs.first().user_id as string);
}

export async function listUsers(ctx: Ctx): Promise<User[]> {
  const out: User[] = [];
  for await (const page of ctx.session.pages(`SELECT ${USER_COLS} FROM ${sysTable(ctx, 'users')}`)) for (const r of page) out.push(userFromRow(r));
  return out.sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
}

export async function createApiKey(ctx: Ctx, k: Omit<ApiKeyRecord, 'id' | 'createdAt' | 'revokedAt'> & { id?: string }): Promise<ApiKeyRecord> {
  if (typeof k?.hash !== 'string' || k.hash === '') throw invalid([{ path: '/hash', message: 'must be a non-empty string' }]);
  const rec: ApiKeyRecord = {
    id: k.id ?? randomUUID(),
    userId: k.userId,
    name: k.name,
    hash: k.hash,
    permissions: k.permissions,
    resources: [...k.resources],
    createdAt: new Date().toISOString(),
    revokedAt: null,
  };
  const rs = await ctx.session.execute(
    'lwt',
    `INSERT INTO ${sysTable(ctx, 'api_keys')} (hash, id, user_id, name, permissions, resources, created_at) VALUES (?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS`,
    [rec.hash, rec.id, rec.userId, rec.name, rec.permissions, rec.resources, new Date(rec.createdAt)],
    { ctx: { action: 'creating an API key' } },
  );
  if (!rs.wasApplied()) throw new ServiceError('already_exists', 'An API key with this hash already exists.');
  await ctx.session.write(`INSERT INTO ${sysTable(ctx, 'api_key_ids')} (id, hash) VALUES (?, ?)`, [rec.id, rec.hash], { action: 'creating an API key' });
  return rec;
}

async function hashOfKey(ctx: Ctx, id: string): Promise<string | null> {
  const rs = await ctx.session.execute('read', `SELECT hash FROM ${sysTable(ctx, 'api_key_ids')} WHERE id = ?`, [id], { ctx: { action: 'reading an API key' } });
  return rs.rowLength > 0 ? (rs.first().hash as string) : null;
}

export async function getApiKey(ctx: Ctx, id: string): Promise<ApiKeyRecord | null> {
  const hash = await hashOfKey(ctx, id);
  if (hash === null) return null;
  const k = await readApiKey(ctx, hash);
  return k && k.id === id ? k : null;
}

/** Sets revoked_at once (`IF revoked_at = null`): revoking again keeps the first time. */
export async function revokeApiKey(ctx: Ctx, id: string): Promise<ApiKeyRecord | null> {
  const k = await getApiKey(ctx, id);
  if (k === null) return null;
  if (k.revokedAt === null) {
    await memosOf(ctx).apiKeys.changing(k.hash, () =>
      ctx.session.execute('lwt', `UPDATE ${sysTable(ctx, 'api_keys')} SET revoked_at = ? WHERE hash = ? IF revoked_at = null`, [new Date(), k.hash], {
        ctx: { action: 'revoking an API key' },
      }),
    );
  }
  return getApiKey(ctx, id);
}

/** Appends a connection unless present: compare-and-set on the JSON list, retried on conflict. */
export async function addConnection(ctx: Ctx, userId: string, connection: { type: string; id: string }): Promise<User> {
  return memosOf(ctx).users.changing(userId, () => addConnectionOnce(ctx, userId, connection));
}

async function addConnectionOnce(ctx: Ctx, userId: string, connection: { type: string; id: string }): Promise<User> {
  const errCtx = { action: 'adding a connection' };
  for (let attempt = 0; attempt < 20; attempt++) {
    const rs = await ctx.session.execute('read', `SELECT ${USER_COLS} FROM ${sysTable(ctx, 'users')} WHERE id = ?`, [userId], { ctx: errCtx });
    if (rs.rowLength === 0) throw new ServiceError('user_not_found', `No user "${userId}".`);
    const row = rs.first();
    const user = userFromRow(row);
    if (user.connections.some((c) => c.type === connection.type && c.id === connection.id)) return user;
    user.connections.push({ type: connection.type, id: connection.id });
    const cas = await ctx.session.execute(
      'lwt',
      `UPDATE ${sysTable(ctx, 'users')} SET connections = ? WHERE id = ? IF connections = ?`,
      [JSON.stringify(user.connections), userId, (row.connections as string | null) ?? null],
      { ctx: errCtx },
    );
    if (cas.wasApplied()) return user;
  }
  throw new ServiceError('storage_unavailable', 'Too many concurrent changes to this user; try again.');
}

export async function setUserPlan(ctx: Ctx, userId: string, plan: string): Promise<void> {
  const rs = await memosOf(ctx).users.changing(userId, () =>
    ctx.session.execute('lwt', `UPDATE ${sysTable(ctx, 'users')} SET plan = ? WHERE id = ? IF EXISTS`, [plan, userId], {
      ctx: { action: 'setting a plan' },
    }),
  );
  if (!rs.wasApplied()) throw new ServiceError('user_not_found', `No user "${userId}".`);
}

/**
 * Exactly-once payment events without a multi-partition transaction: the event id is claimed by
 * an LWT (with the change it carries), the plan is changed, then the event is marked applied. A
 * delivery that finds a claim not yet marked (its first delivery died between the steps) finishes
 * it and answers 'applied'; a marked one answers 'duplicate' and changes nothing.
 */
export async function applyWebhookEvent(ctx: Ctx, eventId: string, type: string, change: { userId: string; plan: string } | null): Promise<'applied' | 'duplicate'> {
  const errCtx = { action: 'recording a webhook event' };
  const table = sysTable(ctx, 'webhook_events');
  const claim = await ctx.session.execute(
    'lwt',
    `INSERT INTO ${table} (id, type, user_id, plan, applied, received_at) VALUES (?, ?, ?, ?, false, ?) IF NOT EXISTS`,
    [eventId, type, change?.userId ?? null, change?.plan ?? null, new Date()],
    { ctx: errCtx },
  );
  let pending = change;
  if (!claim.wasApplied()) {
    const existing = claim.first();
    if (existing?.applied === true) return 'duplicate';
    // Finish the earlier delivery with the change it claimed.
    pending = existing?.user_id ? { userId: existing.user_id as string, plan: existing.plan as string } : null;
  }
  if (pending) await setUserPlan(ctx, pending.userId, pending.plan);
  await ctx.session.write(`UPDATE ${table} SET applied = true WHERE id = ?`, [eventId], errCtx);
  return 'applied';
}

/** Authentication's lookup: remembered for `apiKeyCacheMs` when found and not revoked. */
export async function findApiKeyByHash(ctx: Ctx, hash: string): Promise<ApiKeyRecord | null> {
  return memosOf(ctx).apiKeys.get(hash, () => readApiKey(ctx, hash), (k) => k.revokedAt === null);
}

async function readApiKey(ctx: Ctx, hash: string): Promise<ApiKeyRecord | null> {
  const rs = await ctx.session.execute('read', `SELECT ${KEY_COLS} FROM ${sysTable(ctx, 'api_keys')} WHERE hash = ?`, [hash], {
    ctx: { action: 'reading an API key' },
  });
  return rs.rowLength > 0 ? keyFromRow(rs.first()) : null;
}

export async function listApiKeys(ctx: Ctx, userId?: string): Promise<ApiKeyRecord[]> {
  const out: ApiKeyRecord[] = [];
  for await (const page of ctx.session.pages(`SELECT ${KEY_COLS} FROM ${sysTable(ctx, 'api_keys')}`)) {
    for (const r of page) {
      const k = keyFromRow(r);
      if (userId === undefined || k.userId === userId) out.push(k);
    }
  }
  return out.sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
}

export async function countApiKeys(ctx: Ctx): Promise<number> {
  let n = 0;
  for await (const page of ctx.session.pages(`SELECT hash FROM ${sysTable(ctx, 'api_keys')}`, [], { fetchSize: 5000 })) n += page.length;
  return n;
}

