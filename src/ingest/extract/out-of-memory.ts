import { ServiceError } from '../../errors.ts';

/** Allocation failures JavaScript can catch (an ArrayBuffer or string past what the ceiling leaves; ICU's `normalize` reports its own as "Icu error"). */
export const OUT_OF_MEMORY = /allocation failed|Invalid string length|Invalid array length|Invalid typed array length|Icu error/i;

/**
 * Whether `e`, or an error it wraps, is an allocation failure. A parser's failure is given as the
 * cause of an unreadable-file error (pdf.ts, docx.ts), and on Node 24 pdf.js's ArrayBuffer past the
 * ceiling arrives that way: it is still the memory ceiling, not a bad file.
 */
export function allocationFailed(e: unknown, depth = 0): boolean {
  if (!(e instanceof Error) || depth > 4) return false;
  return (!(e instanceof ServiceError) && OUT_OF_MEMORY.test(e.message)) || allocationFailed(e.cause, depth + 1);
}
