/**
 * The one answer to vectors of the wrong dimension, for the service and both backends alike:
 * `dimension_mismatch` with `{expected, actual}` (the table's dimension, and that of the first bad
 * item) and every bad item named as a field error (at most MAX_FIELD_ERRORS). The service checks
 * every request against the table before storage; a backend checks the dimension again only
 * because the table can be dropped and made again with another one in between.
 */
import { describeFields, ServiceError, type CodedFieldError, type FieldError } from '../errors.ts';

/** The field error for a vector of `actual` dimensions where the table holds `expected`. */
export const dimensionError = (path: string, actual: number, expected: number): CodedFieldError => ({
  path,
  message: `has ${actual} dimensions; the table holds ${expected}`,
  code: 'dimension_mismatch',
});

/** The extra members of a dimension_mismatch answer. */
export const dimensionExtra = (expected: number, actual: number): { expected: number; actual: number } => ({ expected, actual });

/**
 * Pushes a dimension_mismatch error at `path` unless `vector` has `expected` values; returns
 * whether it has. `firstBad.actual` is set by the first mismatch (for dimensionExtra).
 */
export function checkDimension(vector: ArrayLike<number>, expected: number, path: string, errors: CodedFieldError[], firstBad: { actual?: number }): boolean {
  if (vector.length === expected) return true;
  errors.push(dimensionError(path, vector.length, expected));
  firstBad.actual ??= vector.length;
  return false;
}

/** The answer when every error is a dimension mismatch. */
export function dimensionMismatch(errors: FieldError[], expected: number, actual: number): ServiceError {
  const plain = errors.map(({ path, message }) => ({ path, message }));
  return new ServiceError('dimension_mismatch', describeFields(plain), { errors: plain, extra: dimensionExtra(expected, actual) });
}

/**
 * A backend's guard for rows it is given: throws the answer above, naming each row at
 * `<basePath>/<i>/vector`, when any row's vector is not of the table's dimension.
 */
export function requireRowDimensions(rows: readonly { vector: ArrayLike<number> }[], expected: number, basePath = ''): void {
  const errors: CodedFieldError[] = [];
  const firstBad: { actual?: number } = {};
  rows.forEach((r, i) => checkDimension(r.vector, expected, `${basePath}/${i}/vector`, errors, firstBad));
  if (errors.length > 0) throw dimensionMismatch(errors, expected, firstBad.actual!);
}

/** A backend's guard for a query vector (named at `/vector`). */
export function requireQueryDimension(vector: ArrayLike<number>, expected: number): void {
  if (vector.length !== expected) throw dimensionMismatch([dimensionError('/vector', vector.length, expected)], expected, vector.length);
}
