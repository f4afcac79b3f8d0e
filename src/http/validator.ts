/**
 * Request validation with bounded error lists. Ajv's `allErrors` names every bad field, but its
 * list grows with the body (a 4 MB array of strings where numbers belong gave 700,000 errors),
 * so each schema gets two validators: a fail-fast one that decides (stops at the first error),
 * and, only for a request that failed, an all-errors one run over a copy of the value cut to a
 * fixed number of nodes. The answer names at most MAX_FIELD_ERRORS fields and says when it stopped.
 */
import { Ajv, type ErrorObject, type Options, type ValidateFunction } from 'ajv';
import formats from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';
import { invalid, MAX_FIELD_ERRORS, type FieldError } from '../errors.ts';
import { isStandardBase64, STANDARD_BASE64 } from '../platform/float32-base64.ts';
import { SERVICE_CHECKED } from './openapi-service-checked.ts';
import { BASE64_FORMAT } from './schemas/index.ts';

/** Nodes (array elements, object members) of a failed value the all-errors pass looks at. */
const ERROR_PASS_NODES = 20_000;
/** Deeper than any request schema reaches; below it a container is passed on empty. */
const ERROR_PASS_DEPTH = 64;

/** A JSON pointer segment. */
const esc = (k: string | number): string => String(k).replace(/~/g, '~0').replace(/\//g, '~1');

/**
 * A copy of `value` holding at most about `budget` nodes, depth-first from the front (indices and
 * keys keep their places, so error paths stay true), and the paths of the containers it cut.
 */
export function cutForErrors(value: unknown, budget = ERROR_PASS_NODES): { value: unknown; cut: Set<string> } {
  const cut = new Set<string>();
  let left = budget;
  const walk = (v: unknown, path: string, depth: number): unknown => {
    if (v === null || typeof v !== 'object') return v;
    if (depth >= ERROR_PASS_DEPTH) {
      cut.add(path);
      return Array.isArray(v) ? [] : {};
    }
    if (Array.isArray(v)) {
      // One element at least: an empty copy of a non-empty array would invent a minItems error.
      const keep = Math.min(v.length, Math.max(1, left));
      left -= keep;
      if (keep < v.length) cut.add(path);
      const out: unknown[] = v.slice(0, keep);
      for (let i = 0; i < keep; i++) out[i] = walk(out[i], `${path}/${i}`, depth + 1);
      return out;
    }
    const keys: string[] = [];
    for (const k in v) {
      if (!Object.hasOwn(v, k)) continue;
      if (left <= 0) {
        cut.add(path);
        break;
      }
      left--;
      keys.push(k);
    }
    const out: Record<string, unknown> = {};
    for (const k of keys) out[k] = walk((v as Record<string, unknown>)[k], `${path}/${esc(k)}`, depth + 1);
    return out;
  };
  return { value: walk(value, '', 0), cut };
}

/** Ajv's errors as field errors with JSON-pointer paths into the request (`/body/...`). */
export function toFieldErrors(errors: readonly ErrorObject[], where: string): FieldError[] {
  const out: (FieldError & { keyword: string })[] = [];
  for (const v of errors) {
    const params = v.params as Record<string, unknown>;
    let path = `/${where}${v.instancePath ?? ''}`;
    let message = v.message ?? 'is invalid';
    if (v.keyword === 'required' && typeof params.missingProperty === 'string') {
      path = `${path}/${esc(params.missingProperty)}`;
      message = 'is required';
    } else if (v.keyword === 'additionalProperties' && typeof params.additionalProperty === 'string') {
      path = `${path}/${esc(params.additionalProperty)}`;
      message = 'is not a known field';
    } else if (v.keyword === 'format' && params.format === BASE64_FORMAT) {
      message = `must be ${STANDARD_BASE64}`;
    } else if (v.keyword === 'oneOf' && Array.isArray(params.passingSchemas) && Array.isArray(v.schema)) {
      // Branches that only require members (a batch's vectors or vector): name them.
      const members = (v.schema as { required?: string[] }[]).flatMap((b) => b.required ?? []);
      if (members.length > 0) message = `give only one of ${members.join(', ')}`;
    }
    out.push({ path, message, keyword: v.keyword });
  }
  // anyOf/oneOf produce a cascade of branch errors. Where one branch got further (errors below
  // the union's path), the others' "must be null" and the union's own line say nothing more.
  const unions = new Set(out.filter((e) => e.keyword === 'anyOf' || e.keyword === 'oneOf').map((e) => e.path));
  const below = new Set<string>();
  for (const e of out) for (let i = e.path.lastIndexOf('/'); i > 0; i = e.path.lastIndexOf('/', i - 1)) below.add(e.path.slice(0, i));
  const seen = new Set<string>();
  return out
    .filter((e) => !(unions.has(e.path) && below.has(e.path) && ['anyOf', 'oneOf', 'type', 'const', 'enum'].includes(e.keyword)))
    .filter((e) => (seen.has(e.path + e.message) ? false : (seen.add(e.path + e.message), true)))
    .map(({ path, message }) => ({ path, message }));
}

/** Errors a cut made up: a container the copy shortened may now miss a required member. */
const madeByCut = (e: ErrorObject, cut: Set<string>): boolean =>
  cut.has(e.instancePath) && (e.keyword === 'required' || e.keyword === 'minProperties' || e.keyword === 'minItems' || e.keyword === 'dependentRequired');

/** The field errors of a value the fail-fast validator refused, at most MAX_FIELD_ERRORS of them. */
function explain(first: ErrorObject, all: ValidateFunction, data: unknown, where: string) {
  const { value, cut } = cutForErrors(data);
  all(value);
  const found = (all.errors ?? []).filter((e) => !madeByCut(e, cut));
  // The fail-fast error is real whatever the cut left out (an array over maxItems, for one).
  if (!found.some((e) => e.instancePath === first.instancePath && e.schemaPath === first.schemaPath)) found.unshift(first);
  const errors = toFieldErrors(found, where);
  return invalid(errors, undefined, { truncated: cut.size > 0 || errors.length > MAX_FIELD_ERRORS });
}

/** Ajv options shared by both validators: never coerce a wrong type into a right one. */
const OPTIONS: Options = { coerceTypes: false, removeAdditional: false, useDefaults: false, addUsedSchema: false };

function makeAjv(allErrors: boolean): Ajv {
  // `verbose` (errors carry their schema) only where errors are explained, for oneOf's message.
  const ajv = new Ajv({ ...OPTIONS, allErrors, verbose: allErrors });
  formats.default(ajv);
  // OpenAPI's base64 format, strict (ajv-formats' own regex is multi-line: "AAAA\n!!" passes)
  // and fast enough for a 1,000-vector batch of `vector_base64` (schemas.ts).
  ajv.addFormat(BASE64_FORMAT, { type: 'string', validate: isStandardBase64 });
  // Rules the service checks itself; only the document shows them (openapi-service-checked.ts).
  ajv.addKeyword({ keyword: SERVICE_CHECKED });
  return ajv;
}

/** Fastify's validator compiler: a refused request fails with a bounded validation_failed ServiceError. */
export function boundedValidatorCompiler(): FastifySchemaCompiler<unknown> {
  const fast = makeAjv(false);
  const full = makeAjv(true);
  return ({ schema, httpPart }) => {
    const check = fast.compile(schema as object);
    let all: ValidateFunction | undefined;
    const where = httpPart ?? 'body';
    return (data: unknown) => {
      if (check(data)) return true;
      // Compiled on the first refusal: most schemas never need it.
      all ??= full.compile(schema as object);
      return { error: explain(check.errors![0], all, data, where) };
    };
  };
}
