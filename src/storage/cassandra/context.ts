import { q, qualified } from './names.ts';
import type { Session } from './session.ts';

/**
 * What every part of the Cassandra backend shares. Answers come from Cassandra, except the
 * catalog's facts that never change (catalog.ts) and what memos.ts remembers for a second or so.
 */
export interface Ctx {
  readonly session: Session;
  /** The system keyspace's name (unquoted). */
  readonly systemKeyspace: string;
  /** Default replication map (CQL text) for new keyspaces. */
  readonly replication: string;
  /**
   * Tables with at most this many rows keep exact answers beyond what one ANN query covers (1,000
   * rows), and serve filters the index cannot, by a scan scored by the engine (search.ts).
   */
  readonly exactScanMaxRows: number;
  /**
   * Prepended to every keyspace name to give its Cassandra keyspace ('' by default). Lets several
   * deployments, or test runs, share a cluster; the catalog keeps the names without it.
   */
  readonly keyspacePrefix: string;
  /** How long a found API key is remembered by its hash (memos.ts); absent or 0: never. */
  readonly apiKeyCacheMs?: number;
}

/** The Cassandra keyspace holding a (logical) keyspace. */
export const physicalKeyspace = (ctx: Ctx, keyspace: string): string => ctx.keyspacePrefix + keyspace;

/** `"<prefix><keyspace>"."<table>"` */
export const dataTable = (ctx: Ctx, keyspace: string, table: string): string => qualified(physicalKeyspace(ctx, keyspace), table);

/** `"vss_system"."<table>"` */
export const sysTable = (ctx: Ctx, table: string): string => `${q(ctx.systemKeyspace)}.${q(table)}`;
