/**
 * Schemas are built once from the default limits; the batch limit is configurable
 * (VSS_MAX_BATCH_ITEMS). Arrays marked with BATCH_LIMIT get the configured `maxItems` when routes
 * are added, so the validator and the OpenAPI document both say what this process accepts.
 */
import type { Limits } from '../config/config.ts';

/** Marks an array schema whose `maxItems` is the configured batch limit. */
export const BATCH_LIMIT = Symbol('vss.batchLimit');

/** `schema` with every marked array's maxItems set to `limits.batchItems` (a copy where one changes). */
export function withBatchLimit<T>(schema: T, limits: Pick<Limits, 'batchItems'>): T {
  if (schema === null || typeof schema !== 'object') return schema;
  if (Array.isArray(schema)) {
    const items = schema.map((s) => withBatchLimit(s, limits));
    return (items.some((s, i) => s !== schema[i]) ? items : schema) as T;
  }
  const node = schema as Record<string | symbol, unknown>;
  let copy: Record<string | symbol, unknown> | null = null;
  for (const k of Object.keys(node)) {
    const v = withBatchLimit(node[k], limits);
    if (v !== node[k]) (copy ??= { ...node })[k] = v;
  }
  if (node[BATCH_LIMIT] === true && node.maxItems !== limits.batchItems) (copy ??= { ...node }).maxItems = limits.batchItems;
  return (copy ?? schema) as T;
}
