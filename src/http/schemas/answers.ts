/**
 * The success answers of every operation. Fastify serialises each answer with its schema
 * (fast-json-stringify), which writes declared members only: a member missing here is missing
 * from the answer, so every schema is complete, and free-form objects (metadata, filters) say
 * `additionalProperties` explicitly. Each top-level answer carries an example for the document.
 */
import type { Readable } from 'node:stream';
import { Type, type Static, type TSchema } from 'typebox';
import { LEXICAL_TOKENIZERS } from '../../storage/api.ts';

/** `T` or null, as one JSON Schema type list (fast-json-stringify serialises it without a runtime union check). */
export const Nullable = <T extends TSchema>(schema: T) => Type.Unsafe<Static<T> | null>({ ...schema, type: [(schema as unknown as { type: string }).type, 'null'] });

const Str = (description?: string) => Type.String(description ? { description } : {});
const Int = (description?: string) => Type.Integer(description ? { description } : {});
const Timestamp = Type.String({ format: 'date-time', description: 'ISO 8601, UTC' });
/**
 * One of these strings, typed as their union. Not Type.Union of literals: fast-json-stringify
 * writes a union by validating the value against each branch with Ajv on every answer, and
 * compiles that validator on the first one (a fresh process's first search took 15-37 ms
 * against 8-10 ms with enums: bench/search-rounds.bench.ts, its first round).
 */
const Enum = <const T extends readonly string[]>(values: T) => Type.Unsafe<T[number]>({ type: 'string', enum: [...values] });
/** The same, typed as any string (where the service's own type is `string`). */
const OneOf = (...values: string[]) => Enum<string[]>(values);
/** Free-form JSON objects: every member is kept. */
const OpenObject = (description: string) => Type.Record(Type.String(), Type.Unknown(), { description });
const Metadata = OpenObject("The vector's metadata (free-form JSON)");
const Vector = Type.Array(Type.Number(), { description: 'float32 values (asked for with include_vector)' });
const Permission = Enum(['All', 'Write', 'Read']);
const Lexical = Type.Object({ tokenizer: Enum(LEXICAL_TOKENIZERS) });

const TableRef = { keyspace: Str(), table: Str() };
const at = { keyspace: 'docs', table: 'vector' };
const KEY = 'doc-1';

const SearchScores = Type.Object(
  {
    semantic: Nullable(Type.Number()),
    lexical: Nullable(Type.Number()),
    rerank: Type.Optional(Type.Number({ description: "The cross-encoder's score (rerank)" })),
  },
  { description: "Each list's own score, null where that list lacked the row (lexical and hybrid modes, mmr, rerank)" },
);

export const SearchAnswer = Type.Object(
  {
    query: Nullable(Type.String()),
    model_name: Str(),
    ...TableRef,
    metric: Str(),
    initial_top_k: Int(),
    final_top_k: Int(),
    include_vector: Type.Boolean(),
    filter: Type.Optional(OpenObject('The filter given')),
    mode: Enum(['semantic', 'lexical', 'hybrid']),
    fusion: Type.Optional(Type.Object({ method: Enum(['rrf', 'relative']), k: Type.Optional(Type.Number()), alpha: Type.Optional(Type.Number()) }, { description: 'The fusion used (hybrid mode)' })),
    matches: Type.Array(
      Type.Object({
        key: Str(),
        score: Type.Number(),
        scores: Type.Optional(SearchScores),
        metadata: OpenObject("The vector's metadata, its source record's fields and `text`"),
        vector: Type.Optional(Vector),
      }),
      { description: 'Best first' },
    ),
    note: Type.Optional(Str('Why the answer is less than was asked for (a reranker that failed: un-reranked order)')),
  },
  {
    examples: [
      {
        query: 'a kitten on the couch',
        model_name: 'all-MiniLM-L6-v2',
        ...at,
        metric: 'cosine',
        initial_top_k: 1000000,
        final_top_k: 1,
        include_vector: false,
        mode: 'semantic',
        matches: [{ key: 'cat', score: 0.61, metadata: { text: 'A cat is lying on a sofa.' } }],
      },
    ],
  },
);

export const WriteAnswer = Type.Object({ ...TableRef, key: Str('The key given, or the one generated') }, { examples: [{ ...at, key: KEY }] });

export const BatchAnswer = Type.Object(
  { ...TableRef, written: Int(), keys: Type.Array(Type.String(), { description: 'In the order of the records' }) },
  { examples: [{ ...at, written: 2, keys: ['doc-1', 'doc-2'] }] },
);

/** When a row or record expires (its TTL); null or absent: never. */
const ExpiresAt = Type.Optional(Nullable(Type.String({ format: 'date-time', description: 'When it expires (ISO 8601, UTC); null: never' })));
const Row = { key: Str(), metadata: Metadata, text: Nullable(Type.String()), vector: Type.Optional(Vector), expires_at: ExpiresAt };

export const VectorAnswer = Type.Object({ ...TableRef, ...Row }, { examples: [{ ...at, key: KEY, metadata: { lang: 'en' }, text: 'Hello', vector: [0.1, 0.2] }] });

export const VectorPage = Type.Object(
  { ...TableRef, vectors: Type.Array(Type.Object(Row)), cursor: Nullable(Type.String({ description: 'Give it back for the next page; null after the last' })) },
  { examples: [{ ...at, vectors: [{ key: KEY, metadata: {}, text: null }], cursor: null }] },
);

export const DeleteAnswer = Type.Object({ ...TableRef, deleted: Int() }, { examples: [{ ...at, deleted: 3 }] });
export const CountAnswer = Type.Object({ ...TableRef, count: Int() }, { examples: [{ ...at, count: 42 }] });

const MetadataRecordFields = { ...TableRef, source_file: Str(), raw_value: Str(), source_type: Str(), processing_details: Str(), expires_at: ExpiresAt };
const metadataExample = { ...at, source_file: 'notes.txt', raw_value: '', source_type: 'txt', processing_details: '' };
export const MetadataRecordAnswer = Type.Object(MetadataRecordFields, { examples: [metadataExample] });
export const MetadataBatchAnswer = Type.Object({ written: Int(), records: Type.Array(Type.Object(MetadataRecordFields)) }, { examples: [{ written: 1, records: [metadataExample] }] });

const TableFields = {
  dimension: Int(),
  metric: Str(),
  model: Nullable(Type.String({ description: 'The embedding model its text rows were embedded with, when known' })),
  lexical: Lexical,
  row_count: Int(),
  created_at: Timestamp,
  default_ttl_seconds: Type.Optional(Nullable(Type.Integer({ description: 'Seconds until rows written without a TTL expire; null: never' }))),
};
const TableView = Type.Object({
  table: Str(),
  ...TableFields,
  indexed_rows: Type.Optional(Int('Rows in the ANN index (embedded storage)')),
  pending_rows: Type.Optional(Int('Rows still waiting for the ANN index (embedded storage)')),
});
const tableExample = { table: 'vector', dimension: 384, metric: 'cosine', model: 'all-MiniLM-L6-v2', lexical: { tokenizer: 'porter' }, row_count: 0, created_at: '2026-01-01T00:00:00.000Z' };
export const TableAnswer = Type.Object({ ...TableRef, ...TableFields }, { examples: [{ keyspace: 'docs', ...tableExample }] });
export const TableUpdateAnswer = Type.Object(
  { ...TableRef, default_ttl_seconds: Nullable(Type.Integer({ description: 'The default TTL now; null: none' })) },
  { examples: [{ ...at, default_ttl_seconds: 86400 }] },
);

const KeyspaceFields = { keyspace: Str(), owner: Nullable(Type.String({ description: 'Owning user id' })), replication: Str(), created_at: Timestamp, tables: Type.Array(TableView) };
const keyspaceExample = { keyspace: 'docs', owner: 'u_1', replication: 'embedded', created_at: '2026-01-01T00:00:00.000Z', tables: [tableExample] };
export const KeyspaceAnswer = Type.Object(KeyspaceFields, { examples: [keyspaceExample] });
export const KeyspaceList = Type.Object({ keyspaces: Type.Array(Type.Object(KeyspaceFields)) }, { examples: [{ keyspaces: [keyspaceExample] }] });

export const GenerateAnswer = Type.Object({ model_name: Str(), dimension: Int(), vector: Type.Array(Type.Number()) }, { examples: [{ model_name: 'all-MiniLM-L6-v2', dimension: 3, vector: [0.1, 0.2, 0.3] }] });

export const EmbeddingsAnswer = Type.Object(
  {
    object: Type.Literal('list'),
    data: Type.Array(
      Type.Object({
        object: Type.Literal('embedding'),
        index: Int(),
        embedding: Type.Union([Type.Array(Type.Number()), Type.String({ description: 'encoding_format base64: little-endian float32 bytes' })]),
      }),
    ),
    model: Str(),
    usage: Type.Object({ prompt_tokens: Int(), total_tokens: Int() }),
  },
  { examples: [{ object: 'list', data: [{ object: 'embedding', index: 0, embedding: [0.1, 0.2] }], model: 'all-MiniLM-L6-v2', usage: { prompt_tokens: 4, total_tokens: 4 } }] },
);

const Connection = Type.Object({ type: Str(), id: Str() });
const UserFields = { account_id: Str(), name: Str(), email: Str(), plan: Str(), connections: Type.Array(Connection), created_at: Timestamp };
const userExample = { account_id: 'u_1', name: 'Ada', email: 'ada@example.com', plan: 'free', connections: [], created_at: '2026-01-01T00:00:00.000Z' };
export const UserAnswer = Type.Object(UserFields, { examples: [userExample] });
export const UserList = Type.Object({ users: Type.Array(Type.Object(UserFields)) }, { examples: [{ users: [userExample] }] });
export const CurrentUser = Type.Object(
  {
    ...UserFields,
    limits: Type.Object({ max_vectors: Int(), max_file_bytes: Int(), requests_per_minute: Int(), max_keyspaces: Int() }, { description: "The plan's limits" }),
    usage: Type.Object({ vectors: Int(), file_bytes: Int() }),
    key: Type.Object({ key_id: Str(), permissions: Permission, resources: Type.Unsafe<readonly string[]>(Type.Array(Type.String())) }, { description: 'What the calling key itself may do' }),
  },
  {
    examples: [
      {
        ...userExample,
        limits: { max_vectors: 100000, max_file_bytes: 1073741824, requests_per_minute: 600, max_keyspaces: 10 },
        usage: { vectors: 12, file_bytes: 0 },
        key: { key_id: 'k_1', permissions: 'All', resources: ['*'] },
      },
    ],
  },
);
export const ConnectionAnswer = Type.Object({ type: Str(), id: Str(), status: Type.Literal('connected') }, { examples: [{ type: 'github', id: 'ada', status: 'connected' }] });

const KeyFields = {
  key_id: Str(),
  name: Str(),
  user_id: Str(),
  permissions: Permission,
  resources: Type.Array(Type.String(), { description: 'Keyspace names, or *' }),
  created_at: Timestamp,
  revoked_at: Nullable(Type.String({ format: 'date-time' })),
};
const keyExample = { key_id: 'k_1', name: 'ci', user_id: 'u_1', permissions: 'Read', resources: ['docs'], created_at: '2026-01-01T00:00:00.000Z', revoked_at: null };
export const KeyAnswer = Type.Object(KeyFields, { examples: [keyExample] });
export const KeyList = Type.Object({ keys: Type.Array(Type.Object(KeyFields)) }, { examples: [{ keys: [keyExample] }] });
export const NewKey = Type.Object(
  { key: Str('The secret: answered this once, stored only as a hash'), ...KeyFields, rotated_from: Type.Optional(Str('The key this one replaces (rotate)')) },
  { examples: [{ key: 'vss_…', ...keyExample }] },
);

export const WebhookAnswer = Type.Object(
  { received: Type.Literal(true), event_id: Str(), type: Str(), status: Enum(['applied', 'duplicate', 'ignored']), reason: Type.Optional(Str()) },
  { examples: [{ received: true, event_id: 'evt_1', type: 'checkout.session.completed', status: 'applied' }] },
);

const FileFields = { ...TableRef, name: Str(), type: Str('Detected type: pdf, docx, html, json, csv, md, txt'), size: Int(), chunks: Int(), sha256: Str(), created_at: Timestamp };
const fileExample = { ...at, name: 'notes.txt', type: 'txt', size: 1200, chunks: 3, sha256: 'ab12…', created_at: '2026-01-01T00:00:00.000Z' };
export const UploadAnswer = Type.Object(
  {
    files: Type.Array(Type.String(), { description: 'Every file the caller can reach, in the order of GET /v1/files/' }),
    file: Type.Object({
      ...FileFields,
      method: Str(),
      model: Str(),
      chunk_size: Int(),
      chunk_overlap: Int(),
      replaced: Type.Boolean(),
      pages: Type.Optional(Int()),
      total_pages: Type.Optional(Int()),
      truncated: Type.Optional(Type.Boolean()),
    }),
  },
  { examples: [{ files: ['notes.txt'], file: { ...fileExample, method: 'text', model: 'all-MiniLM-L6-v2', chunk_size: 1000, chunk_overlap: 100, replaced: false } }] },
);
export const FileList = Type.Object({ files: Type.Array(Type.String()), details: Type.Array(Type.Object(FileFields)) }, { examples: [{ files: ['notes.txt'], details: [fileExample] }] });
export const FileDeleted = Type.Object({ deleted: Type.Boolean({ const: true }), ...TableRef, name: Str(), chunks: Int() }, { examples: [{ deleted: true, ...at, name: 'notes.txt', chunks: 3 }] });

const SourceScores = Type.Object({ semantic: Nullable(Type.Number()), lexical: Nullable(Type.Number()) });
export const QueryAnswer = Type.Object(
  {
    query: Str(),
    selectedContainerId: Str('The keyspace searched'),
    model_name: Str(),
    final_top_k: Int(),
    matches: Type.Array(Type.Object({ ...TableRef, key: Str(), score: Type.Number(), scores: SourceScores, metadata: Metadata })),
    skipped_tables: Type.Array(Type.Object({ table: Str(), dimension: Int(), reason: Str() }), { description: "Tables whose dimension is not the model's" }),
  },
  { examples: [{ query: 'cats', selectedContainerId: 'docs', model_name: 'all-MiniLM-L6-v2', final_top_k: 5, matches: [], skipped_tables: [] }] },
);

export const ChatAnswer = Type.Object(
  {
    query: Str(),
    mode: Enum(['command', 'extractive', 'llm']),
    response: Str(),
    sources: Type.Array(Type.Object({ ...TableRef, key: Str(), score: Type.Number(), source_file: Nullable(Type.String()) })),
    note: Type.Optional(Str('Why the answer is not what was configured (the chat endpoint failed)')),
    data: Type.Optional(OpenObject('Commands: the structured form of `response`')),
  },
  { examples: [{ query: '/help', mode: 'command', response: 'Commands: …', sources: [] }] },
);
/** The streamed form of a chat answer (stream: true or accept: text/event-stream). */
export const ChatEvents = Type.Unsafe<Readable>(Type.String({ description: 'Server-sent events: `delta` events ({"text"}) whose texts concatenate to the response, then `done` with the whole answer' }));
/** A downloaded file's bytes, sent as they are (no serialisation). */
export const FileBytes = Type.Unsafe<Buffer>(Type.String({ format: 'binary' }));
/** Bytes sent as a stream (a snapshot archive). */
export const StreamedBytes = Type.Unsafe<Readable>(Type.String({ format: 'binary' }));

export const ContainerList = Type.Array(
  Type.Object({ container_id: Str(), container_name: Str(), container_status: Str(), image: Str(), status_text: Str() }),
  { examples: [[{ container_id: 'abc123', container_name: 'vss', container_status: 'running', image: 'vss:latest', status_text: 'Up 3 minutes' }]] },
);

export const RootAnswer = Type.Object({ name: Str(), version: Str(), openapi: Str(), docs: Str() }, { examples: [{ name: 'vss', version: '0.1.0', openapi: '/v1/openapi.json', docs: '/v1/docs' }] });
export const HealthAnswer = Type.Object(
  { status: OneOf('ok', 'unavailable'), checks: Type.Object({ storage: OneOf('ok', 'unavailable'), model: OneOf('ok', 'loading') }) },
  { examples: [{ status: 'ok', checks: { storage: 'ok', model: 'ok' } }] },
);
export const SystemInfo = Type.Object(
  {
    platform: Str(),
    platform_release: Str(),
    platform_version: Str(),
    architecture: Str(),
    hostname: Str(),
    ip_address: Str(),
    processor: Str(),
    python_version: Str('The runtime: "node <version>"'),
    machine: Str(),
    pid: Int(),
    cores: Int(),
  },
  { examples: [{ platform: 'Linux', platform_release: '6.8.0', platform_version: '#1 SMP', architecture: 'x64', hostname: 'vss-1', ip_address: '10.0.0.2', processor: 'AMD EPYC', python_version: 'node 20.20.2', machine: 'x86_64', pid: 1, cores: 2 }] },
);
export const Environment = Type.Object(
  {
    version: Str(),
    storage: Str(),
    default_model: Str(),
    default_keyspace: Str(),
    default_table: Str(),
    models: Type.Array(Type.String()),
    limits: Type.Object({
      body_bytes: Int(),
      upload_bytes: Int(),
      uploads_per_user: Int(),
      batch_items: Int(),
      max_dimension: Int(),
      max_final_top_k: Int(),
      query_bytes: Int(),
      key_bytes: Int(),
    }),
    chat_configured: Type.Boolean(),
    stripe_configured: Type.Boolean(),
  },
  {
    examples: [
      {
        version: '0.1.0',
        storage: 'embedded',
        default_model: 'all-MiniLM-L6-v2',
        default_keyspace: 'default_keyspace',
        default_table: 'vector',
        models: ['all-MiniLM-L6-v2'],
        limits: { body_bytes: 33554432, upload_bytes: 67108864, uploads_per_user: 2, batch_items: 1000, max_dimension: 4096, max_final_top_k: 1000, query_bytes: 8192, key_bytes: 512 },
        chat_configured: false,
        stripe_configured: false,
      },
    ],
  },
);

const SnapshotFields = {
  name: Str('The archive name, for download and delete'),
  size: Int('Bytes'),
  created_at: Timestamp,
  rows: Int('Rows in every table at that moment'),
  tables: Type.Array(Type.Object({ keyspace: Str(), table: Str(), rows: Int() })),
  format_version: Int(),
};
const snapshotExample = { name: 'snapshot-20260101T000000Z-a1b2c3.vss', size: 1048576, created_at: '2026-01-01T00:00:00.000Z', rows: 42, tables: [{ keyspace: 'docs', table: 'vector', rows: 42 }], format_version: 1 };
export const SnapshotAnswer = Type.Object(SnapshotFields, { examples: [snapshotExample] });
export const SnapshotList = Type.Object(
  {
    snapshots: Type.Array(Type.Object(SnapshotFields)),
    in_progress: Nullable(Type.Object({ name: Str(), started_at: Timestamp, progress: Type.Number({ description: '0 to 1' }) }, { description: 'The snapshot being taken' })),
  },
  { examples: [{ snapshots: [snapshotExample], in_progress: null }] },
);
export const SnapshotDeleted = Type.Object({ name: Str(), deleted: Type.Boolean({ const: true }) }, { examples: [{ name: snapshotExample.name, deleted: true }] });
export const ExportLines = Type.Unsafe<Readable>(Type.String({ description: 'The export format (docs/API.md): one JSON object a line, a header first and an `end` line last' }));
export const ImportAnswer = Type.Object(
  { keyspace: Str(), imported: Type.Object({ tables: Int(), rows: Int(), metadata: Int(), files: Int() }, { description: 'Items written by this request' }) },
  { examples: [{ keyspace: 'docs', imported: { tables: 1, rows: 500, metadata: 0, files: 0 } }] },
);
