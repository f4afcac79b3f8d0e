/**
 * Names, identifiers and replication settings as they reach CQL. Names are validated before they
 * are interpolated into a statement (CQL cannot bind identifiers), and always double-quoted.
 */
import { invalid } from '../../errors.ts';

/** The service's name rule (docs/API.md): a valid, unquoted-lowercase Cassandra name. */
export const NAME_RE = /^[a-z][a-z0-9_]{0,47}$/;

export const isValidName = (name: string): boolean => NAME_RE.test(name);

/** Throws validation_failed when `name` is not a valid keyspace or table name. */
export function requireValidName(name: string, what: 'keyspace' | 'table', path = `/${what}`): void {
  if (!isValidName(name)) {
    throw invalid([{ path, message: `must match ${NAME_RE.source}` }], `Invalid ${what} name "${name}": it must match ${NAME_RE.source}.`);
  }
}

/** Names Cassandra or this backend keeps for itself; a user keyspace may never take them. */
export function isReservedKeyspace(name: string, systemKeyspace: string): boolean {
  return name === systemKeyspace || name.startsWith('system') || name === 'dse' || name.startsWith('dse_') || name === 'solr_admin';
}

/** A quoted CQL identifier; the name must have passed isValidName (or be our own constant). */
export const q = (ident: string): string => `"${ident.replace(/"/g, '""')}"`;

/** `"ks"."table"` */
export const qualified = (keyspace: string, table: string): string => `${q(keyspace)}.${q(table)}`;

/** The SAI vector index of a table: `<table>_vector_idx` (at most 59 characters). */
export const vectorIndexName = (table: string): string => `${table}_vector_idx`;

/** The SAI index of a table's metadata terms: `<table>_terms_idx` (at most 58 characters). */
export const termsIndexName = (table: string): string => `${table}_terms_idx`;

/** The SAI index of a table's expiry buckets (expiry-counts.ts): `<table>_expiry_idx` (at most 59 characters). */
export const expiryIndexName = (table: string): string => `${table}_expiry_idx`;

/**
 * A replication map as CQL text, e.g. `{'class': 'SimpleStrategy', 'replication_factor': 3}` or
 * `{'class': 'NetworkTopologyStrategy', 'dc1': 3}`. It is interpolated into CREATE KEYSPACE, so
 * only this narrow shape is accepted.
 */
const REPLICATION_RE = /^\{\s*'class'\s*:\s*'[A-Za-z][A-Za-z0-9_.]*'(\s*,\s*'[A-Za-z0-9_.-]+'\s*:\s*('[A-Za-z0-9_.-]+'|[0-9]+))*\s*\}$/;

export function requireValidReplication(replication: string, path = '/replication'): string {
  const r = replication.trim();
  if (!REPLICATION_RE.test(r)) {
    throw invalid(
      [{ path, message: "must be a CQL replication map such as {'class': 'SimpleStrategy', 'replication_factor': 1}" }],
      `Invalid replication "${replication}".`,
    );
  }
  return r;
}
