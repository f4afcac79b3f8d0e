/** When to retry an answer, and how long to wait first. */
export interface RetryPolicy {
  /** Further attempts after the first (default 3). */
  retries: number;
  /** First back-off when the server gives no Retry-After; doubled on each attempt, with jitter (default 500 ms). */
  baseDelayMs: number;
  /** The longest wait the client accepts: a Retry-After beyond it fails at once rather than blocking the caller (default 60 s). */
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { retries: 3, baseDelayMs: 500, maxDelayMs: 60_000 };

/** 429 (rate_limited) and 503 (not_ready, storage_unavailable) are refusals before any work, so sending again is safe. */
export const isRetryable = (status: number): boolean => status === 429 || status === 503;

/** Retry-After as seconds or an HTTP date (RFC 9110 §10.2.3), in milliseconds; null when absent or unreadable. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | null {
  if (value === null) return null;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}

/**
 * The wait before attempt `attempt + 1`: the server's Retry-After when it gave one (never
 * shorter), otherwise exponential back-off with full jitter. Null when the wait exceeds the
 * policy's maximum: the caller gets the error instead.
 */
export function retryDelay(retryAfter: string | null, attempt: number, policy: RetryPolicy, random = Math.random): number | null {
  const asked = parseRetryAfter(retryAfter);
  const delay = asked ?? Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** attempt) * (0.5 + random() / 2);
  return delay > policy.maxDelayMs ? null : delay;
}
