/** The RFC 9457 problem body every error is answered with (src/http/problem.ts writes it). */
import { Type } from 'typebox';
import { ERROR_CODES, MAX_FIELD_ERRORS, type ErrorCode } from '../../errors.ts';

export const PROBLEM_MEDIA_TYPE = 'application/problem+json';

/** The id of the shared problem schema (app.ts adds it; the document lists it under components). */
export const PROBLEM_ID = 'Problem';

/** The problem body, shared by every error response (each narrows `code` to its status's codes). */
export const Problem = Type.Object(
    {
      type: Type.String({ format: 'uri', description: 'https://vss.dev/problems/<code>' }),
      title: Type.String({ description: "The code's fixed title" }),
      status: Type.Integer({ description: 'The HTTP status' }),
      detail: Type.String({ description: 'What went wrong with this request, for people' }),
      instance: Type.String({ description: 'The request path' }),
      code: Type.Unsafe<ErrorCode>({ type: 'string', enum: Object.keys(ERROR_CODES), description: 'The error code (stable; the `type` URI ends with it)' }),
      request_id: Type.String({ description: 'Also in the x-request-id header and the server log' }),
      errors: Type.Optional(
        Type.Array(Type.Object({ path: Type.String({ description: 'JSON pointer into the request: /body/..., /querystring/..., /params/...' }), message: Type.String() }), {
          maxItems: MAX_FIELD_ERRORS,
          description: 'Every bad field (up to the bound)',
        }),
      ),
      errors_truncated: Type.Optional(Type.Literal(true, { description: 'Present when checking stopped before every bad field was named' })),
    },
    {
      $id: PROBLEM_ID,
      description: 'RFC 9457 problem details',
      // Some codes add members: `valid` (unknown_model, unknown_metric), `limit` (rate_limited).
      additionalProperties: true,
      examples: [
        {
          type: 'https://vss.dev/problems/validation_failed',
          title: ERROR_CODES.validation_failed,
          status: 400,
          detail: '/body/keyspace: must match pattern "^[a-z][a-z0-9_]{0,47}$"',
          instance: '/v1/search/',
          code: 'validation_failed',
          request_id: '6f1c2a9e-2f51-4a57-9d43-0c4b1f3c2e11',
          errors: [{ path: '/body/keyspace', message: 'must match pattern "^[a-z][a-z0-9_]{0,47}$"' }],
        },
      ],
    },
  );

/** An error response's schema: the shared problem with `code` one of `codes` (the codes of one status). */
export const problemSchema = (codes: readonly ErrorCode[]) => ({
  allOf: [{ $ref: `${PROBLEM_ID}#` }, { type: 'object', properties: { code: { type: 'string', enum: [...codes] } } }],
});
