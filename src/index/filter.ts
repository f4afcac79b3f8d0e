/**
 * Metadata filters in the document-store dialect (see Filter in storage/api.ts): validation,
 * translation to SQLite JSON SQL, and an in-memory matcher with the same semantics, so that a
 * backend which cannot push a filter down can post-filter and still agree with the embedded one.
 *
 * Semantics (Mongo's, restricted to scalars):
 * - A field is a dotted path through nested objects; a path never descends into arrays.
 * - When the field holds an array, a comparison matches if any element matches
 *   (`{tags: "x"}` matches `tags: ["x", "y"]`); `$ne`/`$nin` match when no element does.
 * - Comparisons are type-strict: numbers with numbers, strings with strings (by code point),
 *   booleans only by equality; `true` is not `1`.
 * - `{f: null}` and `$eq: null` match a missing field as well as a null one; `$ne`/`$nin` match
 *   rows where the field is missing; `$exists: true` matches a field that is null.
 */
import { MAX_FIELD_ERRORS, type FieldError } from '../errors.ts';

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type Scalar = null | boolean | number | string;
export type Filter = { [k: string]: Json };

const COMPARE_OPS = ['$gt', '$gte', '$lt', '$lte'] as const;
const FIELD_OPS = ['$eq', '$ne', '$in', '$nin', ...COMPARE_OPS, '$exists'] as const;
const LOGICAL_OPS = ['$and', '$or'] as const;
export const MAX_DEPTH = 32;
export const MAX_LIST = 10_000;
/**
 * Field conditions in one filter (each operator of a field counts). SQLite refuses an expression
 * tree deeper than 1,000, and a chain of conditions nests one level per condition: ~1,000 of them
 * failed every query, whichever the rows.
 */
export const MAX_CONDITIONS = 256;

type Compare = (typeof COMPARE_OPS)[number];

/** A validated filter, in a form both the SQL and the JS side walk (and a backend translating it to its own index). */
export type FilterNode = Node;
type Node =
  | { kind: 'and' | 'or'; nodes: Node[] }
  | { kind: 'not'; node: Node }
  | { kind: 'exists'; path: string[] }
  | { kind: 'in'; path: string[]; values: Scalar[] }
  | { kind: 'cmp'; path: string[]; op: Compare; value: number | string };

const isPlainObject = (v: unknown): v is { [k: string]: Json } =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && (Object.getPrototypeOf(v) === Object.prototype || Object.getPrototypeOf(v) === null);
const isScalar = (v: unknown): v is Scalar =>
  v === null || typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v));
/** JSON pointer escaping for error paths. */
const esc = (k: string): string => k.replace(/~/g, '~0').replace(/\//g, '~1');

// ---------------------------------------------------------------- validation

/**
 * The problems in the filter, with JSON-pointer paths under `basePath` (e.g. `/filter/price/$gtx`).
 * The walk stops once the filter has too many conditions or more than MAX_FIELD_ERRORS problems
 * (a filter of 100,000 bad conditions would otherwise name them all); the caller's answer then
 * says it stopped.
 */
export function validateFilter(filter: unknown, basePath = '/filter'): FieldError[] {
  const errors: FieldError[] = [];
  parseAll(filter, basePath, errors);
  return errors;
}

/** Where parse stops looking: enough is known to refuse the filter. */
const enough = (errors: FieldError[], count: { conditions: number }): boolean => errors.length > MAX_FIELD_ERRORS || count.conditions > MAX_CONDITIONS;

function parseAll(filter: unknown, basePath: string, errors: FieldError[]): Node {
  const count = { conditions: 0 };
  const node = parse(filter, basePath, 0, errors, count);
  if (count.conditions > MAX_CONDITIONS) errors.push({ path: basePath, message: `has more than ${MAX_CONDITIONS} conditions` });
  return node;
}

function parse(filter: unknown, p: string, depth: number, errors: FieldError[], count: { conditions: number }): Node {
  const nodes: Node[] = [];
  if (depth > MAX_DEPTH) {
    errors.push({ path: p, message: `nested more than ${MAX_DEPTH} levels deep` });
  } else if (!isPlainObject(filter)) {
    errors.push({ path: p, message: 'must be an object' });
  } else {
    for (const k in filter) {
      if (enough(errors, count)) break;
      if (!Object.hasOwn(filter, k)) continue;
      const v = filter[k];
      const kp = `${p}/${esc(k)}`;
      if (k === '$and' || k === '$or') {
        if (!Array.isArray(v) || v.length === 0) {
          errors.push({ path: kp, message: 'must be a non-empty array of filters' });
          continue;
        }
        const children: Node[] = [];
        for (let i = 0; i < v.length && !enough(errors, count); i++) children.push(parse(v[i], `${kp}/${i}`, depth + 1, errors, count));
        nodes.push({ kind: k === '$and' ? 'and' : 'or', nodes: children });
      } else if (k.startsWith('$')) {
        errors.push({ path: kp, message: `unknown operator; at this level only ${LOGICAL_OPS.join(', ')} or a field name` });
      } else {
        count.conditions += isPlainObject(v) ? Math.max(1, Object.keys(v).length) : 1;
        const path = parseField(k, kp, errors);
        if (path) nodes.push(parseCondition(path, v, kp, errors));
      }
    }
  }
  return nodes.length === 1 ? nodes[0] : { kind: 'and', nodes };
}

function parseField(field: string, p: string, errors: FieldError[]): string[] | null {
  const segs = field.split('.');
  if (segs.some((s) => s === '')) {
    errors.push({ path: p, message: 'a field path must not have empty segments' });
    return null;
  }
  if (/[\u0000-\u001f]/.test(field)) {
    errors.push({ path: p, message: 'a field path must not contain control characters' });
    return null;
  }
  return segs;
}

function parseCondition(path: string[], cond: Json, p: string, errors: FieldError[]): Node {
  if (!isPlainObject(cond)) {
    if (isScalar(cond)) return eqNode(path, cond);
    errors.push({ path: p, message: Array.isArray(cond) ? 'an array cannot be matched: use $in' : 'must be a string, a finite number, a boolean, null or an operator object' });
    return eqNode(path, null);
  }
  const keys = Object.keys(cond);
  const ops = keys.filter((k) => k.startsWith('$'));
  if (keys.length === 0 || ops.length === 0) {
    errors.push({ path: p, message: 'an object cannot be matched: use dotted paths or operators such as $eq' });
    return eqNode(path, null);
  }
  if (ops.length !== keys.length) {
    errors.push({ path: p, message: 'must not mix operators and field names' });
  }
  const nodes: Node[] = [];
  for (const op of ops) {
    if (errors.length > MAX_FIELD_ERRORS) break;
    const v = cond[op];
    const op_p = `${p}/${esc(op)}`;
    const bad = (message: string): void => void errors.push({ path: op_p, message });
    switch (op) {
      case '$eq':
      case '$ne':
        if (!isScalar(v)) bad('must be a string, a finite number, a boolean or null');
        else nodes.push(op === '$eq' ? eqNode(path, v) : { kind: 'not', node: eqNode(path, v) });
        break;
      case '$in':
      case '$nin':
        if (!Array.isArray(v)) bad('must be an array');
        else if (v.length > MAX_LIST) bad(`must have at most ${MAX_LIST} values`);
        else if (!v.every(isScalar)) {
          for (let i = 0; i < v.length && errors.length <= MAX_FIELD_ERRORS; i++) {
            if (!isScalar(v[i])) errors.push({ path: `${op_p}/${i}`, message: 'must be a string, a finite number, a boolean or null' });
          }
        } else {
          const node: Node = { kind: 'in', path, values: v as Scalar[] };
          nodes.push(op === '$in' ? node : { kind: 'not', node });
        }
        break;
      case '$gt':
      case '$gte':
      case '$lt':
      case '$lte':
        if (typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v))) nodes.push({ kind: 'cmp', path, op, value: v });
        else bad('must be a finite number or a string');
        break;
      case '$exists':
        if (typeof v !== 'boolean') bad('must be true or false');
        else nodes.push(v ? { kind: 'exists', path } : { kind: 'not', node: { kind: 'exists', path } });
        break;
      default:
        bad(`unknown operator; valid: ${FIELD_OPS.join(', ')}`);
    }
  }
  return nodes.length === 1 ? nodes[0] : { kind: 'and', nodes };
}

const eqNode = (path: string[], value: Scalar): Node => ({ kind: 'in', path, values: [value] });

/** The tree of a filter; throws TypeError naming every problem when it is invalid. */
export function parseFilter(filter: Filter): FilterNode {
  return compile(filter);
}

function compile(filter: Filter): Node {
  const errors: FieldError[] = [];
  const node = parseAll(filter, '/filter', errors);
  if (errors.length > 0) throw new TypeError(`invalid filter: ${errors.map((e) => `${e.path}: ${e.message}`).join('; ')}`);
  return node;
}

// ---------------------------------------------------------------- SQL

/** SQLite JSON path for a field path, each segment quoted (dots, spaces, brackets are literal). */
export const jsonPath = (path: string[]): string => '$' + path.map((s) => `."${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`).join('');

/**
 * A boolean SQL expression over the JSON text column `column` (never NULL, so NOT and
 * negations behave), with positional parameters. The filter must have passed validateFilter.
 */
export function filterToSql(filter: Filter, column = 'metadata'): { sql: string; params: unknown[] } {
  const params: unknown[] = [];
  const sql = toSql(compile(filter), column, params);
  return { sql, params };
}

function toSql(node: Node, col: string, params: unknown[]): string {
  const param = (v: unknown): string => {
    params.push(v);
    return '?';
  };
  switch (node.kind) {
    case 'and':
    case 'or':
      if (node.nodes.length === 0) return node.kind === 'and' ? '1' : '0';
      return `(${node.nodes.map((n) => toSql(n, col, params)).join(node.kind === 'and' ? ' AND ' : ' OR ')})`;
    case 'not':
      return `(NOT ${toSql(node.node, col, params)})`;
    case 'exists':
      return `(json_type(${col}, ${sqlLiteral(jsonPath(node.path))}) IS NOT NULL)`;
    case 'cmp': {
      const sqlOp = { $gt: '>', $gte: '>=', $lt: '<', $lte: '<=' }[node.op];
      if (typeof node.value === 'string') return anyElement(col, node.path, (v, t) => `(${t} = 'text' AND ${v} ${sqlOp} ${param(node.value)})`);
      // The bound goes through SQLite's JSON parser as the stored numbers did (as $in's values do):
      // past 2^53 a number's JSON text ("1152921504606847000" for 2^60) reads back as an integer
      // that is not the double, and against the double itself 2^60 was "> 2^60".
      const json = JSON.stringify(node.value);
      return anyElement(col, node.path, (v, t) => `(${t} IN ('integer','real') AND ${v} ${sqlOp} json_extract(${param(json)}, '$'))`);
    }
    case 'in': {
      const nums = node.values.filter((v): v is number => typeof v === 'number');
      const strs = node.values.filter((v): v is string => typeof v === 'string');
      const bools = [...new Set(node.values.filter((v): v is boolean => typeof v === 'boolean'))];
      const hasNull = node.values.includes(null);
      const terms: string[] = [];
      if (hasNull) terms.push(`(json_type(${col}, ${sqlLiteral(jsonPath(node.path))}) IS NULL)`);
      if (nums.length > 0 || strs.length > 0 || bools.length > 0 || hasNull) {
        terms.push(
          anyElement(col, node.path, (v, t) => {
            const alts: string[] = [];
            if (nums.length > 0) alts.push(`(${t} IN ('integer','real') AND ${v} IN (SELECT value FROM json_each(${param(JSON.stringify(nums))})))`);
            if (strs.length > 0) alts.push(`(${t} = 'text' AND ${v} IN (SELECT value FROM json_each(${param(JSON.stringify(strs))})))`);
            for (const b of bools) alts.push(`${t} = '${b ? 'true' : 'false'}'`);
            if (hasNull) alts.push(`${t} = 'null'`);
            return `(${alts.join(' OR ')})`;
          }),
        );
      }
      return terms.length === 0 ? '0' : `(${terms.join(' OR ')})`;
    }
  }
}

/**
 * `pred(value, type)` of the field, or of any element when the field is an array. The CASE keeps
 * the common scalar case free of a json_each scan; coalesce turns "field missing" into false.
 * The path is a quoted SQL literal rather than a parameter because `pred` may name it many times.
 */
function anyElement(col: string, path: string[], pred: (value: string, type: string) => string): string {
  const p = sqlLiteral(jsonPath(path));
  const inArray = pred('value', 'type');
  const scalar = pred(`json_extract(${col}, ${p})`, `json_type(${col}, ${p})`);
  return `(CASE json_type(${col}, ${p}) WHEN 'array' THEN EXISTS (SELECT 1 FROM json_each(${col}, ${p}) WHERE ${inArray}) ELSE coalesce(${scalar}, 0) END)`;
}

const sqlLiteral = (s: string): string => `'${s.replace(/'/g, "''")}'`;

// ---------------------------------------------------------------- in memory

/** Whether a metadata object matches a (validated) filter, with the same semantics as filterToSql; compiled once for matching many rows. */
export function compileFilter(filter: Filter): (metadata: { [k: string]: Json } | null | undefined) => boolean {
  const node = compile(filter);
  return (m) => matches(m ?? {}, node);
}

function matches(doc: { [k: string]: Json }, node: Node): boolean {
  switch (node.kind) {
    case 'and':
      return node.nodes.every((n) => matches(doc, n));
    case 'or':
      return node.nodes.some((n) => matches(doc, n));
    case 'not':
      return !matches(doc, node.node);
    case 'exists':
      return lookup(doc, node.path) !== undefined;
    case 'cmp': {
      const c = node.value;
      return anyOf(lookup(doc, node.path), (x) => {
        if (typeof c === 'number' ? typeof x !== 'number' : typeof x !== 'string') return false;
        const d = typeof c === 'number' ? (x as number) - c : compareCodePoints(x as string, c);
        return node.op === '$gt' ? d > 0 : node.op === '$gte' ? d >= 0 : node.op === '$lt' ? d < 0 : d <= 0;
      });
    }
    case 'in': {
      const v = lookup(doc, node.path);
      if (v === undefined) return node.values.includes(null);
      return anyOf(v, (x) => node.values.some((c) => x === c));
    }
  }
}

function anyOf(v: Json | undefined, f: (x: Json) => boolean): boolean {
  if (v === undefined) return false;
  return Array.isArray(v) ? v.some(f) : f(v);
}

function lookup(doc: { [k: string]: Json }, path: string[]): Json | undefined {
  let cur: Json | undefined = doc;
  for (const seg of path) {
    if (!isPlainObject(cur) || !Object.hasOwn(cur, seg)) return undefined;
    cur = cur[seg];
  }
  return cur;
}

/** Code-point order, as SQLite compares UTF-8 text (JS `<` compares UTF-16 units). */
export function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.codePointAt(i)!;
    const y = b.codePointAt(i)!;
    if (x !== y) return x - y;
    if (x > 0xffff) i++;
  }
  return a.length - b.length;
}
