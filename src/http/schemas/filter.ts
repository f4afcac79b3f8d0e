/**
 * The metadata filter grammar (src/index/filter.ts) as JSON Schema, for the OpenAPI document:
 * one recursive component, `#/components/schemas/Filter`. The service checks filters itself
 * (its answers name the exact bad operator and count conditions across the whole tree), so the
 * request validator does not run this; the document shows clients what the service accepts.
 */
import { Type } from 'typebox';
import { MAX_CONDITIONS, MAX_DEPTH, MAX_LIST } from '../../index/filter.ts';

export const FILTER_COMPONENT = 'Filter';
export const FILTER_REF = `#/components/schemas/${FILTER_COMPONENT}`;

/** A field path: dot-separated non-empty segments without control characters, not starting with `$`. */
export const FIELD_PATTERN = '^[^$.\\u0000-\\u001f][^.\\u0000-\\u001f]*(\\.[^.\\u0000-\\u001f]+)*$';

const Scalar = Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Null()]);
const Ordered = Type.Union([Type.Number(), Type.String()], { description: 'Numbers compare with numbers, strings with strings (by code point)' });
const ScalarList = Type.Array(Scalar, { maxItems: MAX_LIST });

const Operators = Type.Object(
  {
    $eq: Type.Optional(Scalar),
    $ne: Type.Optional(Scalar),
    $in: Type.Optional(ScalarList),
    $nin: Type.Optional(ScalarList),
    $gt: Type.Optional(Ordered),
    $gte: Type.Optional(Ordered),
    $lt: Type.Optional(Ordered),
    $lte: Type.Optional(Ordered),
    $exists: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false, minProperties: 1, description: 'Operators on one field, all of which must hold' },
);

const Condition = Type.Union([Scalar, Operators], {
  description: 'A value (equality; matches any element of an array field; null also matches a missing field) or operators',
});

const Branches = Type.Array(Type.Unsafe({ $ref: FILTER_REF }), { minItems: 1 });

/** The Filter component. */
export const FilterGrammar = Type.Object(
  { $and: Type.Optional(Branches), $or: Type.Optional(Branches) },
  {
    patternProperties: { [FIELD_PATTERN]: Condition },
    additionalProperties: false,
    maxProperties: MAX_CONDITIONS + 2,
    description:
      `Metadata filter: {field: value} or {field: {$op: value}} (dotted paths into nested objects), combined with $and and $or. ` +
      `At most ${MAX_CONDITIONS} field conditions in the whole filter and ${MAX_DEPTH} levels of $and/$or: these two bounds are checked by the service.`,
  },
);
