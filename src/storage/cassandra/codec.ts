/** Values between the Storage contract and CQL columns: vectors, JSON metadata, timestamps. */
import { type FieldError, ServiceError } from '../../errors.ts';
import type { Metadata, Metric } from '../api.ts';

/**
 * A float32 vector as the bytes of a `vector<float, D>` cell: D big-endian floats. The driver sends
 * a Buffer as it is, where its own Vector encoding makes a buffer per component (4% of the server's
 * CPU in a profile of c16 searches, which bind the query vector twice).
 */
export const toCqlVector = (v: Float32Array): Buffer => Buffer.from(Float32Array.from(v).buffer).swap32();

/** A `vector<float, D>` cell back to full-precision float32. */
export function fromCqlVector(cell: unknown): Float32Array {
  const els = (cell as { elements?: number[] } | null)?.elements;
  if (!Array.isArray(els)) throw new ServiceError('internal', 'Cassandra returned a vector cell the backend cannot read.');
  return Float32Array.from(els);
}

export const toMetadataText = (m: Metadata | null | undefined): string => JSON.stringify(m ?? {});

export function fromMetadataText(s: unknown): Metadata {
  if (typeof s !== 'string' || s === '') return {};
  try {
    const v = JSON.parse(s) as unknown;
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Metadata) : {};
  } catch {
    return {};
  }
}

export const iso = (d: unknown): string => (d instanceof Date ? d.toISOString() : new Date(String(d)).toISOString());

/**
 * The squared norm as Cassandra's vector index (jvector) computes it: a float32 running sum.
 * Under cosine it divides by the norms, so a vector whose float32 squared norm is 0 (all zeros,
 * or components below ~1e-23 that underflow) or overflows gives NaN: the write then fails with a
 * generic server error (an AssertionError inside Cassandra, which runs with -ea), or corrupts the
 * graph's scores. Other metrics overflow to infinity for components beyond ~1e18.
 */
export function float32NormSq(v: Float32Array): number {
  let s = 0;
  for (let i = 0; i < v.length; i++) s = Math.fround(s + Math.fround(v[i] * v[i]));
  return s;
}

/** Below this float32 squared norm a vector has no usable direction under cosine. */
const MIN_COSINE_NORM_SQ = 1e-30;
/**
 * Above this, jvector's float32 arithmetic overflows: cosine multiplies two squared norms, so each
 * must stay below sqrt(float32 max) ~ 1.8e19. Measured on Cassandra 5.0.9: a component of 1e18
 * (squared norm 1e36) failed the write with a server error; 1e15 was stored.
 */
const MAX_NORM_SQ = 1e19;

/** Whether Cassandra's index can take (or rank against) the vector under `metric`. */
export function indexable(v: Float32Array, metric: Metric): boolean {
  const n = float32NormSq(v);
  return n <= MAX_NORM_SQ && (metric !== 'cosine' || n >= MIN_COSINE_NORM_SQ);
}

/**
 * What only Cassandra's vector index refuses (with a generic server error), checked before a
 * write: a norm its float32 arithmetic overflows, and under cosine a (near-)zero vector. The
 * service has checked the dimension and that every value is finite.
 */
export function checkIndexable(v: Float32Array, metric: Metric, path: string): FieldError | null {
  if (indexable(v, metric)) return null;
  return float32NormSq(v) > MAX_NORM_SQ
    ? { path, message: 'its components are too large for the vector index (squared norm above 1e19)' }
    : { path, message: 'a zero (or near-zero) vector has no direction: it cannot be stored in a cosine table' };
}

/** Chunks of at most `size` items. */
export function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

export const utf8Bytes = (s: string | null | undefined): number => (s ? Buffer.byteLength(s, 'utf8') : 0);
