import type { Metadata, StoredMatch, Storage } from '../storage/api.ts';

/**
 * A match's metadata is its own metadata, plus its `text`, plus the fields of the metadata
 * record of its source (API.md: search), joined by (keyspace, table, source_file).
 * The vector's own fields win over the source record's on a name clash.
 */
export async function enrichWithSources<M extends StoredMatch>(storage: Storage, keyspace: string, table: string, matches: M[]): Promise<(M & { metadata: Metadata })[]> {
  const sources = [...new Set(matches.map((m) => m.metadata.source_file).filter((s): s is string => typeof s === 'string'))];
  const records = sources.length > 0 ? await storage.getMetadata(keyspace, table, sources) : new Map();
  return matches.map((m) => {
    const rec = typeof m.metadata.source_file === 'string' ? records.get(m.metadata.source_file) : undefined;
    const fromSource: Metadata = rec
      ? { raw_value: rec.raw_value, source_type: rec.source_type, processing_details: rec.processing_details }
      : {};
    const metadata: Metadata = { ...fromSource, ...m.metadata };
    if (m.text !== null && metadata.text === undefined) metadata.text = m.text;
    return { ...m, metadata };
  });
}
