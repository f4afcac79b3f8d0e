import { invalid, type FieldError } from '../errors.ts';
import type { MetadataRecord } from '../storage/api.ts';
import type { Deps } from './deps.ts';
import { requireKeyspaceExists } from './tables.ts';
import { checkTtl, clockOf, expiresAtIso, expiryAt } from './ttl.ts';
import { checkWellFormed, utf8Bytes } from './validate.ts';

export type MetadataInput = Partial<Omit<MetadataRecord, 'expires_at'>> &
  Pick<MetadataRecord, 'keyspace' | 'table' | 'source_file'> & {
    /** Seconds until the record expires; absent or null: never. */
    ttl_seconds?: number | null;
  };

/** A record as answered: its expiry, if any, as ISO 8601. */
export type MetadataView = Omit<MetadataRecord, 'expires_at'> & { expires_at?: string };

const normalise = (r: MetadataInput, now: number): MetadataRecord => {
  const expiresAt = expiryAt(now, r.ttl_seconds ?? null);
  return {
    keyspace: r.keyspace,
    table: r.table,
    source_file: r.source_file,
    raw_value: r.raw_value ?? '',
    source_type: r.source_type ?? '',
    processing_details: r.processing_details ?? '',
    ...(expiresAt !== null ? { expires_at: expiresAt } : {}),
  };
};

const view = ({ expires_at, ...rest }: MetadataRecord): MetadataView => (expires_at == null ? rest : { ...rest, expires_at: expiresAtIso(expires_at)! });

/** Records are keyed by (keyspace, table, source_file); writing one again replaces it. All or nothing. */
async function writeRecords(deps: Deps, inputs: MetadataInput[], basePath: string, single: boolean): Promise<MetadataView[]> {
  const { limits } = deps.config;
  const errors: FieldError[] = [];
  if (inputs.length === 0) errors.push({ path: basePath, message: 'must hold at least one record' });
  if (inputs.length > limits.batchItems) errors.push({ path: basePath, message: `must hold at most ${limits.batchItems} records` });
  const now = clockOf(deps)();
  inputs.forEach((r, i) => checkTtl(r.ttl_seconds, `${single ? basePath : `${basePath}/${i}`}/ttl_seconds`, errors));
  const records = inputs.map((r) => normalise(r, now));
  records.forEach((r, i) => {
    const path = single ? basePath : `${basePath}/${i}`;
    for (const field of ['source_file', 'raw_value', 'source_type', 'processing_details'] as const) checkWellFormed(r[field], `${path}/${field}`, errors);
    if (utf8Bytes(r.raw_value) > limits.textBytes * 16) errors.push({ path: `${path}/raw_value`, message: `must be at most ${limits.textBytes * 16} bytes` });
  });
  if (errors.length) throw invalid(errors);
  for (const ks of new Set(records.map((r) => r.keyspace))) await requireKeyspaceExists(deps.storage, ks);
  await deps.storage.upsertMetadata(records);
  return records.map(view);
}

export async function writeMetadata(deps: Deps, input: MetadataInput): Promise<MetadataView> {
  const [record] = await writeRecords(deps, [input], '/body', true);
  return record;
}

export async function writeMetadataBatch(deps: Deps, inputs: MetadataInput[], basePath: string) {
  const records = await writeRecords(deps, inputs, basePath, false);
  return { written: records.length, records };
}
