import { randomBytes } from 'node:crypto';
import { invalid, invalidFields, ServiceError, type CodedFieldError } from '../errors.ts';
import type { KeyspaceInfo, LexicalSettings, LexicalTokenizer, TableStats } from '../storage/api.ts';
import { coversResource, isAdministrator, type Caller } from './caller.ts';
import type { Deps } from './deps.ts';
import { checkKeyspaceQuota, checkTableQuota } from './quota.ts';
import { requireKeyspaceExists, requireTable } from './tables.ts';
import { checkTtl } from './ttl.ts';
import { checkMetricName, checkModelName, validNames } from './validate.ts';

export interface KeyspaceView {
  keyspace: string;
  owner: string | null;
  replication: string;
  created_at: string;
  tables: TableView[];
}

interface TableView {
  table: string;
  dimension: number;
  metric: string;
  model: string | null;
  lexical: LexicalSettings;
  row_count: number;
  created_at: string;
  /** Where the backend keeps its own ANN index (embedded): rows in it, and rows still waiting (progress of long ingests). */
  indexed_rows?: number;
  pending_rows?: number;
}

/** A keyspace's tables as the API shows them, with index progress where the backend has it. */
export async function tableViews(deps: Deps, keyspace: string): Promise<TableView[]> {
  const tables = await deps.storage.listTables(keyspace);
  const index = deps.storage.indexStatus?.().filter((s) => s.keyspace === keyspace) ?? [];
  return tables.map((t: TableStats): TableView => {
    const progress = index.find((s) => s.table === t.name);
    return {
      table: t.name,
      dimension: t.dimension,
      metric: t.metric,
      model: t.model,
      lexical: t.lexical,
      row_count: t.rowCount,
      created_at: t.createdAt,
      ...(progress ? { indexed_rows: progress.indexed, pending_rows: progress.pending } : {}),
    };
  });
}

async function view(deps: Deps, ks: KeyspaceInfo): Promise<KeyspaceView> {
  return { keyspace: ks.name, owner: ks.owner, replication: ks.replication, created_at: ks.createdAt, tables: await tableViews(deps, ks.name) };
}

const uniqueName = (): string => `ks_${randomBytes(6).toString('hex')}`;

/**
 * Keyspace names are one namespace for all tenants, so a create of a taken name must fail; it
 * fails alike whoever holds the name (the caller included), saying only that it is taken.
 */
const nameTaken = (name: string): ServiceError =>
  new ServiceError('already_exists', `The keyspace name "${name}" is taken; choose another.`);

/**
 * `create` with no name and `autoprovision` both make a uniquely named keyspace with a
 * default-model `vector` table. A taken name is 409 (see nameTaken); the key must cover the name
 * (a key limited to named keyspaces cannot make an unnamed one it would never reach). The plan's
 * keyspace limit is checked before whether another tenant holds the name, so that a caller at
 * its limit learns nothing about names it does not hold.
 */
export async function createKeyspace(deps: Deps, caller: Caller, input: { keyspace?: string }): Promise<KeyspaceView> {
  if (input.keyspace === undefined ? !caller.resources.includes('*') : !coversResource(caller.resources, input.keyspace)) {
    throw new ServiceError(
      'forbidden',
      input.keyspace === undefined
        ? 'This key reaches named keyspaces only, so it cannot make one with a new name; name one it covers.'
        : `This key does not cover keyspace "${input.keyspace}".`,
    );
  }
  const name = input.keyspace ?? uniqueName();
  // The keyspace and its table are two storage calls: a create that failed between them left
  // the caller's keyspace without a table, and creating it again completes it.
  const ownHalfMade = async (existing: KeyspaceInfo | null): Promise<KeyspaceInfo> => {
    if (existing?.owner === caller.userId && (await deps.storage.listTables(name)).length === 0) return existing;
    throw nameTaken(name);
  };
  let ks = await deps.storage.getKeyspace(name);
  if (ks?.owner === caller.userId) ks = await ownHalfMade(ks);
  else {
    await checkKeyspaceQuota(deps, caller.userId);
    if (ks !== null) throw nameTaken(name);
    try {
      ks = await deps.storage.createKeyspace({ name, owner: caller.userId });
    } catch (e) {
      if (!(e instanceof ServiceError && e.code === 'already_exists')) throw e;
      // Taken meanwhile, by anyone (a create of the caller's that stopped half-way included).
      ks = await ownHalfMade(await deps.storage.getKeyspace(name));
    }
  }
  await deps.storage.createTable(
    { keyspace: name, name: deps.config.defaultTable, dimension: deps.models.dimension(deps.config.defaultModel), metric: 'cosine', model: deps.config.defaultModel },
    { ifNotExists: true },
  );
  return view(deps, ks);
}

export const autoprovision = (deps: Deps, caller: Caller): Promise<KeyspaceView> => createKeyspace(deps, caller, {});

/** The caller's keyspaces (every keyspace for an administrator), limited to the key's resources. */
export async function listKeyspaces(deps: Deps, caller: Caller): Promise<{ keyspaces: KeyspaceView[] }> {
  const all = isAdministrator(caller) ? await deps.storage.listKeyspaces() : await deps.storage.listKeyspaces(caller.userId);
  const visible = all.filter((k) => caller.resources.includes('*') || caller.resources.includes(k.name));
  return { keyspaces: await Promise.all(visible.map((k) => view(deps, k))) };
}

export async function createTable(
  deps: Deps,
  input: { keyspace: string; table: string; dimension?: number; metric?: string; model_name?: string; lexical?: { tokenizer?: string }; default_ttl_seconds?: number | null },
) {
  const errors: CodedFieldError[] = [];
  checkTtl(input.default_ttl_seconds, '/body/default_ttl_seconds', errors);
  const metric = checkMetricName(input.metric ?? 'cosine', '/body/metric', errors);
  let model: string | null = input.model_name ?? null;
  const modelKnown = checkModelName(deps.models, input.model_name, '/body/model_name', errors);
  let dimension = input.dimension;
  if (dimension === undefined && modelKnown) {
    model ??= deps.config.defaultModel;
    dimension = deps.models.dimension(model);
  } else if (dimension !== undefined && model !== null && modelKnown && deps.models.dimension(model) !== dimension) {
    errors.push({ path: '/body/dimension', message: `model "${model}" gives ${deps.models.dimension(model)} dimensions, not ${dimension}` });
  }
  if (dimension !== undefined && dimension > deps.config.limits.maxDimension) {
    errors.push({ path: '/body/dimension', message: `must be at most ${deps.config.limits.maxDimension}` });
  }
  if (errors.length > 0 || metric === null || dimension === undefined) {
    throw invalidFields(errors, validNames(deps.models));
  }
  await requireKeyspaceExists(deps.storage, input.keyspace);
  if ((await deps.storage.getTable(input.keyspace, input.table)) === null) await checkTableQuota(deps, input.keyspace);
  const lexical = input.lexical?.tokenizer === undefined ? undefined : { tokenizer: input.lexical.tokenizer as LexicalTokenizer };
  const t = await deps.storage.createTable({ keyspace: input.keyspace, name: input.table, dimension, metric, model, lexical });
  const ttl = input.default_ttl_seconds ?? null;
  if (ttl !== null) await deps.storage.setDefaultTtl(t.keyspace, t.name, ttl);
  return { keyspace: t.keyspace, table: t.name, dimension: t.dimension, metric: t.metric, model: t.model, lexical: t.lexical, default_ttl_seconds: ttl, row_count: 0, created_at: t.createdAt };
}

/** Changes a table's settings: its default TTL (rows already written keep their expiry). */
export async function updateTable(deps: Deps, input: { keyspace: string; table: string; default_ttl_seconds: number | null }) {
  const errors: CodedFieldError[] = [];
  checkTtl(input.default_ttl_seconds, '/body/default_ttl_seconds', errors);
  if (errors.length > 0) throw invalid(errors);
  await requireTable(deps.storage, input.keyspace, input.table);
  await deps.storage.setDefaultTtl(input.keyspace, input.table, input.default_ttl_seconds);
  return { keyspace: input.keyspace, table: input.table, default_ttl_seconds: await deps.storage.getDefaultTtl(input.keyspace, input.table) };
}
