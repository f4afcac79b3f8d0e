/**
 * What a process may remember for a short while of facts that other processes can change, so that
 * a search or a write does not read them from Cassandra every time (docs/CASSANDRA.md "Round trips").
 * Each memory is bounded in age and size; this process's own changes update or drop their entry at
 * once, so only another process's change can go unseen, and only for the memory's age.
 */
import { LRUCache } from 'lru-cache';
import type { ApiKeyRecord, User } from '../api.ts';
import type { Ctx } from './context.ts';

/** How long a table's default TTL and row count are remembered: another process's change takes effect within this. */
export const TABLE_FACTS_MS = 1000;
const MAX_ENTRIES = 10_000;

/**
 * One memory: answers read within the last `ttlMs` (none at all when 0), handed out as copies. A
 * change made here bumps its generation before and after, so a read that overlapped a change
 * does not store what it read before the change landed.
 */
export class Memo<V extends {}> {
  private readonly cache: LRUCache<string, V> | null;
  private generation = 0;

  constructor(ttlMs: number, private readonly copy: (v: V) => V = (v) => v) {
    this.cache = ttlMs > 0 ? new LRUCache<string, V>({ max: MAX_ENTRIES, ttl: ttlMs }) : null;
  }

  /**
   * The remembered answer for `key` (when `usable` accepts it), else `read()`'s, remembered when
   * `keep` accepts it (misses never are).
   */
  async get(key: string, read: () => Promise<V | null>, keep: (v: V) => boolean = () => true, usable: (v: V) => boolean = () => true): Promise<V | null> {
    const known = this.cache?.get(key);
    if (known !== undefined && usable(known)) return this.copy(known);
    const generation = this.generation;
    const v = await read();
    if (v !== null && generation === this.generation && keep(v)) this.cache?.set(key, this.copy(v));
    return v;
  }

  /** Runs a change to `key`'s fact, forgetting it before and after; `after`, if given, is then remembered. */
  async changing<T>(key: string, change: () => Promise<T>, after?: (result: T) => V): Promise<T> {
    this.forget(key);
    try {
      const result = await change();
      this.forget(key);
      if (after !== undefined) this.cache?.set(key, after(result));
      return result;
    } catch (err) {
      this.forget(key);
      throw err;
    }
  }

  /** Drops `key`'s answer, and keeps a read that overlapped this call from storing what it read. */
  forget(key: string): void {
    this.generation++;
    this.cache?.delete(key);
  }
}

export interface Memos {
  /** Keys found (not revoked) by the hash of their secret, for `apiKeyCacheMs`: a key made elsewhere works at once. */
  readonly apiKeys: Memo<ApiKeyRecord>;
  /** Users found by id (the rate limit and quotas read the plan per request), as long as keys. */
  readonly users: Memo<User>;
  /** A table's `default_time_to_live` (0: none), by tableId. */
  readonly defaultTtls: Memo<number>;
  /** A counted table's row counter as last read, by tableId. */
  readonly rowCounts: Memo<number>;
  /** An uncounted table's rows as last counted by a key scan stopping at `upTo`, by tableId. */
  readonly rowScans: Memo<{ n: number; upTo: number }>;
}

const memos = new WeakMap<Ctx, Memos>();

/** The memories of a store (one per Ctx, made at first use). */
export function memosOf(ctx: Ctx): Memos {
  let m = memos.get(ctx);
  if (m === undefined) {
    const keyMs = ctx.apiKeyCacheMs ?? 0;
    m = {
      apiKeys: new Memo<ApiKeyRecord>(keyMs, (k) => ({ ...k, resources: [...k.resources] })),
      users: new Memo<User>(keyMs, (u) => ({ ...u, connections: u.connections.map((c) => ({ ...c })) })),
      defaultTtls: new Memo<number>(TABLE_FACTS_MS),
      rowCounts: new Memo<number>(TABLE_FACTS_MS),
      rowScans: new Memo<{ n: number; upTo: number }>(TABLE_FACTS_MS, (s) => ({ ...s })),
    };
    memos.set(ctx, m);
  }
  return m;
}

/** The key of a table in these memories. */
export const tableId = (keyspace: string, table: string): string => `${keyspace}\u0000${table}`;
