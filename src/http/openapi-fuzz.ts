/**
 * Schema-driven fuzzing of the served OpenAPI document: requests generated from each operation's
 * JSON schemas (fast-check arbitraries for the subset of JSON Schema the document uses), some of
 * them mutated into what a client might get wrong (wrong types, odd or badly encoded path
 * segments, invalid UTF-8 in the query string, broken JSON). Used by openapi-fuzz.test.ts (a short
 * seeded run) and bench/fuzz.bench.ts (a long one).
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';
import fc from 'fast-check';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { isStandardBase64 } from '../platform/float32-base64.ts';

type Schema = {
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: boolean | Schema;
  patternProperties?: Record<string, Schema>;
  items?: Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  enum?: unknown[];
  const?: unknown;
  pattern?: string;
  format?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
  maxProperties?: number;
  minProperties?: number;
  $ref?: string;
};

/** The document's components (for `$ref`s) and how deep a recursive `$ref` may still go. */
interface Context {
  components: Record<string, Schema>;
  depth: number;
}
/**
 * Recursive schemas (the filter's $and/$or) are followed this deep; below, the empty object.
 * Inside them arrays and objects are generated with at most MAX_NESTED_ITEMS members, so that a
 * filter stays under the service's bound on conditions over the whole tree (which no schema can say).
 */
const MAX_REF_DEPTH = 3;
const MAX_NESTED_ITEMS = 2;

/** Generated sizes stay small: the point is shapes and edges, not volume. */
const MAX_GENERATED_ITEMS = 6;
const MAX_GENERATED_CHARS = 40;

const json: fc.Arbitrary<unknown> = fc.jsonValue({ maxDepth: 2 }).map((v) => v as unknown);

const BASE64_FORMAT = 'byte';

/** A string the schema accepts; lengths near the bounds are generated too. */
function stringFor(s: Schema): fc.Arbitrary<string> {
  if (s.pattern) return fc.stringMatching(new RegExp(s.pattern, 'u')).filter((x) => x.length >= (s.minLength ?? 0) && x.length <= (s.maxLength ?? Infinity));
  if (s.format === 'email') return fc.emailAddress().filter((x) => x.length <= (s.maxLength ?? Infinity));
  if (s.format === BASE64_FORMAT) {
    const minBytes = Math.ceil((((s.minLength ?? 4) / 4) * 3) / 4) * 4;
    return fc.array(fc.float({ noNaN: true, noDefaultInfinity: true }), { minLength: Math.max(1, minBytes / 4), maxLength: MAX_GENERATED_ITEMS }).map((v) => Buffer.from(new Float32Array(v).buffer).toString('base64'));
  }
  const minLength = s.minLength ?? 0;
  const maxLength = Math.max(minLength, Math.min(s.maxLength ?? MAX_GENERATED_CHARS, MAX_GENERATED_CHARS));
  // Any code point but lone surrogates (which JSON can carry and the service refuses by design).
  return fc.string({ unit: 'binary', minLength, maxLength });
}

/** A fast-check arbitrary for values `schema` accepts (the subset of JSON Schema the document uses). */
export function arbitraryFor(schema: Schema | boolean | undefined, ctx: Context = { components: {}, depth: 0 }): fc.Arbitrary<unknown> {
  if (schema === undefined || schema === true) return json;
  if (schema === false) return fc.constant(undefined);
  const s = schema;
  if (s.$ref) {
    const target = ctx.components[s.$ref.replace('#/components/schemas/', '')];
    return ctx.depth >= MAX_REF_DEPTH ? fc.constant({}) : arbitraryFor(target, { ...ctx, depth: ctx.depth + 1 });
  }
  if (s.const !== undefined) return fc.constant(s.const);
  if (s.enum) return fc.constantFrom(...s.enum);
  const union = s.anyOf ?? s.oneOf;
  if (union && s.properties) {
    // An object in one of several forms: each branch is the object with the branch's members
    // required, its narrowed members replacing the object's, those it forbids (false) left out,
    // and, for oneOf, without the members only the other branches require.
    const { anyOf: _a, oneOf: _o, ...object } = s;
    return fc.oneof(
      ...union.map((u) => {
        const own = u.required ?? [];
        const others = s.oneOf ? s.oneOf.filter((x) => x !== u).flatMap((x) => x.required ?? []).filter((k) => !own.includes(k)) : [];
        const merged = { ...s.properties, ...u.properties } as Record<string, Schema | boolean>;
        const properties = Object.fromEntries(Object.entries(merged).filter(([k, v]) => v !== false && !others.includes(k)));
        return arbitraryFor({ ...object, properties: properties as Record<string, Schema>, required: [...(s.required ?? []), ...own] }, ctx);
      }),
    );
  }
  if (union) return fc.oneof(...union.map((u) => arbitraryFor(u, ctx)));
  const type = Array.isArray(s.type) ? s.type[0] : s.type;
  switch (type) {
    case 'null':
      return fc.constant(null);
    case 'boolean':
      return fc.boolean();
    case 'integer':
      return fc.integer({ min: Math.max(s.minimum ?? -1e9, Number.MIN_SAFE_INTEGER), max: Math.min(s.maximum ?? 1e9, Number.MAX_SAFE_INTEGER) });
    case 'number':
      return fc.double({ min: s.minimum ?? -1e6, max: s.maximum ?? 1e6, noNaN: true, noDefaultInfinity: true });
    case 'string':
      return stringFor(s);
    case 'array': {
      const minLength = s.minItems ?? 0;
      const most = ctx.depth > 0 ? MAX_NESTED_ITEMS : MAX_GENERATED_ITEMS;
      return fc.array(arbitraryFor(s.items, ctx), { minLength, maxLength: Math.max(minLength, Math.min(s.maxItems ?? most, most)) });
    }
    case 'object':
    case undefined: {
      if (!s.properties && !s.patternProperties && type === undefined) return json;
      const props = s.properties ?? {};
      const required = new Set(s.required ?? []);
      const known = fc.record(
        Object.fromEntries(Object.entries(props).map(([k, v]) => [k, arbitraryFor(v, ctx)])),
        { requiredKeys: Object.keys(props).filter((k) => required.has(k)) },
      );
      const maxKeys = Math.min(s.maxProperties ?? MAX_GENERATED_ITEMS, ctx.depth > 0 ? MAX_NESTED_ITEMS : MAX_GENERATED_ITEMS);
      // Members named by a pattern (the filter's field paths), or any other member where allowed.
      const free: [fc.Arbitrary<string>, Schema | undefined][] = Object.entries(s.patternProperties ?? {}).map(([p, v]) => [stringFor({ pattern: p, maxLength: 12 }), v]);
      if (s.additionalProperties !== false && free.length === 0) {
        const any = s.additionalProperties === true || s.additionalProperties === undefined ? undefined : s.additionalProperties;
        free.push([fc.string({ minLength: 1, maxLength: 12 }), any]);
      }
      const extras = free.map(([key, v]) => fc.dictionary(key.filter((k) => !(k in props)), arbitraryFor(v, ctx), { maxKeys }));
      const object = fc.tuple(known, ...extras).map(([k, ...e]) => Object.assign({}, ...e, k) as Record<string, unknown>);
      return s.minProperties ? object.filter((o) => Object.keys(o).length >= s.minProperties!) : object;
    }
  }
  return json;
}

interface Parameter {
  in: 'path' | 'query' | 'header';
  name: string;
  required?: boolean;
  schema?: Schema;
}
interface Operation {
  parameters?: Parameter[];
  requestBody?: { required?: boolean; content: Record<string, { schema?: Schema }> };
  responses?: Record<string, { content?: Record<string, { schema?: Schema }> }>;
}
export interface OpenApiDocument {
  paths: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, unknown> };
}

export interface FuzzRequest {
  method: string;
  url: string;
  /** JSON text (possibly broken on purpose), or absent. */
  payload?: string;
  /** True when the request is what the document describes (no mutation). */
  valid: boolean;
  mutation?: string;
}

export interface FuzzOperation {
  method: string;
  path: string;
  /** Requests the document describes, and mutated ones. */
  valid: fc.Arbitrary<FuzzRequest>;
  mutated: fc.Arbitrary<FuzzRequest>;
  /** Why an answer is not what the document declares for this operation (status, media type, schema), or null. */
  checkAnswer: (res: LightMyRequestResponse) => string | null;
}

/**
 * Checks answers against the document's response schemas: the status must be declared, and a
 * JSON answer must match the schema of its status and media type (ajv, JSON Schema 2020-12 as
 * OpenAPI 3.1 says; `$ref`s resolve into the document's components).
 */
function answerChecker(doc: OpenApiDocument, op: Operation): (res: LightMyRequestResponse) => string | null {
  const ajv = answerAjv(doc);
  const compiled = new Map<string, ValidateFunction>();
  return (res) => {
    const declared = op.responses?.[String(res.statusCode)];
    if (!declared) return `status ${res.statusCode} is not declared (declared: ${Object.keys(op.responses ?? {}).join(', ')})`;
    const media = String(res.headers['content-type'] ?? '').split(';')[0].trim();
    if (!/json$/.test(media)) return null;
    const schema = declared.content?.[media]?.schema;
    if (!schema) return `${res.statusCode} ${media} is not declared (declared: ${Object.keys(declared.content ?? {}).join(', ')})`;
    const key = `${res.statusCode} ${media}`;
    let validate = compiled.get(key);
    if (!validate) compiled.set(key, (validate = ajv.compile({ ...schema, components: doc.components })));
    if (validate(JSON.parse(res.body))) return null;
    return `${key} does not match its schema: ${ajv.errorsText(validate.errors?.slice(0, 5))}; ${res.body.slice(0, 300)}`;
  };
}

const answerAjvs = new WeakMap<OpenApiDocument, Ajv2020>();
function answerAjv(doc: OpenApiDocument): Ajv2020 {
  let ajv = answerAjvs.get(doc);
  if (ajv) return ajv;
  // Not strict: the document's schemas carry OpenAPI's own keywords (example, components).
  ajv = new Ajv2020({ strict: false, allErrors: true });
  formats.default(ajv);
  ajv.addFormat('byte', { type: 'string', validate: isStandardBase64 });
  ajv.addFormat('binary', true);
  answerAjvs.set(doc, ajv);
  return ajv;
}

/** Percent-encoded sequences that are not UTF-8, bad percent-encoding, and odd segments. */
const BAD_ENCODINGS = ['%FF', '%C0%AF', '%ED%A0%80', '%E2%82', '%80', '%', '%Z9', '%00'];
const ODD_SEGMENTS = ['..', '.', '%2e%2e', '%2F', 'a;b', '~', 'x'.repeat(3000), '%E2%80%AE', '%F0%9F%98%80', '%20', "'\"<>"];

const enc = (v: unknown): string => encodeURIComponent(typeof v === 'string' ? v : JSON.stringify(v));

function buildUrl(path: string, params: Record<string, unknown>, query: Record<string, unknown>): string {
  const filled = path.replace(/\{([^}]+)\}/g, (_, name: string) => {
    const v = params[name];
    // The file-name wildcard may hold slashes: each of its segments is encoded.
    return name === '*' ? String(v).split('/').map(enc).join('/') : enc(v);
  });
  const qs = Object.entries(query)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${enc(k)}=${enc(v)}`)
    .join('&');
  return qs ? `${filled}?${qs}` : filled;
}

/** A value of another JSON type than `v`. */
const otherType = (v: unknown): fc.Arbitrary<unknown> =>
  fc.constantFrom<unknown>(0, -1, 1.5, 1e308, '', 'x', true, null, [], {}, [1, 'a'], { a: 1 }).filter((x) => typeof x !== typeof v || Array.isArray(x) !== Array.isArray(v) || (x === null) !== (v === null));

/** `body` with one member (at any depth) replaced by a value of another type. */
function withWrongType(body: unknown): fc.Arbitrary<unknown> {
  const paths: (string | number)[][] = [];
  const walk = (v: unknown, at: (string | number)[]) => {
    paths.push(at);
    if (v !== null && typeof v === 'object' && at.length < 4) for (const [k, x] of Object.entries(v)) walk(x, [...at, Array.isArray(v) ? Number(k) : k]);
  };
  walk(body, []);
  return fc.tuple(fc.constantFrom(...paths), fc.nat()).chain(([at]) => {
    let target: unknown = body;
    for (const k of at) target = (target as Record<string | number, unknown>)[k];
    return otherType(target).map((replacement) => {
      if (at.length === 0) return replacement;
      const copy = structuredClone(body) as Record<string | number, unknown>;
      let parent = copy;
      for (const k of at.slice(0, -1)) parent = parent[k] as Record<string | number, unknown>;
      parent[at[at.length - 1]] = replacement;
      return copy;
    });
  });
}

/** The operations of the document, each with arbitraries for its requests. */
export function operationsOf(doc: OpenApiDocument): FuzzOperation[] {
  const out: FuzzOperation[] = [];
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      const params = (op.parameters ?? []).filter((p) => p.in === 'path');
      const query = (op.parameters ?? []).filter((p) => p.in === 'query');
      const ctx: Context = { components: (doc.components?.schemas ?? {}) as Record<string, Schema>, depth: 0 };
      const pathArb = fc.record(Object.fromEntries(params.map((p) => [p.name, arbitraryFor(p.schema, ctx)])));
      const queryArb = fc.record(Object.fromEntries(query.map((p) => [p.name, arbitraryFor(p.schema, ctx)])), { requiredKeys: query.filter((p) => p.required).map((p) => p.name) });
      const bodySchema = op.requestBody?.content['application/json']?.schema;
      const bodyArb: fc.Arbitrary<unknown> = bodySchema ? arbitraryFor(bodySchema, ctx) : fc.constant(undefined);
      const M = method.toUpperCase();
      const valid = fc.tuple(pathArb, queryArb, bodyArb).map(([p, q, b]): FuzzRequest => ({
        method: M,
        url: buildUrl(path, p, q),
        ...(b === undefined ? {} : { payload: JSON.stringify(b) }),
        valid: true,
      }));
      const mutated = fc.tuple(pathArb, queryArb, bodyArb).chain(([p, q, b]) => {
        const choices: fc.Arbitrary<FuzzRequest>[] = [
          // A query member that is not UTF-8 or not percent-encoding.
          fc.constantFrom(...BAD_ENCODINGS).map((bad) => ({ method: M, url: `${buildUrl(path, p, q)}${query.length || Object.keys(q).length ? '&' : '?'}${query[0]?.name ?? 'q'}=a${bad}`, payload: b === undefined ? undefined : JSON.stringify(b), valid: false, mutation: 'query encoding' })),
          // Broken JSON and JSON of another shape.
          fc.constantFrom('{', '{"a":', '[1,]', 'nul', '{"a":1}}', '\u0000', '{"__proto__":{"x":1}}', '"\\ud800"', '1e999').map((payload) => ({ method: M, url: buildUrl(path, p, q), payload, valid: false, mutation: 'broken JSON' })),
        ];
        if (params.length > 0) {
          choices.push(
            fc.tuple(fc.constantFrom(...params.map((x) => x.name)), fc.constantFrom(...BAD_ENCODINGS, ...ODD_SEGMENTS)).map(([name, seg]) => ({
              method: M,
              url: buildUrl(path, p, q).replace(enc(p[name]), seg),
              payload: b === undefined ? undefined : JSON.stringify(b),
              valid: false,
              mutation: 'path segment',
            })),
          );
        }
        if (b !== undefined) choices.push(withWrongType(b).map((w) => ({ method: M, url: buildUrl(path, p, q), payload: JSON.stringify(w) ?? 'null', valid: false, mutation: 'wrong type' })));
        if (query.length > 0) choices.push(fc.constantFrom(...ODD_SEGMENTS).map((seg) => ({ method: M, url: `${buildUrl(path, p, {})}?${query[0].name}=${seg}&${query[0].name}=${seg}`, valid: false, mutation: 'query value' })));
        return fc.oneof(...choices);
      });
      out.push({ method: M, path, valid, mutated, checkAnswer: answerChecker(doc, op) });
    }
  }
  return out;
}

export interface FuzzOutcome {
  request: FuzzRequest;
  status: number;
  /** Why the answer breaks the rules (a 5xx, a 4xx without a problem body, or, to a described request, an answer the document does not declare), or null. */
  fault: string | null;
}

/** Statuses that are not the client's fault but are expected here (no container runtime). */
const EXPECTED_5XX: Record<string, string> = { '/v1/docker/': 'runtime_unavailable' };

/** Sends one request through app.inject and judges its answer. */
export async function send(app: FastifyInstance, op: Pick<FuzzOperation, 'path' | 'checkAnswer'>, request: FuzzRequest, headers: Record<string, string>): Promise<FuzzOutcome> {
  const res: LightMyRequestResponse = await app.inject({
    method: request.method as 'GET',
    url: request.url,
    headers: { ...headers, ...(request.payload === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(request.payload === undefined ? {} : { payload: request.payload }),
  });
  return { request, status: res.statusCode, fault: judge(op.path, res) ?? (request.valid ? op.checkAnswer(res) : null) };
}

function judge(path: string, res: LightMyRequestResponse): string | null {
  const problem = (): { code?: unknown; status?: unknown } | null => {
    if (!/^application\/problem\+json/.test(String(res.headers['content-type']))) return null;
    try {
      return JSON.parse(res.body);
    } catch {
      return null;
    }
  };
  if (res.statusCode >= 500) {
    const p = problem();
    return EXPECTED_5XX[path] !== undefined && p?.code === EXPECTED_5XX[path] ? null : `${res.statusCode}: ${res.body.slice(0, 300)}`;
  }
  if (res.statusCode >= 400) {
    const p = problem();
    if (!p || typeof p.code !== 'string' || p.status !== res.statusCode) return `${res.statusCode} without a problem body: ${String(res.headers['content-type'])} ${res.body.slice(0, 200)}`;
  }
  return null;
}

/** Shortens a request for a failure message. */
export const describe = (r: FuzzRequest): string => `${r.method} ${r.url.slice(0, 300)}${r.mutation ? ` [${r.mutation}]` : ''} ${(r.payload ?? '').slice(0, 300)}`;
