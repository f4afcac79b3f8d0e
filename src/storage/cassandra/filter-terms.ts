/**
 * Metadata as terms an SAI index can serve, and filters as queries on them.
 *
 * Each row's metadata is also stored as a `set<text>` column "terms" with an SAI index on its
 * values (catalog.ts): for every field path (a JSON array of its segments, so `{"a.b": 1}` and
 * `{"a": {"b": 1}}` never collide) one presence term `<path>`, and for every scalar at it (each
 * scalar element when it holds an array) one value term `<path>=<type>:<value>`. Long strings are
 * stored as their SHA-256 (`h:`): SAI skips terms above 1 KiB, which would silently miss matches.
 *
 * A filter translates into a union of at most MAX_BRANCHES conjunctions of terms, each one CQL
 * `WHERE "terms" CONTAINS ? AND ...` combined with the ANN clause in one query (run concurrently). Equality, `$in`,
 * `$exists: true`, `$and` and `$or` translate; comparisons, negations (`$ne`, `$nin`,
 * `$exists: false`) and null equality (which also matches a missing field) do not: Cassandra 5.0's
 * SAI has no OR, no NOT, and no ranges on collection entries.
 */
import { createHash } from 'node:crypto';
import { type FilterNode, parseFilter } from '../../index/filter.ts';
import type { Filter, Json, Metadata } from '../api.ts';

/** Conjunctions one filter may fan out to (one query each). */
export const MAX_BRANCHES = 16;
/** Values longer than this (UTF-8 bytes) are indexed by their hash. */
const MAX_PLAIN_BYTES = 256;

type Scalar = null | boolean | number | string;

const pathTerm = (path: readonly string[]): string => JSON.stringify(path);

function valueCode(v: Scalar): string {
  if (v === null) return 'z';
  if (typeof v === 'boolean') return `b:${v}`;
  if (typeof v === 'number') return `n:${String(v)}`;
  return Buffer.byteLength(v, 'utf8') > MAX_PLAIN_BYTES ? `h:${createHash('sha256').update(v, 'utf8').digest('base64url')}` : `s:${v}`;
}

const valueTerm = (path: readonly string[], v: Scalar): string => `${pathTerm(path)}=${valueCode(v)}`;

const isScalar = (v: Json): v is Scalar => v === null || typeof v !== 'object';
const isObject = (v: Json): v is { [k: string]: Json } => v !== null && typeof v === 'object' && !Array.isArray(v);

/** The terms of one row's metadata (see the file comment). */
export function metadataTerms(m: Metadata): string[] {
  const out = new Set<string>();
  const walk = (obj: { [k: string]: Json }, path: string[]): void => {
    for (const k of Object.keys(obj)) {
      const v = obj[k];
      const p = [...path, k];
      out.add(pathTerm(p));
      if (isObject(v)) walk(v, p);
      else if (Array.isArray(v)) for (const x of v) if (isScalar(x)) out.add(valueTerm(p, x));
      if (isScalar(v)) out.add(valueTerm(p, v));
    }
  };
  walk(m ?? {}, []);
  return [...out];
}

/** A filter as CQL: a union of conjunctions of terms; or why the index cannot serve it. */
export type FilterQuery = { branches: string[][] } | { unservable: { path: string; message: string } };

const fieldPointer = (path: readonly string[]): string => `/filter/${path.join('.').replace(/~/g, '~0').replace(/\//g, '~1')}`;

class Unservable extends Error {
  constructor(readonly path: string) {
    super();
  }
}

/** Translates a valid filter (compile it first: this assumes it parses). */
export function filterQuery(filter: Filter): FilterQuery {
  try {
    const branches = dnf(parseFilter(filter));
    return { branches: branches.map((b) => [...new Set(b)]) };
  } catch (err) {
    if (!(err instanceof Unservable)) throw err;
    if (err.path === 'branches') return { unservable: { path: '/filter', message: `fans out to more than ${MAX_BRANCHES} index queries ($in and $or multiply)` } };
    return { unservable: { path: err.path, message: 'comparisons, $ne, $nin, $exists: false and null equality cannot use the index on this table' } };
  }
}

function dnf(node: FilterNode): string[][] {
  switch (node.kind) {
    case 'in':
      if (node.values.includes(null)) throw new Unservable(fieldPointer(node.path));
      return bounded(node.values.map((v) => [valueTerm(node.path, v)]));
    case 'exists':
      return [[pathTerm(node.path)]];
    case 'or':
      return bounded(node.nodes.flatMap(dnf));
    case 'and': {
      let acc: string[][] = [[]];
      for (const child of node.nodes) {
        const d = dnf(child);
        acc = bounded(acc.flatMap((a) => d.map((b) => [...a, ...b])));
      }
      return acc;
    }
    case 'cmp':
      throw new Unservable(fieldPointer(node.path));
    case 'not':
      throw new Unservable(firstPath(node.node));
  }
}

function firstPath(node: FilterNode): string {
  switch (node.kind) {
    case 'and':
    case 'or':
      return node.nodes.length > 0 ? firstPath(node.nodes[0]) : '/filter';
    case 'not':
      return firstPath(node.node);
    default:
      return fieldPointer(node.path);
  }
}

function bounded(b: string[][]): string[][] {
  if (b.length > MAX_BRANCHES) throw new Unservable('branches');
  return b;
}

/** `"terms" CONTAINS ? AND ...` for one conjunction ('' for none). */
export const whereTerms = (terms: readonly string[]): string => terms.map(() => '"terms" CONTAINS ?').join(' AND ');
