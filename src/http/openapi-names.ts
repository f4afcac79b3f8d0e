/**
 * The model and metric names the service accepts, written into the OpenAPI document as `enum`s.
 * The schemas cannot hold them: models are found at start, and an unknown name is its own error
 * (`unknown_model` / `unknown_metric` with the valid names), checked in the service after the
 * schema. Without them a schema-driven client or fuzzer would send any string.
 */
import { METRIC_NAMES } from '../index/metric.ts';

type JsonNode = { [k: string]: unknown };

/** The document with every `model_name` (or `model`) property or parameter listing `models`, and every `metric` one the metric names. */
export function describeNames<T>(doc: T, models: readonly string[]): T {
  // `model` is the OpenAI-compatible /v1/embeddings' name for it.
  const enums: Record<string, readonly string[]> = { model_name: models, model: models, metric: METRIC_NAMES };
  const visit = (node: unknown): void => {
    if (node === null || typeof node !== 'object') return;
    if (Array.isArray(node)) return node.forEach(visit);
    const obj = node as JsonNode;
    const props = obj.properties as JsonNode | undefined;
    if (props && typeof props === 'object') {
      for (const [name, names] of Object.entries(enums)) {
        const p = props[name] as JsonNode | undefined;
        if (p && p.type === 'string' && p.enum === undefined && names.length > 0) p.enum = [...names];
      }
    }
    // A query or path parameter: {name, in, schema}.
    const named = typeof obj.name === 'string' && typeof obj.in === 'string' ? enums[obj.name] : undefined;
    const schema = obj.schema as JsonNode | undefined;
    if (named && schema && schema.type === 'string' && schema.enum === undefined && named.length > 0) schema.enum = [...named];
    for (const v of Object.values(obj)) visit(v);
  };
  visit(doc);
  return doc;
}
