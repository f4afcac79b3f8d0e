/**
 * Rules the service checks itself, shown in the OpenAPI document as JSON Schema. A request
 * schema carries them under SERVICE_CHECKED: the request validator ignores that keyword (the
 * service answers these rules naming every bad field at once, beside its own checks: unknown
 * models, table dimensions), and the document has them merged into the schema, so that a client
 * or generator reading it knows exactly which requests are accepted.
 */
import { FILTER_COMPONENT, FilterGrammar } from './schemas/filter.ts';

export const SERVICE_CHECKED = 'x-vss-service-checked';

type JsonNode = { [k: string]: unknown };

/**
 * The document with every SERVICE_CHECKED member merged into its schema, and the Filter
 * component. Without a reranker configured, `rerank: true` is refused: the document says false.
 */
export function describeServiceChecked<T>(doc: T, opts: { reranker: boolean }): T {
  const visit = (node: unknown): void => {
    if (node === null || typeof node !== 'object') return;
    if (Array.isArray(node)) return node.forEach(visit);
    const obj = node as JsonNode;
    const rerank = (obj.properties as JsonNode | undefined)?.rerank as JsonNode | undefined;
    if (!opts.reranker && rerank?.type === 'boolean') Object.assign(rerank, { const: false, description: `${rerank.description ?? ''} (none is configured on this server)`.trim() });
    const rules = obj[SERVICE_CHECKED] as JsonNode | undefined;
    if (rules) {
      delete obj[SERVICE_CHECKED];
      // A $ref stands for the whole schema: what the validator's schema said beside it goes.
      if (rules.$ref !== undefined) for (const k of ['type', 'patternProperties', 'additionalProperties', 'maxProperties']) delete obj[k];
      Object.assign(obj, JSON.parse(JSON.stringify(rules)));
    }
    for (const v of Object.values(obj)) visit(v);
  };
  visit(doc);
  const d = doc as { components?: { schemas?: JsonNode } };
  d.components ??= {};
  d.components.schemas ??= {};
  d.components.schemas[FILTER_COMPONENT] = JSON.parse(JSON.stringify(FilterGrammar));
  return doc;
}
