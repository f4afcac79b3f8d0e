/**
 * Keyspaces and tables. Table rows are mirrored in memory as TableState (matrix + ANN index),
 * which is the one place the vector code looks tables up: this process is the only writer.
 */
import { invalid, ServiceError } from '../../errors.ts';
import { METRICS, type Metric } from '../../index/metric.ts';
import { DEFAULT_LEXICAL, LEXICAL_TOKENIZERS, MAX_TTL_SECONDS, type KeyspaceInfo, type LexicalSettings, type LexicalTokenizer, type TableInfo, type TableStats } from '../api.ts';
import type { VectorMatrix } from '../../index/matrix.ts';
import { TableState, type IndexKeeper, type TableMeta } from './index-upkeep.ts';
import { createLexicalIndex } from './lexical.ts';
import { isUniqueViolation, nowIso, type Db } from './sql.ts';

interface KeyspaceRow {
  name: string;
  owner: string | null;
  replication: string;
  created_at: string;
}

interface TableRow {
  id: number;
  keyspace: string;
  name: string;
  dimension: number;
  metric: Metric;
  model: string | null;
  lexical_tokenizer: LexicalTokenizer;
  created_at: string;
}

const toKeyspace = (r: KeyspaceRow): KeyspaceInfo => ({ name: r.name, owner: r.owner, replication: r.replication, createdAt: r.created_at });
const toMeta = (r: TableRow): TableMeta => ({
  id: r.id,
  keyspace: r.keyspace,
  name: r.name,
  dimension: r.dimension,
  metric: r.metric,
  model: r.model,
  lexical: { tokenizer: r.lexical_tokenizer },
  createdAt: r.created_at,
});
export const tableInfo = (m: TableMeta): TableInfo => ({
  keyspace: m.keyspace,
  name: m.name,
  dimension: m.dimension,
  metric: m.metric,
  model: m.model,
  lexical: { ...m.lexical },
  createdAt: m.createdAt,
});

const tkey = (keyspace: string, name: string): string => `${keyspace}\u0000${name}`;

export class Catalog {
  readonly #db: Db;
  readonly #keeper: IndexKeeper;
  readonly #replication: string;
  readonly #tables = new Map<string, TableState>();
  readonly #matrixFor: (meta: TableMeta, fresh: boolean) => VectorMatrix;

  /** `matrixFor` gives a table its vector matrix: a new empty one, or (fresh false) the saved one if any. */
  constructor(db: Db, keeper: IndexKeeper, defaultReplication: string, matrixFor: (meta: TableMeta, fresh: boolean) => VectorMatrix) {
    this.#db = db;
    this.#keeper = keeper;
    this.#replication = defaultReplication;
    this.#matrixFor = matrixFor;
  }

  /** Reads every table into memory at start-up, each with its saved matrix or an empty one. */
  loadTables(): TableState[] {
    const rows = this.#db.stmt('SELECT * FROM tables ORDER BY id').all() as TableRow[];
    for (const r of rows) {
      const meta = toMeta(r);
      this.#tables.set(tkey(r.keyspace, r.name), new TableState(meta, this.#matrixFor(meta, false)));
    }
    return [...this.#tables.values()];
  }

  /** Every table's state. */
  all(): TableState[] {
    return [...this.#tables.values()];
  }

  createKeyspace(ks: { name: string; owner: string | null; replication?: string }): KeyspaceInfo {
    if (typeof ks.name !== 'string' || ks.name === '') throw invalid([{ path: '/keyspace', message: 'must be a non-empty string' }]);
    const row: KeyspaceRow = { name: ks.name, owner: ks.owner ?? null, replication: ks.replication ?? this.#replication, created_at: nowIso() };
    try {
      this.#db.stmt('INSERT INTO keyspaces (name, owner, replication, created_at) VALUES (@name, @owner, @replication, @created_at)').run(row);
    } catch (e) {
      if (isUniqueViolation(e)) throw new ServiceError('already_exists', `keyspace ${ks.name} already exists`);
      throw e;
    }
    return toKeyspace(row);
  }

  getKeyspace(name: string): KeyspaceInfo | null {
    const r = this.#db.stmt('SELECT * FROM keyspaces WHERE name = ?').get(name) as KeyspaceRow | undefined;
    return r ? toKeyspace(r) : null;
  }

  listKeyspaces(owner?: string): KeyspaceInfo[] {
    const rows =
      owner === undefined
        ? (this.#db.stmt('SELECT * FROM keyspaces ORDER BY name').all() as KeyspaceRow[])
        : (this.#db.stmt('SELECT * FROM keyspaces WHERE owner = ? ORDER BY name').all(owner) as KeyspaceRow[]);
    return rows.map(toKeyspace);
  }

  createTable(t: { keyspace: string; name: string; dimension: number; metric: Metric; model: string | null; lexical?: LexicalSettings }, opts: { ifNotExists?: boolean } = {}): TableInfo {
    const errors = [];
    if (typeof t.name !== 'string' || t.name === '') errors.push({ path: '/table', message: 'must be a non-empty string' });
    if (!Number.isInteger(t.dimension) || t.dimension < 1) errors.push({ path: '/dimension', message: 'must be a positive integer' });
    if (!METRICS.includes(t.metric)) errors.push({ path: '/metric', message: `must be one of ${METRICS.join(', ')}` });
    const tokenizer = t.lexical?.tokenizer ?? DEFAULT_LEXICAL.tokenizer;
    if (!LEXICAL_TOKENIZERS.includes(tokenizer)) errors.push({ path: '/lexical/tokenizer', message: `must be one of ${LEXICAL_TOKENIZERS.join(', ')}` });
    if (errors.length > 0) throw invalid(errors);

    const existing = this.#tables.get(tkey(t.keyspace, t.name));
    if (existing) {
      if (opts.ifNotExists) return tableInfo(existing.meta);
      throw new ServiceError('already_exists', `table ${t.keyspace}.${t.name} already exists`);
    }
    if (!this.getKeyspace(t.keyspace)) throw new ServiceError('keyspace_not_found', `keyspace ${t.keyspace} does not exist`);
    const createdAt = nowIso();
    // The table's vector file is made inside the transaction: a directory that cannot take it
    // (full, read-only) leaves no table behind in the catalog.
    const state = this.#db.tx(() => {
      const info = this.#db
        .stmt('INSERT INTO tables (keyspace, name, dimension, metric, model, lexical_tokenizer, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)')
        .run(t.keyspace, t.name, t.dimension, t.metric, t.model ?? null, tokenizer, createdAt);
      const id = Number(info.lastInsertRowid);
      createLexicalIndex(this.#db.raw, id, tokenizer);
      const meta: TableMeta = { id, keyspace: t.keyspace, name: t.name, dimension: t.dimension, metric: t.metric, model: t.model ?? null, lexical: { tokenizer }, createdAt };
      return new TableState(meta, this.#matrixFor(meta, true));
    });
    this.#tables.set(tkey(t.keyspace, t.name), state);
    this.#keeper.add(state);
    return tableInfo(state.meta);
  }

  getTable(keyspace: string, name: string): TableInfo | null {
    const t = this.#tables.get(tkey(keyspace, name));
    return t ? tableInfo(t.meta) : null;
  }

  listTables(keyspace: string): TableStats[] {
    if (!this.getKeyspace(keyspace)) throw new ServiceError('keyspace_not_found', `keyspace ${keyspace} does not exist`);
    return [...this.#tables.values()]
      .filter((t) => t.meta.keyspace === keyspace)
      .sort((a, b) => (a.meta.name < b.meta.name ? -1 : a.meta.name > b.meta.name ? 1 : 0))
      .map((t) => ({ ...tableInfo(t.meta), rowCount: t.matrix.size }));
  }

  /** The table's default TTL in seconds (null: none); throws keyspace_not_found or table_not_found. */
  getDefaultTtl(keyspace: string, name: string): number | null {
    const t = this.require(keyspace, name);
    return (this.#db.stmt('SELECT default_ttl_seconds FROM tables WHERE id = ?').pluck().get(t.meta.id) as number | null) ?? null;
  }

  setDefaultTtl(keyspace: string, name: string, seconds: number | null): void {
    const t = this.require(keyspace, name);
    if (seconds !== null && !(Number.isInteger(seconds) && seconds >= 1 && seconds <= MAX_TTL_SECONDS)) {
      throw invalid([{ path: '/default_ttl_seconds', message: `must be an integer from 1 to ${MAX_TTL_SECONDS}, or null` }]);
    }
    this.#db.stmt('UPDATE tables SET default_ttl_seconds = ? WHERE id = ?').run(seconds, t.meta.id);
  }

  /** The table's state; throws keyspace_not_found or table_not_found. */
  require(keyspace: string, name: string): TableState {
    const t = this.#tables.get(tkey(keyspace, name));
    if (t) return t;
    if (!this.getKeyspace(keyspace)) throw new ServiceError('keyspace_not_found', `keyspace ${keyspace} does not exist`);
    throw new ServiceError('table_not_found', `table ${keyspace}.${name} does not exist`);
  }
}
