import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { ERROR_CODES, type ErrorCode } from '../errors.ts';
import { STATUS } from './problem.ts';
import { PROBLEM_MEDIA_TYPE } from './schemas/problem.ts';
import { startTestApp, type TestApp } from './testing.ts';

type Media = Record<string, { schema?: { allOf?: [unknown, { properties: { code: { enum: string[] } } }] } }>;
type Operation = { responses?: Record<string, { content?: Media }> };
type Document = { paths: Record<string, Record<string, Operation>> };

/**
 * What the document leaves unsaid: an operation without a success response, a declared response
 * without a schema for each of its media types, or a problem response listing a code that
 * problem.ts answers with another status.
 */
function gaps(doc: Document): string[] {
  const out: string[] = [];
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      const name = `${method.toUpperCase()} ${path}`;
      const responses = op.responses ?? {};
      if (!Object.keys(responses).some((s) => /^2\d\d$/.test(s))) out.push(`${name}: no success response`);
      for (const [status, r] of Object.entries(responses)) {
        const media = Object.entries(r.content ?? {});
        if (media.length === 0) out.push(`${name} ${status}: no content`);
        for (const [type, m] of media) if (m.schema === undefined) out.push(`${name} ${status} ${type}: no schema`);
        const codes = r.content?.[PROBLEM_MEDIA_TYPE]?.schema?.allOf?.[1].properties.code.enum ?? [];
        if (Number(status) >= 400 && r.content?.[PROBLEM_MEDIA_TYPE] === undefined && !(path === '/v1/healthcheck/' && status === '503')) out.push(`${name} ${status}: not a problem body`);
        for (const c of codes) if (!(c in ERROR_CODES) || STATUS[c as ErrorCode] !== Number(status)) out.push(`${name} ${status}: code ${c} is answered with ${STATUS[c as ErrorCode]}`);
      }
    }
  }
  return out;
}

/**
 * Where success answers declare a union of constants: fast-json-stringify writes such a union by
 * validating the value against each branch with Ajv on every answer (compiled on the first one),
 * where a string enum is written as it is (schemas/answers.ts, Enum).
 */
function constUnions(doc: Document): string[] {
  const out: string[] = [];
  // TypeBox writes a literal as `const`, which @fastify/swagger serves as a one-value `enum`.
  const constant = (b: unknown) => typeof b === 'object' && b !== null && ('const' in b || (b as { enum?: unknown[] }).enum?.length === 1);
  const walk = (s: unknown, at: string): void => {
    if (s === null || typeof s !== 'object') return;
    const union = (s as { anyOf?: unknown[] }).anyOf ?? (s as { oneOf?: unknown[] }).oneOf;
    if (union?.every(constant)) out.push(at);
    for (const [k, v] of Object.entries(s)) walk(v, `${at}/${k}`);
  };
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      for (const [status, r] of Object.entries(op.responses ?? {})) {
        if (/^2\d\d$/.test(status)) walk(r.content?.['application/json']?.schema, `${method.toUpperCase()} ${path} ${status}`);
      }
    }
  }
  return out;
}

describe('the served /v1/openapi.json', () => {
  let t: TestApp;
  let doc: Document;
  before(async () => {
    t = await startTestApp({ model: 'fake' });
    doc = (await t.call('GET', '/v1/openapi.json')).json();
  });
  after(() => t.close());

  it('is a valid OpenAPI 3.1 document', async () => {
    const validator = new Validator();
    const res = await validator.validate(structuredClone(doc) as never);
    assert.equal(validator.version, '3.1');
    assert.ok(res.valid, JSON.stringify(res.errors, null, 1)?.slice(0, 3000));
  });

  it('declares a success response and a schema for every response of every operation', () => {
    assert.ok(Object.keys(doc.paths).length > 30);
    assert.deepEqual(gaps(doc), []);
  });

  it('gives every operation that needs a key 401 and 403 problems, and every operation 400, 429 and 500', () => {
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        const statuses = Object.keys(op.responses ?? {});
        const need = ['400', '500', ...(path === '/metrics' || path.startsWith('/v1/files/') || path === '/v1/embed/' ? [] : ['429'])];
        for (const s of need) assert.ok(statuses.includes(s), `${method} ${path} lacks ${s}: ${statuses}`);
        if (!['/v1', '/v1/healthcheck/', '/v1/stripe/webhook/checkout'].includes(path)) for (const s of ['401', '403']) assert.ok(statuses.includes(s), `${method} ${path} lacks ${s}`);
      }
    }
  });

  it('declares no union of constants in a success answer, and the check finds one', () => {
    assert.deepEqual(constUnions(doc), []);
    const broken = structuredClone(doc) as unknown as { paths: Record<string, Record<string, { responses: Record<string, { content: Record<string, { schema: { properties: Record<string, unknown> } }> }> }>> };
    broken.paths['/v1/search/'].post.responses['200'].content['application/json'].schema.properties.mode = { anyOf: [{ type: 'string', enum: ['semantic'] }, { const: 'lexical' }] };
    assert.deepEqual(constUnions(broken as unknown as Document), ['POST /v1/search/ 200/properties/mode']);
  });

  it('the gap check finds a missing schema, a missing success response and a code under the wrong status', () => {
    const broken = structuredClone(doc);
    delete broken.paths['/v1/search/'].post.responses!['200'];
    delete broken.paths['/v1/vector/get'].post.responses!['404'].content![PROBLEM_MEDIA_TYPE].schema;
    broken.paths['/v1/vector/count'].post.responses!['400'].content![PROBLEM_MEDIA_TYPE].schema!.allOf![1].properties.code.enum = ['table_not_found'];
    assert.deepEqual(gaps(broken), [
      'POST /v1/search/: no success response',
      'POST /v1/vector/get 404 application/problem+json: no schema',
      'POST /v1/vector/count 400: code table_not_found is answered with 404',
    ]);
  });
});
