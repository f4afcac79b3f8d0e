import { randomBytes } from 'node:crypto';
import { invalidFields, ServiceError, type CodedFieldError } from '../errors.ts';
import type { KeyspaceInfo, LexicalSettings, LexicalTokenizer, TableStats } from '../storage/api.ts';
import { coversResource, type Caller } from './caller.ts';
import type { Deps } from './deps.ts';
import { checkKeyspaceQuota, checkTableQuota } from './quota.ts';
import { requireKeyspaceExists } from './tables.ts';
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
 * `create` with no name and `autoprovision` both make a uniquely named keyspace with a
 * default-model `vector` table. A name taken by anyone is 409; the key must cover the name (a
 * key limited to named keyspaces cannot make an unnamed one it would never reach).
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
  let ks: KeyspaceInfo;
  try {
    // A name already there fails below as it should, whatever the count.
    if ((await deps.storage.getKeyspace(name)) === null) await checkKeyspaceQuota(deps, caller.userId);
    ks = await deps.storage.createKeyspace({ name, owner: caller.userId });
  } catch (e) {
    // The keyspace and its table are two storage calls: a create that failed between them left
    // the caller's keyspace without a table, and creating it again completes it.
    const existing = e instanceof ServiceError && e.code === 'already_exists' ? await deps.storage.getKeyspace(name) : null;
    if (existing === null || existing.owner !== caller.userId || (await deps.storage.listTables(name)).length > 0) throw e;
    ks = existing;
  }
  await deps.storage.createTable(
    { keyspace: name, name: deps.config.defaultTable, dimension: deps.models.dimension(deps.config.defaultModel), metric: 'cosine', model: deps.config.defaultModel },
    { ifNotExists: true },
  );
  return view(deps, ks);
}

export const autoprovision = (deps: Deps, caller: Caller): Promise<KeyspaceView> => createKeyspace(deps, caller, {});

/** The caller's keyspaces (every keyspace for an `All` key), limited to the key's resources. */
export async function listKeyspaces(deps: Deps, caller: Caller): Promise<{ keyspaces: KeyspaceView[] }> {
  const all = caller.permissions === 'All' ? await deps.storage.listKeyspaces() : await deps.storage.listKeyspaces(caller.userId);
  const visible = all.filter((k) => caller.resources.includes('*') || caller.resources.includes(k.name));
  return { keyspaces: await Promise.all(visible.map((k) => view(deps, k))) };
}

export async function createTable(deps: Deps, input: { keyspace: string; table: string; dimension?: number; metric?: string; model_name?: string; lexical?: { tokenizer?: string } }) {
  const errors: CodedFieldError[] = [];
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
  return { keyspace: t.keyspace, table: t.name, dimension: t.dimension, metric: t.metric, model: t.model, lexical: t.lexical, row_count: 0, created_at: t.createdAt };
}
