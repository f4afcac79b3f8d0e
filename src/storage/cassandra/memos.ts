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

export interface Memos {
  /**
   * Keys found by the hash of their secret, not revoked (misses are never kept: a key made by
   * another process works at once); null when off (apiKeyCacheMs 0).
   */
  readonly apiKeys: LRUCache<string, ApiKeyRecord> | null;
  /** Bumped by every revocation here: a lookup that began before one does not store its answer. */
  revocations: number;
  /**
   * Users found by id (the rate limit and quotas read the plan per request), for as long as keys
   * and under the same switch; dropped by this process's changes to them.
   */
  readonly users: LRUCache<string, User> | null;
  /** Bumped by every change to a user here, as `revocations`. */
  userChanges: number;
  /** A table's `default_time_to_live` (0: none), by tableId. */
  readonly defaultTtls: LRUCache<string, number>;
  /** A counted table's row counter as last read, by tableId; dropped by this process's writes. */
  readonly rowCounts: LRUCache<string, number>;
  /** Bumped by every counter update here: a read that began before one does not store its answer. */
  countUpdates: number;
}

const memos = new WeakMap<Ctx, Memos>();

/** The memories of a store (one per Ctx, made at first use). */
export function memosOf(ctx: Ctx): Memos {
  let m = memos.get(ctx);
  if (m === undefined) {
    const facts = () => new LRUCache<string, number>({ max: MAX_ENTRIES, ttl: TABLE_FACTS_MS });
    const keyMs = ctx.apiKeyCacheMs ?? 0;
    m = {
      apiKeys: keyMs > 0 ? new LRUCache<string, ApiKeyRecord>({ max: MAX_ENTRIES, ttl: keyMs }) : null,
      revocations: 0,
      users: keyMs > 0 ? new LRUCache<string, User>({ max: MAX_ENTRIES, ttl: keyMs }) : null,
      userChanges: 0,
      defaultTtls: facts(),
      rowCounts: facts(),
      countUpdates: 0,
    };
    memos.set(ctx, m);
  }
  return m;
}

/** The key of a table in these memories. */
export const tableId = (keyspace: string, table: string): string => `${keyspace}\u0000${table}`;
