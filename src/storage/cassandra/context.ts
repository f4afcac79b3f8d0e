import { q, qualified } from './names.ts';
import type { Session } from './session.ts';

/**
 * What every part of the Cassandra backend shares. No caches: every answer comes from Cassandra;
 * the one thing a process remembers is which tables it found too large for an exact scan
 * (`largeTables`), which picks a search plan and never changes what data a search sees.
 */
export interface Ctx {
  readonly session: Session;
  /** The system keyspace's name (unquoted). */
  readonly systemKeyspace: string;
  /** Default replication map (CQL text) for new keyspaces. */
  readonly replication: string;
  /** Tables with at most this many rows are searched by an exact scan rather than the ANN index. */
  readonly exactScanMaxRows: number;
  /**
   * Prepended to every keyspace name to give its Cassandra keyspace ('' by default). Lets several
   * deployments, or test runs, share a cluster; the catalog keeps the names without it.
   */
  readonly keyspacePrefix: string;
  /**
   * Tables (`keyspace.table`) counted above exactScanMaxRows, with the time (ms since the epoch)
   * until which that verdict stands; see search.ts. Deletes through this process clear it.
   */
  readonly largeTables: Map<string, number>;
}

/** The Cassandra keyspace holding a (logical) keyspace. */
export const physicalKeyspace = (ctx: Ctx, keyspace: string): string => ctx.keyspacePrefix + keyspace;

/** `"<prefix><keyspace>"."<table>"` */
export const dataTable = (ctx: Ctx, keyspace: string, table: string): string => qualified(physicalKeyspace(ctx, keyspace), table);

/** `"vss_system"."<table>"` */
export const sysTable = (ctx: Ctx, table: string): string => `${q(ctx.systemKeyspace)}.${q(table)}`;
