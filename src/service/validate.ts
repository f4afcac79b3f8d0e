/**
 * Checks that JSON Schema cannot express (byte lengths, float32 range, cross-field rules).
 * Each pushes FieldErrors so one answer names every bad field.
 */
import type { Limits } from '../config/config.ts';
import type { CodedFieldError, ErrorCode, FieldError } from '../errors.ts';
import { METRIC_NAMES, parseMetric, type Metric } from '../index/metric.ts';
import { isStandardBase64, STANDARD_BASE64 } from '../platform/float32-base64.ts';
import type { Metadata } from '../storage/api.ts';

export const utf8Bytes = (s: string): number => Buffer.byteLength(s, 'utf8');

/** Converts to float32, rejecting what float32 cannot hold (1e39 would become Infinity). */
export function toFloat32(values: readonly number[], path: string, errors: FieldError[], limits: Limits): Float32Array | null {
  if (values.length < 1 || values.length > limits.maxDimension) {
    errors.push({ path, message: `must have 1 to ${limits.maxDimension} numbers (has ${values.length})` });
    return null;
  }
  const out = new Float32Array(values.length);
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    const f = Math.fround(v);
    if (typeof v !== 'number' || !Number.isFinite(f)) {
      errors.push({ path: `${path}/${i}`, message: 'must be a finite number within float32 range' });
      return null;
    }
    out[i] = f;
  }
  return out;
}

const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

/**
 * Decodes a base64 string of little-endian float32 values straight into a Float32Array (one copy,
 * no per-number JS values), rejecting what is not standard base64 (see isStandardBase64; checked
 * here too, so the service never decodes leniently), a byte length that is not a whole number of
 * float32s, a dimension outside 1..maxDimension, and NaN or ±Infinity.
 */
export function fromBase64Float32(encoded: string, path: string, errors: FieldError[], limits: Limits): Float32Array | null {
  const maxChars = 4 * Math.ceil((limits.maxDimension * 4) / 3);
  const notBase64 = () => errors.push({ path, message: `must be ${STANDARD_BASE64}` });
  if (typeof encoded !== 'string' || encoded.length > maxChars) {
    errors.push({ path, message: `must encode 1 to ${limits.maxDimension} float32 values (at most ${maxChars} base64 characters)` });
    return null;
  }
  if (encoded.length % 4 !== 0) {
    notBase64();
    return null;
  }
  const pad = encoded.endsWith('==') ? 2 : encoded.endsWith('=') ? 1 : 0;
  const bytes = (encoded.length / 4) * 3 - pad;
  if (bytes % 4 !== 0) {
    if (!isStandardBase64(encoded)) notBase64();
    else errors.push({ path, message: `decodes to ${bytes} bytes, not a multiple of 4 (float32 values are 4 bytes each)` });
    return null;
  }
  const n = bytes / 4;
  if (n < 1 || n > limits.maxDimension) {
    errors.push({ path, message: `must have 1 to ${limits.maxDimension} float32 values (has ${n})` });
    return null;
  }
  const out = new Float32Array(n);
  const view = Buffer.from(out.buffer, out.byteOffset, out.byteLength);
  view.write(encoded, 0, bytes, 'base64');
  // Encoding the bytes again gives the same string only if it was canonical standard base64.
  if (view.toString('base64') !== encoded) {
    notBase64();
    return null;
  }
  if (!LITTLE_ENDIAN) view.swap32();
  for (let i = 0; i < n; i++) {
    if (!Number.isFinite(out[i])) {
      errors.push({ path, message: `value ${i} is ${out[i]}: every value must be a finite float32` });
      return null;
    }
  }
  return out;
}

export type VectorField = 'vector' | 'vector_base64';

/**
 * The vector of a record or query given as `vector` (JSON numbers) or `vector_base64` (exactly
 * one may be given): float32 values, the field they came from (for error paths), or nulls when
 * neither is given or the one given is bad (errors pushed, each at `<base>/<field>`).
 */
export function vectorOf(
  r: { vector?: readonly number[]; vector_base64?: string },
  base: string,
  errors: FieldError[],
  limits: Limits,
): { vector: Float32Array | null; field: VectorField | null } {
  if (r.vector !== undefined && r.vector_base64 !== undefined) {
    const message = 'give either vector or vector_base64, not both';
    errors.push({ path: `${base}/vector`, message }, { path: `${base}/vector_base64`, message });
    return { vector: null, field: 'vector_base64' };
  }
  if (r.vector_base64 !== undefined) return { vector: fromBase64Float32(r.vector_base64, `${base}/vector_base64`, errors, limits), field: 'vector_base64' };
  if (r.vector !== undefined) return { vector: toFloat32(r.vector, `${base}/vector`, errors, limits), field: 'vector' };
  return { vector: null, field: null };
}

export function isZero(v: Float32Array): boolean {
  for (let i = 0; i < v.length; i++) if (v[i] !== 0) return false;
  return true;
}

/**
 * A string with a lone UTF-16 surrogate ("\ud800" is valid JSON) has no UTF-8 form: stored, it
 * comes back as U+FFFD, a different key that no later get or delete finds.
 */
const WELL_FORMED = 'must be well-formed Unicode (no lone UTF-16 surrogate)';

export function checkWellFormed(value: string, path: string, errors: FieldError[]): boolean {
  if (value.isWellFormed()) return true;
  errors.push({ path, message: WELL_FORMED });
  return false;
}

export function checkKey(key: string, path: string, errors: FieldError[], limits: Limits): void {
  if (key.length === 0) errors.push({ path, message: 'must not be empty' });
  else if (checkWellFormed(key, path, errors) && utf8Bytes(key) > limits.keyBytes) errors.push({ path, message: `must be at most ${limits.keyBytes} bytes in UTF-8` });
}

/**
 * Deepest nesting of objects and arrays in metadata. SQLite's JSON functions, which filters run
 * over every row, refuse documents nested 1,000 deep, so one deeper row would fail every
 * filtered query on its table; JSON.stringify overflows the stack a few thousand deep.
 */
const MAX_METADATA_DEPTH = 64;

/** Nesting depth of a parsed JSON value (a scalar is 0), without recursion; stops past `limit`. */
function jsonDepth(value: unknown, limit: number): number {
  let deepest = 0;
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    const d = depth + 1;
    if (d > deepest) deepest = d;
    if (deepest > limit) return deepest;
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (child !== null && typeof child === 'object') stack.push([child, d]);
    }
  }
  return deepest;
}

export function checkMetadata(metadata: Metadata | undefined, path: string, errors: FieldError[], limits: Limits): void {
  if (metadata === undefined) return;
  if (jsonDepth(metadata, MAX_METADATA_DEPTH) > MAX_METADATA_DEPTH) {
    errors.push({ path, message: `must not nest objects and arrays more than ${MAX_METADATA_DEPTH} deep` });
  } else if (utf8Bytes(JSON.stringify(metadata)) > limits.metadataBytes) {
    errors.push({ path, message: `must be at most ${limits.metadataBytes} bytes as JSON` });
  }
}

export function checkText(text: string | undefined, path: string, errors: FieldError[], maxBytes: number): void {
  if (text === undefined) return;
  if (checkWellFormed(text, path, errors) && utf8Bytes(text) > maxBytes) errors.push({ path, message: `must be at most ${maxBytes} bytes in UTF-8` });
}

/** The model names a request may use (the registry's view of them). */
interface ModelNames {
  has(name: string): boolean;
  names(): string[];
}

/** False (and `path` named, as unknown_model) when the request names a model that is not here. */
export function checkModelName(models: ModelNames, name: string | undefined, path: string, errors: CodedFieldError[]): boolean {
  if (name === undefined || models.has(name)) return true;
  errors.push({ path, message: `is not a known model; valid: ${models.names().join(', ')}`, code: 'unknown_model' });
  return false;
}

/** The metric a request names, or null (and `path` named, as unknown_metric). */
export function checkMetricName(name: string, path: string, errors: CodedFieldError[]): Metric | null {
  const metric = parseMetric(name);
  if (metric === null) errors.push({ path, message: `is not a known metric; valid: ${METRIC_NAMES.join(', ')}`, code: 'unknown_metric' });
  return metric;
}

/** The `valid` lists an answer carries when all that is wrong is a model or a metric name. */
export const validNames = (models: ModelNames): Partial<Record<ErrorCode, Record<string, unknown>>> => ({
  unknown_metric: { valid: METRIC_NAMES },
  unknown_model: { valid: models.names() },
});
