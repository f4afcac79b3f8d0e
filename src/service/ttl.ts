/**
 * TTL as the API speaks it: `ttl_seconds` on writes (per item, per request, the table's
 * `default_ttl_seconds`) becomes an absolute expiry that storage keeps (ms since the epoch), and
 * `expires_at` in answers is that instant as ISO 8601 (null: never).
 */
import type { FieldError } from '../errors.ts';
import { MAX_TTL_SECONDS } from '../storage/api.ts';
import type { Deps } from './deps.ts';

export { MAX_TTL_SECONDS };

/** The clock expiries are counted from (tests inject theirs through Deps). */
export const clockOf = (deps: Deps): (() => number) => deps.clock ?? Date.now;

/** Checks a TTL field: absent, null (never expires) or whole seconds from 1 to MAX_TTL_SECONDS. */
export function checkTtl(v: unknown, path: string, errors: FieldError[]): void {
  if (v === undefined || v === null) return;
  if (!(Number.isInteger(v) && (v as number) >= 1 && (v as number) <= MAX_TTL_SECONDS)) {
    errors.push({ path, message: `must be whole seconds from 1 to ${MAX_TTL_SECONDS}, or null for no expiry` });
  }
}

/**
 * The TTL a record is written with: its own when it names one (null included: never), else the
 * request's, else the table's default; null: never.
 */
export function effectiveTtl(own: number | null | undefined, request: number | null | undefined, tableDefault: number | null): number | null {
  if (own !== undefined) return own;
  if (request !== undefined) return request;
  return tableDefault;
}

/** The expiry (ms since the epoch) of a write at `now` with `ttl` seconds; null: never. */
export const expiryAt = (now: number, ttl: number | null): number | null => (ttl === null ? null : now + ttl * 1000);

/** An expiry as answered: ISO 8601, or null for never. */
export const expiresAtIso = (ms: number | null | undefined): string | null => (ms === null || ms === undefined ? null : new Date(ms).toISOString());
