/**
 * The distributed backend: Apache Cassandra 5 with SAI vector indexes, through the DataStax
 * Node.js driver. Every piece of state (catalog, accounts, metadata records, vectors) lives in
 * Cassandra, so any number of service processes can run side by side; what a process remembers
 * is bounded to a second or so (memos.ts).
 *
 * Files by concern: session.ts (driver, consistency, paging, retries), driver-errors.ts (driver
 * errors -> ServiceError), system-schema.ts (the system keyspace), catalog.ts (keyspaces, tables),
 * vectors.ts (rows, scans), counts.ts (row counters), filter-terms.ts and terms-backfill.ts (metadata
 * as SAI terms), search.ts (two-stage search), lexical.ts (BM25 search and its postings),
 * metadata-records.ts, accounts.ts (users, keys, plans, webhook events), files.ts (uploaded files), usage.ts.
 */
import { ServiceError } from '../../errors.ts';
import type { Storage } from '../api.ts';
import * as accounts from './accounts.ts';
import * as catalog from './catalog.ts';
import * as files from './files.ts';
import type { Ctx } from './context.ts';
import * as records from './metadata-records.ts';
import { isValidName, requireValidReplication } from './names.ts';
import { lexicalSearch } from './lexical.ts';
import { backfillLexical } from './lexical-backfill.ts';
import { readMatches, search, searchRefs } from './search.ts';
import { backfillTerms } from './terms-backfill.ts';
import { Session, type WriteConsistency } from './session.ts';
import { ensureSystemSchema } from './system-schema.ts';
import { usageOf } from './usage.ts';
import * as vectors from './vectors.ts';

export interface CassandraStorageOptions {
  contactPoints: string[];
  localDc: string;
  /** Replication map (CQL text) of new keyspaces and of the system keyspace. */
  replication: string;
  /** Default 'vss_system'. */
  systemKeyspace?: string;
  /** Default QUORUM; reads use the matching level. */
  writeConsistency?: WriteConsistency;
  /**
   * Tables up to this many rows stay exact when `candidates` covers them beyond the 1,000 rows one
   * ANN query returns, and serve filters the index cannot, by a scan scored by Cassandra (default
   * 10,000, like the embedded backend's `index.exactBelowRows`); see search.ts.
   */
  exactScanMaxRows?: number;
  /**
   * Prepended to keyspace names to form their Cassandra keyspaces (default ''), so that several
   * deployments or test runs can share one cluster. Give each its own systemKeyspace too.
   */
  keyspacePrefix?: string;
  /**
   * How long (ms) a found API key is remembered by its hash (memos.ts; default 0: never): saves the
   * read per request; a revocation through another process reaches this one within it.
   */
  apiKeyCacheMs?: number;
  /**
   * Path of a DataStax Astra DB secure connect bundle: the driver reads the contact points,
   * local data center and TLS material from it, so contactPoints and localDc are then unused.
   */
  secureConnectBundle?: string;
  /** Plain-text credentials (PasswordAuthenticator; Astra DB: username `token`, password the AstraCS token). */
  credentials?: { username: string; password: string };
}

export interface CassandraStorage extends Storage {
  readonly kind: 'cassandra';
  /**
   * The background indexing of tables made before lexical search (lexical-backfill.ts), started on
   * open; it never rejects: a failure leaves them for the next start.
   */
  readonly lexicalBackfill: Promise<void>;
  /** The filling of the filter terms of tables made before them (terms-backfill.ts), started on open; never rejects. */
  readonly termsBackfill: Promise<void>;
}

export async function openCassandraStorage(opts: CassandraStorageOptions): Promise<CassandraStorage> {
  const systemKeyspace = opts.systemKeyspace ?? 'vss_system';
  if (!isValidName(systemKeyspace)) throw new ServiceError('internal', `Invalid system keyspace name "${systemKeyspace}".`);
  const replication = requireValidReplication(opts.replication);
  const keyspacePrefix = opts.keyspacePrefix ?? '';
  if (keyspacePrefix !== '' && !/^[a-z][a-z0-9_]{0,23}$/.test(keyspacePrefix)) {
    throw new ServiceError('internal', `Invalid keyspace prefix "${keyspacePrefix}": it must match ^[a-z][a-z0-9_]{0,23}$.`);
  }
  if (opts.secureConnectBundle === undefined && opts.contactPoints.length === 0) {
    throw new ServiceError('storage_unavailable', 'No Cassandra contact points are configured.');
  }

  const session = new Session({
    contactPoints: [...opts.contactPoints],
    localDc: opts.localDc,
    writeConsistency: opts.writeConsistency ?? 'QUORUM',
    secureConnectBundle: opts.secureConnectBundle,
    credentials: opts.credentials,
  });
  await session.connect();
  try {
    await ensureSystemSchema(session, systemKeyspace, replication);
  } catch (err) {
    await session.shutdown().catch(() => undefined);
    throw err;
  }
  const ctx: Ctx = { session, systemKeyspace, replication, exactScanMaxRows: opts.exactScanMaxRows ?? 10_000, keyspacePrefix, apiKeyCacheMs: opts.apiKeyCacheMs ?? 0 };
  let unindexed: Awaited<ReturnType<typeof catalog.ensureTermsColumns>>;
  try {
    unindexed = await catalog.ensureTermsColumns(ctx);
  } catch (err) {
    await session.shutdown().catch(() => undefined);
    throw err;
  }
  let closed = false;
  // Nothing waits on them; a failure (an outage, this store closed midway) is retried at the next start.
  const lexicalBackfill = backfillLexical(ctx).catch(() => undefined);
  const termsBackfill = backfillTerms(ctx, unindexed).catch(() => undefined);

  return {
    kind: 'cassandra',
    lexicalBackfill,
    termsBackfill,

    createKeyspace: (ks) => catalog.createKeyspace(ctx, ks),
    getKeyspace: (name) => catalog.getKeyspace(ctx, name),
    listKeyspaces: (owner) => catalog.listKeyspaces(ctx, owner),
    createTable: (t, o) => catalog.createTable(ctx, t, o),
    getTable: (ks, name) => catalog.getTable(ctx, ks, name),
    listTables: (ks) => catalog.listTables(ctx, ks),

    upsertVectors: (ks, t, rows) => vectors.upsertVectors(ctx, ks, t, rows),
    getVector: (ks, t, key) => vectors.getVector(ctx, ks, t, key),
    deleteVectors: (ks, t, keys) => vectors.deleteVectors(ctx, ks, t, keys),
    deleteByFilter: (ks, t, filter) => vectors.deleteByFilter(ctx, ks, t, filter),
    countVectors: (ks, t, filter) => vectors.countVectors(ctx, ks, t, filter),
    scanVectors: (ks, t, o) => vectors.scanVectors(ctx, ks, t, o),
    search: (ks, t, q) => search(ctx, ks, t, q),
    lexicalSearch: (ks, t, q) => lexicalSearch(ctx, ks, t, q),
    searchRefs: (ks, t, q) => searchRefs(ctx, ks, t, q),
    // The rows are read anyway: each candidate is scored again from its current text (lexical.ts).
    lexicalSearchRefs: async (ks, t, q) => (await lexicalSearch(ctx, ks, t, { ...q, includeVector: false })).map((m) => ({ ref: m.key, key: m.key, score: m.score })),
    readMatches: (ks, t, refs, o) => readMatches(ctx, ks, t, refs, o?.includeVector === true),
    getDefaultTtl: (ks, t) => vectors.getDefaultTtl(ctx, ks, t),
    setDefaultTtl: (ks, t, seconds) => vectors.setDefaultTtl(ctx, ks, t, seconds),

    upsertMetadata: (recs) => records.upsertMetadata(ctx, recs),
    getMetadata: (ks, t, files) => records.getMetadata(ctx, ks, t, files),
    scanMetadata: (ks, t, o) => records.scanMetadata(ctx, ks, t, o),

    createUser: (u) => accounts.createUser(ctx, u),
    getUser: (id) => accounts.getUser(ctx, id),
    getUserByEmail: (email) => accounts.getUserByEmail(ctx, email),
    listUsers: () => accounts.listUsers(ctx),
    createApiKey: (k) => accounts.createApiKey(ctx, k),
    findApiKeyByHash: (hash) => accounts.findApiKeyByHash(ctx, hash),
    listApiKeys: (userId) => accounts.listApiKeys(ctx, userId),
    countApiKeys: () => accounts.countApiKeys(ctx),
    getApiKey: (id) => accounts.getApiKey(ctx, id),
    revokeApiKey: (id) => accounts.revokeApiKey(ctx, id),
    addConnection: (userId, c) => accounts.addConnection(ctx, userId, c),
    setUserPlan: (userId, plan) => accounts.setUserPlan(ctx, userId, plan),
    applyWebhookEvent: (id, type, change) => accounts.applyWebhookEvent(ctx, id, type, change),
    usageOf: (userId) => usageOf(ctx, userId),

    replaceFile: (file, content, rows, record) => files.replaceFile(ctx, file, content, rows, record),
    getFile: (ks, t, name) => files.getFile(ctx, ks, t, name),
    readFileContent: (ks, t, name) => files.readFileContent(ctx, ks, t, name),
    listFiles: (kss) => files.listFiles(ctx, kss),
    deleteFile: (ks, t, name) => files.deleteFile(ctx, ks, t, name),

    ping: () => (closed ? Promise.resolve(false) : session.ping()),
    async close() {
      if (closed) return;
      closed = true;
      await session.shutdown();
    },
  };
}
