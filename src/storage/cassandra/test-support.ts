/**
 * Helpers for tests that run against a real Cassandra (storage tests, the HTTP harness, the
 * two-process test): fresh isolated names, and cleanup. Reads no environment; callers pass the
 * contact points.
 */
import { randomBytes } from 'node:crypto';
import cassandra from 'cassandra-driver';
import type { Session } from './session.ts';

/** A fresh keyspace prefix (`t<10 hex>_`) and the system keyspace under it, unique per call. */
export function freshNames(): { keyspacePrefix: string; systemKeyspace: string } {
  const keyspacePrefix = `t${randomBytes(5).toString('hex')}_`;
  return { keyspacePrefix, systemKeyspace: `${keyspacePrefix}sys` };
}

async function withClient<T>(contactPoints: string[], localDc: string, f: (c: cassandra.Client) => Promise<T>): Promise<T> {
  const c = new cassandra.Client({ contactPoints, localDataCenter: localDc, pooling: { coreConnectionsPerHost: { 0: 1, 1: 1, 2: 0 } } });
  try {
    await c.connect();
    return await f(c);
  } finally {
    await c.shutdown();
  }
}

/** Drops every Cassandra keyspace whose name starts with `prefix` (a test run's data and system keyspaces). */
export async function dropPrefixed(contactPoints: string[], localDc: string, prefix: string): Promise<void> {
  if (!/^t[0-9a-f]{8,}_$/.test(prefix)) throw new Error(`refusing to drop keyspaces by the prefix "${prefix}": not a test prefix`);
  await withClient(contactPoints, localDc, async (c) => {
    const rs = await c.execute('SELECT keyspace_name FROM system_schema.keyspaces');
    for (const r of rs.rows) {
      const name = r.keyspace_name as string;
      // Dropping a large keyspace on a busy node can take longer than the driver's 12 s default.
      if (name.startsWith(prefix)) await c.execute(`DROP KEYSPACE IF EXISTS "${name}"`, [], { readTimeout: 120_000 });
    }
  });
}

/** The content ids with stored file bytes in a system keyspace (the Cassandra twin of the embedded `files/` directory). */
export async function storedContentIds(contactPoints: string[], localDc: string, systemKeyspace: string): Promise<string[]> {
  return withClient(contactPoints, localDc, async (c) => {
    const ids: string[] = [];
    const cql = `SELECT DISTINCT content_id FROM "${systemKeyspace.replace(/"/g, '""')}".file_content`;
    let pageState: string | undefined;
    do {
      const rs = await c.execute(cql, [], { fetchSize: 5000, pageState });
      for (const r of rs.rows) ids.push(String(r.content_id));
      pageState = rs.pageState ?? undefined;
    } while (pageState);
    return ids.sort();
  });
}

/**
 * A seam for races: `seam.between`, when set, runs once as soon as a paged read through `session`
 * whose CQL starts with `cqlPrefix` has yielded its last page (a delete by filter's scan, before
 * any delete), and is then cleared.
 */
export function seamAfterScan(session: Session, cqlPrefix: string): { between: (() => Promise<void>) | null } {
  const seam: { between: (() => Promise<void>) | null } = { between: null };
  const pages = session.pages.bind(session);
  session.pages = async function* (cql, params, o) {
    yield* pages(cql, params, o);
    if (cql.startsWith(cqlPrefix) && seam.between !== null) {
      const f = seam.between;
      seam.between = null;
      await f();
    }
  };
  return seam;
}

/**
 * Records the CQL of every request a driver client of this process sends (a batch as one entry,
 * `BATCH <its statements>`) and its bound values (a batch's: none) until `stop()`: for tests that
 * count what a call costs Cassandra.
 */
export function recordStatements(): { statements: string[]; params: unknown[][]; stop: () => void } {
  const proto = cassandra.Client.prototype as unknown as Record<'execute' | 'batch', (...a: unknown[]) => unknown>;
  const { execute, batch } = proto;
  const statements: string[] = [];
  const params: unknown[][] = [];
  proto.execute = function (this: unknown, ...a: unknown[]) {
    statements.push(String(a[0]));
    params.push(Array.isArray(a[1]) ? a[1] : []);
    return execute.apply(this, a);
  };
  proto.batch = function (this: unknown, ...a: unknown[]) {
    statements.push(`BATCH ${(a[0] as ({ query: string } | string)[]).map((s) => (typeof s === 'string' ? s : s.query)).join('; ')}`);
    params.push([]);
    return batch.apply(this, a);
  };
  return {
    statements,
    params,
    stop: () => {
      proto.execute = execute;
      proto.batch = batch;
    },
  };
}
