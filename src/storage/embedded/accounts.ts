/** Users and API keys. Keys are found by the hash the caller computed; secrets never arrive here. */
import { randomUUID } from 'node:crypto';
import { ServiceError } from '../../errors.ts';
import type { ApiKeyRecord, Permission, User } from '../api.ts';
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

  constructor(db: Db) {
    this.#db = db;
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
}
