/**
 * The one driver client of a Cassandra storage: connection settings, consistency levels per kind
 * of statement, paging, batches, retries of idempotent writes, and error translation.
 *
 * Consistency: writes at the configured level (QUORUM by default), reads at the matching read
 * level (QUORUM -> QUORUM, LOCAL_QUORUM -> LOCAL_QUORUM, ONE -> ONE) so that a read sees every
 * acknowledged write; lightweight transactions use SERIAL (LOCAL_SERIAL with LOCAL_QUORUM).
 * ANN queries always run at ONE (LOCAL_ONE with LOCAL_QUORUM): Cassandra 5 runs top-K queries at
 * no other level (it downgrades others with a warning), so with RF > 1 a search may briefly miss a
 * write that a get already sees.
 */
import { existsSync } from 'node:fs';
import cassandra from 'cassandra-driver';
import type { Client, types as driverTypes } from 'cassandra-driver';
import { ServiceError } from '../../errors.ts';
import { type ErrorContext, isTransient, translateDriverError } from './driver-errors.ts';

const { Client: DriverClient, types } = cassandra;
const cl = types.consistencies;

export type WriteConsistency = 'QUORUM' | 'ONE' | 'LOCAL_QUORUM';
export type Row = driverTypes.Row;
export type Params = unknown[];

/**
 * read: plain SELECT; write: idempotent INSERT/DELETE; lwt: IF [NOT] EXISTS; ann: ORDER BY ANN; ddl: schema;
 * counter: a counter UPDATE (not idempotent: never retried, as a retry could count twice).
 */
export type Kind = 'read' | 'write' | 'lwt' | 'ann' | 'ddl' | 'counter';

export interface ExecOptions {
  ctx?: ErrorContext;
  fetchSize?: number;
  pageState?: string;
}

export interface SessionOptions {
  contactPoints: string[];
  localDc: string;
  writeConsistency: WriteConsistency;
  /** Astra DB: the driver takes contact points, local DC and TLS from this bundle instead. */
  secureConnectBundle?: string;
  credentials?: { username: string; password: string };
}

export class Session {
  readonly client: Client;
  readonly #write: number;
  readonly #read: number;
  readonly #serial: number;
  /** ANN (top-K) reads: Cassandra 5 runs them at ONE / LOCAL_ONE only. */
  readonly #ann: number;
  readonly #bundle: string | undefined;

  constructor(opts: SessionOptions) {
    this.#bundle = opts.secureConnectBundle;
    this.#write = cl[opts.writeConsistency === 'LOCAL_QUORUM' ? 'localQuorum' : opts.writeConsistency === 'ONE' ? 'one' : 'quorum'];
    this.#read = this.#write;
    this.#serial = opts.writeConsistency === 'LOCAL_QUORUM' ? cl.localSerial : cl.serial;
    this.#ann = opts.writeConsistency === 'LOCAL_QUORUM' ? cl.localOne : cl.one;
    this.client = new DriverClient({
      // The driver refuses contact points (and SSL options) next to a secure connect bundle.
      ...(opts.secureConnectBundle !== undefined
        ? { cloud: { secureConnectBundle: opts.secureConnectBundle } }
        : { contactPoints: opts.contactPoints, localDataCenter: opts.localDc }),
      ...(opts.credentials !== undefined ? { credentials: { username: opts.credentials.username, password: opts.credentials.password } } : {}),
      queryOptions: { prepare: true, consistency: this.#read, serialConsistency: this.#serial, fetchSize: 1000 },
      socketOptions: { connectTimeout: 5000, readTimeout: 30_000 },
      // Timestamps from the coordinator, not from each service process: two processes' clocks
      // (and the driver's per-process microsecond counter, which runs ahead after bursts) made a
      // write acknowledged after another lose to it (a rewrite after a delete lost in 243 of
      // 1,000 tries on one host). Cassandra then orders writes by its nodes' clocks, which a
      // cluster keeps in step (NTP) anyway. null is the driver's documented switch; its typings
      // leave it out.
      policies: { timestampGeneration: null as unknown as undefined },
      // The driver's own wait for schema agreement counts nodes that are down (it reads
      // system.peers), so with one node dead every DDL would stall for the whole wait. It is
      // off; awaitSchemaAgreement() asks each live node instead.
      protocolOptions: { maxSchemaAgreementWaitSeconds: 0 },
    });
  }

  async connect(): Promise<void> {
    // The operator's own setting, checked here so a start names the missing file: the driver's
    // error says so too, but its text is never passed on (driver-errors.ts).
    const bundle = this.#bundle;
    if (typeof bundle === 'string' && !existsSync(bundle)) {
      throw new ServiceError('storage_unavailable', `The Astra DB secure connect bundle ${bundle} (VSS_CASSANDRA_SECURE_BUNDLE) does not exist.`);
    }
    try {
      await this.client.connect();
    } catch (err) {
      throw translateDriverError(err, { action: 'connecting' });
    }
  }

  #options(kind: Kind, o: ExecOptions): cassandra.QueryOptions {
    const consistency = kind === 'ann' ? this.#ann : kind === 'write' || kind === 'lwt' || kind === 'ddl' || kind === 'counter' ? this.#write : this.#read;
    return {
      prepare: kind !== 'ddl',
      consistency,
      serialConsistency: this.#serial,
      // An LWT retried after a timeout can report "not applied" for its own first attempt.
      isIdempotent: kind !== 'lwt' && kind !== 'ddl' && kind !== 'counter',
      fetchSize: o.fetchSize,
      pageState: o.pageState,
    };
  }

  async execute(kind: Kind, cql: string, params: Params = [], o: ExecOptions = {}): Promise<driverTypes.ResultSet> {
    let rs: driverTypes.ResultSet;
    if (kind === 'ann') await this.#nextTurn();
    try {
      rs = await this.client.execute(cql, params as cassandra.ArrayOrObject, this.#options(kind, o));
    } catch (err) {
      throw translateDriverError(err, o.ctx);
    }
    if (kind === 'ddl') await this.awaitSchemaAgreement();
    return rs;
  }

  /** Callers waiting for the end of this event-loop turn (see #nextTurn). */
  #turn: (() => void)[] = [];

  /**
   * Resolves once the event loop has run the rest of its current turn. Searches arriving on
   * separate HTTP connections in one turn then reach the driver together, which writes them to the
   * socket in one send instead of one each: a loopback send (which wakes the node) cost the server
   * as much CPU as the rest of its search at 16 in flight. Adds one loop turn (microseconds) alone.
   */
  #nextTurn(): Promise<void> {
    return new Promise((resolve) => {
      if (this.#turn.push(resolve) === 1) {
        setImmediate(() => {
          const waiting = this.#turn;
          this.#turn = [];
          for (const f of waiting) f();
        });
      }
    });
  }

  /**
   * Waits (up to `timeoutMs`) until every node the driver sees as up reports the same schema
   * version, so that a statement on a table just created finds it on any coordinator. Nodes that
   * do not answer are left out, as a dead node cannot be waited for; on timeout it carries on,
   * as the driver itself does.
   */
  async awaitSchemaAgreement(timeoutMs = 30_000): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const hosts = this.client.hosts.values().filter((h) => h.isUp());
      if (hosts.length <= 1) return true;
      const versions = new Set<string>();
      await Promise.all(
        hosts.map(async (host) => {
          try {
            const rs = await this.client.execute('SELECT schema_version FROM system.local', [], { host, consistency: cl.one, readTimeout: 2000 });
            versions.add(String(rs.first()?.schema_version));
          } catch {
            // down or unreachable: not part of the agreement
          }
        }),
      );
      if (versions.size <= 1) return true;
      if (Date.now() > deadline) return false;
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  /** An idempotent write, retried on timeouts/unavailability (twice, with backoff). */
  async write(cql: string, params: Params, ctx?: ErrorContext): Promise<void> {
    await retrying(() => this.execute('write', cql, params, { ctx }));
  }

  /** Every row of a SELECT, one page at a time. */
  async *pages(cql: string, params: Params = [], o: ExecOptions & { kind?: Kind } = {}): AsyncGenerator<Row[]> {
    let pageState: string | undefined;
    do {
      const rs = await retrying(() => this.execute(o.kind ?? 'read', cql, params, { ...o, pageState }));
      yield rs.rows;
      pageState = rs.pageState ?? undefined;
    } while (pageState);
  }

  /** A batch of idempotent writes; LOGGED makes it all-or-nothing (through the batchlog). */
  async batch(queries: { query: string; params: Params }[], logged: boolean, ctx?: ErrorContext): Promise<void> {
    if (queries.length === 0) return;
    await retrying(async () => {
      try {
        await this.client.batch(queries as { query: string; params: cassandra.ArrayOrObject }[], {
          prepare: true,
          logged,
          consistency: this.#write,
          isIdempotent: true,
        });
      } catch (err) {
        throw translateDriverError(err, ctx);
      }
    });
  }

  /** Counter updates of one partition as one counter batch (one mutation); never retried, as a retry could count twice. */
  async counterBatch(queries: { query: string; params: Params }[], ctx?: ErrorContext): Promise<void> {
    if (queries.length === 0) return;
    if (queries.length === 1) {
      await this.execute('counter', queries[0].query, queries[0].params, { ctx });
      return;
    }
    try {
      await this.client.batch(queries as { query: string; params: cassandra.ArrayOrObject }[], { prepare: true, counter: true, consistency: this.#write, isIdempotent: false });
    } catch (err) {
      throw translateDriverError(err, ctx);
    }
  }

  /** Cheap liveness probe. */
  async ping(): Promise<boolean> {
    try {
      await this.client.execute('SELECT release_version FROM system.local', [], { consistency: cl.localOne, readTimeout: 3000 });
      return true;
    } catch {
      return false;
    }
  }

  async shutdown(): Promise<void> {
    await this.client.shutdown();
  }
}

/** Runs `f` (an idempotent operation) up to 3 times while it fails with storage_unavailable. */
export async function retrying<T>(f: () => Promise<T>, attempts = 3): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await f();
    } catch (err) {
      if (i >= attempts || !isTransient(err)) throw err;
      await new Promise((r) => setTimeout(r, 100 * 4 ** (i - 1)));
    }
  }
}

/** Runs `f` over items with at most `limit` in flight; rejects with the first error after all settle. */
export async function forEachLimit<T>(items: readonly T[], limit: number, f: (item: T, i: number) => Promise<void>): Promise<void> {
  let next = 0;
  let first: unknown;
  let failed = false;
  const worker = async (): Promise<void> => {
    while (next < items.length && !failed) {
      const i = next++;
      try {
        await f(items[i], i);
      } catch (err) {
        if (!failed) {
          failed = true;
          first = err;
        }
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (failed) throw first;
}
