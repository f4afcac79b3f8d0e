/** The server's limits on one write (docs/API.md, Limits): 1,000 items and a 32 MiB JSON body. */
export interface BatchLimits {
  maxItems: number;
  maxBytes: number;
}

export const SERVER_BATCH_LIMITS: BatchLimits = { maxItems: 1000, maxBytes: 32 * 1024 * 1024 };

/** Room left in each body for the envelope around the items (keyspace, table, model name). */
const ENVELOPE_BYTES = 4096;

const encoder = new TextEncoder();

/**
 * Splits items into consecutive batches of at most `maxItems` whose JSON (as sent, with commas)
 * stays under `maxBytes`. An item too large on its own goes alone, and the server answers it 413.
 */
export function splitBatches<T>(items: readonly T[], limits: BatchLimits = SERVER_BATCH_LIMITS): T[][] {
  const budget = limits.maxBytes - ENVELOPE_BYTES;
  const batches: T[][] = [];
  let current: T[] = [];
  let bytes = 0;
  for (const item of items) {
    const size = encoder.encode(JSON.stringify(item)).byteLength + 1;
    if (current.length > 0 && (current.length >= limits.maxItems || bytes + size > budget)) {
      batches.push(current);
      current = [];
      bytes = 0;
    }
    current.push(item);
    bytes += size;
  }
  if (current.length > 0) batches.push(current);
  return batches;
}
