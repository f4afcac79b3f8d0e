/** Users and API keys. Keys are found by the hash the caller computed; secrets never arrive here. */
import { randomUUID } from 'node:crypto';
import { ServiceError } from '../../errors.ts';
import type { ApiKeyRecord, Permission, User } from '../api.ts';
import { LIVE } from './expiry.ts';
import { isUniqueViolation, nowIso, type Db } from './sql.ts';

interface UserRow {
  id: string;
  name: string;
  email: string;
  plan: string;
  connections: string;
  created_at: string;
}

interface KeyRow {
  id: string;
  user_id: string;
  name: string;
  hash: string;
  permissions: Permission;
  resources: string;
  created_at: string;
  revoked_at: string | null;
}

const toUser = (r: UserRow): User => ({
  id: r.id,
  name: r.name,
  email: r.email,
  plan: r.plan,
  connections: JSON.parse(r.connections) as User['connections'],
  createdAt: r.created_at,
});

const toKey = (r: KeyRow): ApiKeyRecord => ({
  id: r.id,
  userId: r.user_id,
  name: r.name,
  hash: r.hash,
  permissions: r.permissions,
  resources: JSON.parse(r.resources) as string[],
  createdAt: r.created_at,
  revokedAt: r.revoked_at,
});

export class Accounts {
  readonly #db: Db;

  readonly #now: () => number;

  /** `now`: the clock rows expire by; usage counts only rows not expired. */
  constructor(db: Db, now: () => number) {
    this.#db = db;
    this.#now = now;
  }

  createUser(u: { name: string; email: string; plan?: string }): User {
    const row: UserRow = { id: randomUUID(), name: u.name, email: u.email, plan: u.plan ?? 'free', connections: '[]', created_at: nowIso() };
    try {
      this.#db.stmt('INSERT INTO users (id, name, email, plan, connections, created_at) VALUES (@id, @name, @email, @plan, @connections, @created_at)').run(row);
    } catch (e) {
      if (isUniqueViolation(e)) throw new ServiceError('already_exists', 'a user with this e-mail already exists');
      throw e;
    }
    return toUser(row);
  }

  getUser(id: string): User | null {
    const r = this.#db.stmt('SELECT * FROM users WHERE id = ?').get(id) as UserRow | undefined;
    return r ? toUser(r) : null;
  }

  /** E-mail addresses match without regard to ASCII case. */
  getUserByEmail(email: string): User | null {
    const r = this.#db.stmt('SELECT * FROM users WHERE email = ?').get(email) as UserRow | undefined;
    return r ? toUser(r) : null;
  }

  listUsers(): User[] {
    return (this.#db.stmt('SELECT * FROM users ORDER BY created_at, id').all() as UserRow[]).map(toUser);
  }

  createApiKey(k: Omit<ApiKeyRecord, 'id' | 'createdAt' | 'revokedAt'> & { id?: string }): ApiKeyRecord {
    const row: KeyRow = {
      id: k.id ?? randomUUID(),
      user_id: k.userId,
      name: k.name,
      hash: k.hash,
      permissions: k.permissions,
      resources: JSON.stringify(k.resources),
      created_at: nowIso(),
      revoked_at: null,
    };
    try {
      this.#db
        .stmt('INSERT INTO api_keys (id, user_id, name, hash, permissions, resources, created_at, revoked_at) VALUES (@id, @user_id, @name, @hash, @permissions, @resources, @created_at, @revoked_at)')
        .run(row);
    } catch (e) {
      if (isUniqueViolation(e)) throw new ServiceError('already_exists', 'an API key with this id or hash already exists');
      throw e;
    }
    return toKey(row);
  }

  findApiKeyByHash(hash: string): ApiKeyRecord | null {
    const r = this.#db.stmt('SELECT * FROM api_keys WHERE hash = ?').get(hash) as KeyRow | undefined;
    return r ? toKey(r) : null;
  }

  listApiKeys(userId?: string): ApiKeyRecord[] {
    const rows =
      userId === undefined
        ? (this.#db.stmt('SELECT * FROM api_keys ORDER BY created_at, id').all() as KeyRow[])
        : (this.#db.stmt('SELECT * FROM api_keys WHERE user_id = ? ORDER BY created_at, id').all(userId) as KeyRow[]);
    return rows.map(toKey);
  }

  countApiKeys(): number {
    return this.#db.stmt('SELECT count(*) FROM api_keys').pluck().get() as number;
  }

  getApiKey(id: string): ApiKeyRecord | null {
    const r = this.#db.stmt('SELECT * FROM api_keys WHERE id = ?').get(id) as KeyRow | undefined;
    return r ? toKey(r) : null;
  }

  revokeApiKey(id: string): ApiKeyRecord | null {
    this.#db.stmt('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL').run(nowIso(), id);
    return this.getApiKey(id);
  }

  addConnection(userId: string, connection: { type: string; id: string }): User {
    return this.#db.tx(() => {
      const user = this.getUser(userId);
      if (user === null) throw new ServiceError('user_not_found', `no user ${userId}`);
      if (!user.connections.some((c) => c.type === connection.type && c.id === connection.id)) {
        user.connections.push({ type: connection.type, id: connection.id });
        this.#db.stmt('UPDATE users SET connections = ? WHERE id = ?').run(JSON.stringify(user.connections), userId);
      }
      return user;
    });
  }

  setUserPlan(userId: string, plan: string): void {
    const { changes } = this.#db.stmt('UPDATE users SET plan = ? WHERE id = ?').run(plan, userId);
    if (changes === 0) throw new ServiceError('user_not_found', `no user ${userId}`);
  }

  /** The event id's primary key makes a replay a no-op, in the same transaction as the change. */
  applyWebhookEvent(eventId: string, type: string, change: { userId: string; plan: string } | null): 'applied' | 'duplicate' {
    return this.#db.tx(() => {
      const { changes } = this.#db
        .stmt('INSERT INTO webhook_events (id, type, user_id, received_at) VALUES (?, ?, ?, ?) ON CONFLICT (id) DO NOTHING')
        .run(eventId, type, change?.userId ?? null, nowIso());
      if (changes === 0) return 'duplicate';
      if (change) this.setUserPlan(change.userId, change.plan);
      return 'applied';
    });
  }

  usageOf(userId: string): { vectors: number; fileBytes: number } {
    const vectors = this.#db
      .stmt(`SELECT count(*) FROM vectors v JOIN tables t ON t.id = v.table_id JOIN keyspaces k ON k.name = t.keyspace WHERE k.owner = ? AND ${LIVE}`)
      .pluck()
      .get(userId, this.#now()) as number;
    const fileBytes = this.#db
      .stmt('SELECT coalesce(sum(f.size), 0) FROM files f JOIN keyspaces k ON k.name = f.keyspace WHERE k.owner = ?')
      .pluck()
      .get(userId) as number;
    return { vectors, fileBytes };
  }
}
