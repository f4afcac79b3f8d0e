/**
 * Checks that JSON Schema cannot express (byte lengths, float32 range, cross-field rules).
 * Each pushes FieldErrors so one answer names every bad field.
 */
import type { Limits } from '../config/config.ts';
import type { FieldError } from '../errors.ts';
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

export function isZero(v: Float32Array): boolean {
  for (let i = 0; i < v.length; i++) if (v[i] !== 0) return false;
  return true;
}

export function checkKey(key: string, path: string, errors: FieldError[], limits: Limits): void {
  if (key.length === 0) errors.push({ path, message: 'must not be empty' });
  else if (utf8Bytes(key) > limits.keyBytes) errors.push({ path, message: `must be at most ${limits.keyBytes} bytes in UTF-8` });
}

export function checkMetadata(metadata: Metadata | undefined, path: string, errors: FieldError[], limits: Limits): void {
  if (metadata === undefined) return;
  if (utf8Bytes(JSON.stringify(metadata)) > limits.metadataBytes) {
    errors.push({ path, message: `must be at most ${limits.metadataBytes} bytes as JSON` });
  }
}

export function checkText(text: string | undefined, path: string, errors: FieldError[], maxBytes: number): void {
  if (text !== undefined && utf8Bytes(text) > maxBytes) errors.push({ path, message: `must be at most ${maxBytes} bytes in UTF-8` });
}
