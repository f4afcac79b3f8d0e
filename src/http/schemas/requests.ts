/**
 * TypeBox schemas: the one source of request validation, handler types and the OpenAPI document.
 * Limits that JSON Schema can express live here; byte lengths and float32 range are checked in
 * service/validate.ts.
 */
import { Type, type Static, type TSchema } from 'typebox';
import { BATCH_LIMIT } from '../schema-limits.ts';
import { DEFAULT_LIMITS } from '../../config/config.ts';
import { MAX_CONDITIONS } from '../../index/filter.ts';
import { MAX_SEARCH_EFFORT } from '../../index/ann-segments.ts';
import { LEXICAL_TOKENIZERS, MAX_TTL_SECONDS, type Filter, type Metadata } from '../../storage/api.ts';
import { MAX_LIST_ROWS } from '../../service/retrieve.ts';
import { SERVICE_CHECKED } from '../openapi-service-checked.ts';
import { FILTER_REF } from './filter.ts';

/**
 * Rules the service checks (with answers naming every bad field beside its other checks), in
 * JSON Schema for the document only: see openapi-service-checked.ts.
 */
const serviceChecked = (rules: Record<string, unknown>) => ({ [SERVICE_CHECKED]: rules });
/** One form of an object: members it requires and members it narrows or forbids (false). */
const form = (description: string, required: string[], properties: Record<string, unknown>) => ({ description, required, properties });
const absent = (...names: string[]) => Object.fromEntries(names.map((n) => [n, false]));
/** A record's vector: `vector`, or `vector_base64`, or a `text` to embed (with a vector, the text is stored as given). */
const VECTOR_FORMS = {
  oneOf: [
    form('By its float32 values', ['vector'], absent('vector_base64')),
    form('By its float32 values in base64', ['vector_base64'], absent('vector')),
    form('By a text the service embeds', ['text'], absent('vector', 'vector_base64')),
  ],
};

export const NAME_PATTERN = '^[a-z][a-z0-9_]{0,47}$';

export const Name = (description: string) => Type.String({ pattern: NAME_PATTERN, description });
export const Keyspace = Name('Keyspace name: lower-case letter, then up to 47 lower-case letters, digits or underscores.');
export const TableName = Name('Table name (same rule as keyspace names).');
const Key = Type.String({ minLength: 1, maxLength: DEFAULT_LIMITS.keyBytes, description: 'Vector key: 1 to 512 bytes of UTF-8.' });
const VectorValues = Type.Array(Type.Number(), { minItems: 1, maxItems: DEFAULT_LIMITS.maxDimension, description: 'float32 values' });
/**
 * The schema format of base64 fields: OpenAPI's `byte`. http/app.ts gives AJV its validator
 * (isStandardBase64: strict, and faster than a regular expression over ~2 KB per vector).
 */
export const BASE64_FORMAT = 'byte';
/** Base64 length of n bytes (padded). */
export const base64Length = (bytes: number): number => 4 * Math.ceil(bytes / 3);
const VectorBase64 = Type.String({
  format: BASE64_FORMAT,
  // 1 to maxDimension float32 values of 4 bytes each.
  minLength: base64Length(4),
  maxLength: base64Length(DEFAULT_LIMITS.maxDimension * 4),
  contentEncoding: 'base64',
  contentMediaType: 'application/octet-stream',
  description:
    'The vector as its float32 values in little-endian IEEE-754 byte order, standard base64 with padding ' +
    '(numpy: base64.b64encode(v.astype("<f4").tobytes()); Node: Buffer.from(f32.buffer).toString("base64")). ' +
    'Give this or `vector`, not both; it skips parsing one JSON number per value.',
});
// JSON Schema says "any object"; the static type says JSON (bodies come from JSON.parse).
// Its bound is the 64 KiB of JSON the service checks: every member takes at least 5 bytes (`"":0,`).
const MetadataObject = Type.Unsafe<Metadata>(
  Type.Record(Type.String(), Type.Unknown(), { maxProperties: Math.floor(DEFAULT_LIMITS.metadataBytes / 5), description: 'Free-form JSON object, at most 64 KiB as JSON and 64 levels deep' }),
);
const FilterObject = Type.Unsafe<Filter>(
  Type.Record(Type.String(), Type.Unknown(), {
    // Every field name is at least one condition; $and and $or are the two members that are not.
    maxProperties: MAX_CONDITIONS + 2,
    ...serviceChecked({ $ref: FILTER_REF }),
    description: `Metadata filter: {field: value} or operators $eq $ne $in $nin $gt $gte $lt $lte $exists $and $or; at most ${MAX_CONDITIONS} conditions`,
  }),
);
/** Vector rows and metadata records in one batch (VSS_MAX_BATCH_ITEMS; schema-limits.ts sets the configured value). */
const batchOf = <T extends TSchema>(items: T, description: string) => Type.Array(items, { minItems: 1, maxItems: DEFAULT_LIMITS.batchItems, [BATCH_LIMIT]: true, description });
/** Names and ids shown back (users, connections): not blank, no control characters. */
const Label = (maxLength: number) => Type.String({ minLength: 1, maxLength, pattern: '^[^\\u0000-\\u001f\\u007f]*[^\\s\\u0000-\\u001f\\u007f][^\\u0000-\\u001f\\u007f]*$' });
const ModelName = Type.String({ minLength: 1, maxLength: 128, description: 'Embedding model (default all-MiniLM-L6-v2)' });

export const SearchBody = Type.Object(
  {
    query: Type.Optional(Type.String({ maxLength: DEFAULT_LIMITS.queryBytes, description: 'Query text (or give `vector` or `vector_base64`)' })),
    vector: Type.Optional(VectorValues),
    vector_base64: Type.Optional(VectorBase64),
    model_name: Type.Optional(ModelName),
    keyspace: Keyspace,
    table: TableName,
    metric: Type.Optional(Type.String({ description: 'cosine (alias "cosine similarity"), dot_product (dot), euclidean (l2)' })),
    initial_top_k: Type.Optional(Type.Integer({ minimum: 1, maximum: DEFAULT_LIMITS.maxInitialTopK, description: 'Stage-1 candidates (default 1,000,000)' })),
    final_top_k: Type.Optional(Type.Integer({ minimum: 1, maximum: DEFAULT_LIMITS.maxFinalTopK, description: 'Matches returned (default 5)' })),
    ef: Type.Optional(
      Type.Integer({ minimum: 1, maximum: MAX_SEARCH_EFFORT, description: 'Graph search effort: candidates each graph walk explores (default chosen per table for recall@10 >= 0.98); embedded storage only' }),
    ),
    filter: Type.Optional(FilterObject),
    include_vector: Type.Optional(Type.Boolean()),
    mode: Type.Optional(
      Type.Union([Type.Literal('semantic'), Type.Literal('lexical'), Type.Literal('hybrid')], {
        description: 'semantic (default: by the model), lexical (BM25 over the rows\' text) or hybrid (both lists fused)',
      }),
    ),
    // Checked in the service, which names the exact bad field (a union's schema errors would not).
    fusion: Type.Optional(
      Type.Object(
        { method: Type.String({ maxLength: 16, description: 'rrf or relative' }), k: Type.Optional(Type.Number()), alpha: Type.Optional(Type.Number()) },
        {
          additionalProperties: false,
          description: 'Hybrid mode: {"method": "rrf", "k": 60} or {"method": "relative", "alpha": 0.5}',
          ...serviceChecked({
            oneOf: [
              form('Reciprocal rank fusion', ['method'], { method: { const: 'rrf' }, k: { type: 'number', minimum: 0 }, alpha: false }),
              form('Relative score fusion', ['method'], { method: { const: 'relative' }, alpha: { type: 'number', minimum: 0, maximum: 1 }, k: false }),
            ],
          }),
        },
      ),
    ),
    mmr: Type.Optional(
      Type.Object(
        { diversity: Type.Optional(Type.Number({ ...serviceChecked({ minimum: 0, maximum: 1 }) })), candidates: Type.Optional(Type.Integer({ ...serviceChecked({ minimum: 1, maximum: MAX_LIST_ROWS }) })) },
        { additionalProperties: false, description: 'Maximal marginal relevance: diversity 0-1 over the best `candidates` (from final_top_k to initial_top_k, checked by the service)' },
      ),
    ),
    rerank: Type.Optional(Type.Boolean({ description: 'Order the best candidates with the configured cross-encoder (VSS_RERANK_URL)' })),
    // The specification says requests and responses share one shape; accept (and ignore) matches.
    matches: Type.Optional(Type.Array(Type.Unknown(), { maxItems: DEFAULT_LIMITS.maxFinalTopK })),
  },
  {
    additionalProperties: false,
    description: 'One of the forms below. The service also checks what JSON Schema cannot say: final_top_k at most initial_top_k, a vector of the table\'s dimension, not all zeros under cosine.',
    ...serviceChecked({
      oneOf: [
        form('Semantic, by text', ['query'], { mode: { const: 'semantic' }, ...absent('vector', 'vector_base64', 'fusion') }),
        form('Semantic, by vector', ['vector'], { mode: { const: 'semantic' }, rerank: { const: false }, ...absent('query', 'vector_base64', 'fusion') }),
        form('Semantic, by base64 vector', ['vector_base64'], { mode: { const: 'semantic' }, rerank: { const: false }, ...absent('query', 'vector', 'fusion') }),
        form('Lexical (BM25 over the texts)', ['query', 'mode'], { mode: { const: 'lexical' }, ...absent('vector', 'vector_base64', 'fusion') }),
        form('Hybrid, the query embedded', ['query', 'mode'], { mode: { const: 'hybrid' }, ...absent('vector', 'vector_base64') }),
        form('Hybrid with its semantic vector given', ['query', 'mode', 'vector'], { mode: { const: 'hybrid' }, ...absent('vector_base64') }),
        form('Hybrid with its semantic vector given in base64', ['query', 'mode', 'vector_base64'], { mode: { const: 'hybrid' }, ...absent('vector') }),
      ],
    }),
  },
);
export type SearchBody = Static<typeof SearchBody>;

/** A TTL on a write: whole seconds, or null for never (see docs/API.md, "TTL"). */
const TtlSeconds = (description: string) => Type.Union([Type.Integer({ minimum: 1, maximum: MAX_TTL_SECONDS }), Type.Null()], { description });
const RECORD_TTL = 'Seconds until this row expires (at most ten years); null: never, whatever the request or table says; absent: the request\'s, else the table\'s default_ttl_seconds';

/** One record's members: in a batch's `vectors`, and at the top of a single write. */
const RecordFields = {
  key: Type.Optional(Key),
  vector: Type.Optional(VectorValues),
  vector_base64: Type.Optional(VectorBase64),
  text: Type.Optional(Type.String({ maxLength: DEFAULT_LIMITS.textBytes, description: 'Embedded with model_name when no vector is given; at most 64 KiB of UTF-8' })),
  metadata: Type.Optional(MetadataObject),
  ttl_seconds: Type.Optional(TtlSeconds(RECORD_TTL)),
};

const VectorRecord = Type.Object(RecordFields, { additionalProperties: false, ...serviceChecked(VECTOR_FORMS) });

export const VectorWriteBody = Type.Object(
  { keyspace: Keyspace, table: TableName, model_name: Type.Optional(ModelName), ...RecordFields },
  { additionalProperties: false, description: "The vector must have the table's dimension (checked by the service).", ...serviceChecked(VECTOR_FORMS) },
);
export type VectorWriteBody = Static<typeof VectorWriteBody>;

export const VectorBatchBody = Type.Object(
  {
    keyspace: Keyspace,
    table: TableName,
    model_name: Type.Optional(ModelName),
    vectors: Type.Optional(batchOf(VectorRecord, 'Records to upsert, all or nothing')),
    vector: Type.Optional(batchOf(VectorValues, 'Bare vectors (keys are generated)')),
    ttl_seconds: Type.Optional(TtlSeconds("Seconds until the records that name no ttl_seconds expire; null: never; absent: the table's default_ttl_seconds")),
  },
  // One of the two forms, as the service requires.
  { additionalProperties: false, oneOf: [{ required: ['vectors'] }, { required: ['vector'] }] },
);
export type VectorBatchBody = Static<typeof VectorBatchBody>;

export const VectorGetBody = Type.Object(
  { keyspace: Keyspace, table: TableName, key: Key, include_vector: Type.Optional(Type.Boolean()) },
  { additionalProperties: false },
);
export type VectorGetBody = Static<typeof VectorGetBody>;

export const VectorDeleteBody = Type.Object(
  {
    keyspace: Keyspace,
    table: TableName,
    keys: Type.Optional(Type.Array(Key, { minItems: 1, maxItems: DEFAULT_LIMITS.batchItems, [BATCH_LIMIT]: true })),
    filter: Type.Optional(FilterObject),
  },
  // Keys or a filter, not both.
  { additionalProperties: false, oneOf: [{ required: ['keys'] }, { required: ['filter'] }] },
);
export type VectorDeleteBody = Static<typeof VectorDeleteBody>;

export const VectorListBody = Type.Object(
  {
    keyspace: Keyspace,
    table: TableName,
    cursor: Type.Optional(Type.String({ maxLength: 1024, description: 'From the previous page; absent for the first' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: DEFAULT_LIMITS.batchItems, description: 'Rows per page (default 100)' })),
    include_vector: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type VectorListBody = Static<typeof VectorListBody>;

export const VectorCountBody = Type.Object({ keyspace: Keyspace, table: TableName, filter: Type.Optional(FilterObject) }, { additionalProperties: false });
export type VectorCountBody = Static<typeof VectorCountBody>;

const MetadataFields = {
  keyspace: Keyspace,
  table: TableName,
  source_file: Type.String({ minLength: 1, maxLength: 1024 }),
  raw_value: Type.Optional(Type.String({ maxLength: DEFAULT_LIMITS.textBytes * 16, description: 'At most 1 MiB of UTF-8' })),
  source_type: Type.Optional(Type.String({ maxLength: 256 })),
  processing_details: Type.Optional(Type.String({ maxLength: 65536 })),
  ttl_seconds: Type.Optional(TtlSeconds('Seconds until the record expires; absent or null: never')),
};
export const MetadataRecordBody = Type.Object(MetadataFields, { additionalProperties: false });
export type MetadataRecordBody = Static<typeof MetadataRecordBody>;
export const MetadataBatchBody = Type.Union([
  Type.Object({ records: batchOf(MetadataRecordBody, 'Records to upsert, all or nothing') }, { additionalProperties: false }),
  batchOf(MetadataRecordBody, 'Records to upsert, all or nothing'),
]);
export type MetadataBatchBody = Static<typeof MetadataBatchBody>;

export const KeyspaceCreateBody = Type.Union([Type.Object({ keyspace: Type.Optional(Keyspace) }, { additionalProperties: false }), Type.Null()]);
export const TableCreateBody = Type.Object(
  {
    keyspace: Keyspace,
    table: TableName,
    dimension: Type.Optional(Type.Integer({ minimum: 1, maximum: DEFAULT_LIMITS.maxDimension })),
    metric: Type.Optional(Type.String()),
    model_name: Type.Optional(ModelName),
    lexical: Type.Optional(
      Type.Object(
        { tokenizer: Type.Optional(Type.Union(LEXICAL_TOKENIZERS.map((t) => Type.Literal(t)), { description: 'How texts are split for lexical search (default porter: English stemming)' })) },
        { additionalProperties: false },
      ),
    ),
    default_ttl_seconds: Type.Optional(TtlSeconds('Seconds until rows written without a TTL expire; absent or null: they never do')),
  },
  {
    additionalProperties: false,
    description: "The service also accepts a dimension with a model when it is the model's.",
    ...serviceChecked({
      oneOf: [form('A dimension, for vectors given as numbers (no model)', ['dimension'], absent('model_name')), form("A model (default: the server's), whose dimension the table takes", [], absent('dimension'))],
    }),
  },
);
export type TableCreateBody = Static<typeof TableCreateBody>;

export const TableUpdateBody = Type.Object(
  {
    keyspace: Keyspace,
    table: TableName,
    default_ttl_seconds: TtlSeconds('The new default TTL of rows written without one; null: none. Rows already written keep their expiry.'),
  },
  { additionalProperties: false },
);
export type TableUpdateBody = Static<typeof TableUpdateBody>;

export const GenerateQuery = Type.Object(
  { text: Type.String({ minLength: 0, maxLength: DEFAULT_LIMITS.textBytes }), model_name: Type.Optional(ModelName) },
  { additionalProperties: false },
);
export type GenerateQuery = Static<typeof GenerateQuery>;

export const EmbeddingsBody = Type.Object(
  {
    input: Type.Union(
      [
        Type.String({ maxLength: DEFAULT_LIMITS.textBytes }),
        Type.Array(Type.String({ maxLength: DEFAULT_LIMITS.textBytes }), { maxItems: DEFAULT_LIMITS.embeddingInputs }),
        // OpenAI's token-id forms, accepted by the schema only to be refused with a reason.
        Type.Array(Type.Integer(), { maxItems: DEFAULT_LIMITS.embeddingInputs }),
        Type.Array(Type.Array(Type.Integer(), { maxItems: DEFAULT_LIMITS.embeddingInputs }), { maxItems: DEFAULT_LIMITS.embeddingInputs }),
      ],
      {
        description: 'A text or an array of texts (token ids are refused: they are another tokenizer\'s)',
        // The document lists only the forms served.
        ...serviceChecked({
          anyOf: [Type.String({ maxLength: DEFAULT_LIMITS.textBytes }), Type.Array(Type.String({ maxLength: DEFAULT_LIMITS.textBytes }), { minItems: 1, maxItems: DEFAULT_LIMITS.embeddingInputs })],
        }),
      },
    ),
    model: Type.Optional(ModelName),
    encoding_format: Type.Optional(Type.Union([Type.Literal('float'), Type.Literal('base64')])),
    // Accepted for compatibility with OpenAI clients, which may send it.
    user: Type.Optional(Type.String({ maxLength: 256 })),
  },
  { additionalProperties: false },
);
export type EmbeddingsBody = Static<typeof EmbeddingsBody>;

export const UserCreateBody = Type.Object(
  {
    name: Label(200),
    email: Type.String({ format: 'email', maxLength: 320 }),
    // The specification's record has these; the server owns them and ignores what is sent.
    account_id: Type.Optional(Type.String({ maxLength: 64 })),
    created_at: Type.Optional(Type.String({ maxLength: 64 })),
    connections: Type.Optional(Type.Array(Type.Unknown(), { maxItems: 100 })),
  },
  { additionalProperties: false },
);
export type UserCreateBody = Static<typeof UserCreateBody>;

export const AccountIdParams = Type.Object({ account_id: Type.String({ minLength: 1, maxLength: 64 }) });

const PermissionName = Type.Union([Type.Literal('All'), Type.Literal('Write'), Type.Literal('Read')]);
const ResourceName = Type.String({ pattern: `^(\\*|${NAME_PATTERN.slice(1, -1)})$`, description: 'A keyspace name, or *' });

export const KeyGenerateBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    user_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    permissions: Type.Optional(PermissionName),
    resources: Type.Optional(Type.Array(ResourceName, { minItems: 1, maxItems: 1000 })),
  },
  { additionalProperties: false },
);
export type KeyGenerateBody = Static<typeof KeyGenerateBody>;

export const KeyIdBody = Type.Object({ key_id: Type.String({ minLength: 1, maxLength: 64 }) }, { additionalProperties: false });
export const KeyListQuery = Type.Object({ user_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })) }, { additionalProperties: false });

export const ConnectionBody = Type.Object(
  { type: Label(64), id: Label(256) },
  { additionalProperties: false },
);

/** An exported item's expiry: ISO 8601, or null (or absent) for never. */
const exportExpiry = (what: string) => Type.Optional(Type.Union([Type.String({ format: 'date-time', maxLength: 64 }), Type.Null()], { description: `When the ${what} expires; null: never` }));

/** Export format items (service/portable.ts, docs/API.md "Export format"): what `POST /v1/import` takes. */
const ExportRowFields = {
  key: Key,
  vector_base64: VectorBase64,
  text: Type.Union([Type.String({ maxLength: DEFAULT_LIMITS.textBytes }), Type.Null()]),
  metadata: MetadataObject,
  expires_at: exportExpiry('row'),
};
const ExportTableItem = Type.Object(
  {
    type: Type.Literal('table'),
    table: TableName,
    dimension: Type.Integer({ minimum: 1, maximum: DEFAULT_LIMITS.maxDimension }),
    metric: Type.String({ minLength: 1, maxLength: 64 }),
    model: Type.Union([ModelName, Type.Null()]),
    lexical: Type.Object({ tokenizer: Type.Union(LEXICAL_TOKENIZERS.map((t) => Type.Literal(t))) }, { additionalProperties: false }),
    default_ttl_seconds: Type.Optional(Type.Union([Type.Integer({ minimum: 1, maximum: 2 ** 31 - 1 }), Type.Null()])),
  },
  { additionalProperties: false },
);
const ExportRowItem = Type.Object({ type: Type.Literal('row'), table: TableName, ...ExportRowFields }, { additionalProperties: false });
const ExportMetadataItem = Type.Object(
  {
    type: Type.Literal('metadata'),
    table: TableName,
    source_file: MetadataFields.source_file,
    raw_value: Type.String({ maxLength: DEFAULT_LIMITS.textBytes * 16 }),
    source_type: Type.String({ maxLength: 256 }),
    processing_details: Type.String({ maxLength: 65536 }),
    expires_at: exportExpiry('record'),
  },
  { additionalProperties: false },
);
const ExportFileItem = Type.Object(
  {
    type: Type.Literal('file'),
    table: TableName,
    name: Type.String({ minLength: 1, maxLength: 1024 }),
    file_type: Type.String({ minLength: 1, maxLength: 32 }),
    size: Type.Integer({ minimum: 0, maximum: 4096 * 2 ** 20 }),
    sha256: Type.String({ pattern: '^[0-9a-f]{64}$' }),
    created_at: Type.String({ minLength: 1, maxLength: 64 }),
    content_base64: Type.String({ format: BASE64_FORMAT, maxLength: base64Length(4096 * 2 ** 20), description: 'The stored bytes, standard base64' }),
    record: Type.Object(
      { raw_value: ExportMetadataItem.properties.raw_value, source_type: ExportMetadataItem.properties.source_type, processing_details: ExportMetadataItem.properties.processing_details, expires_at: exportExpiry('record') },
      { additionalProperties: false },
    ),
    chunks: Type.Array(Type.Object(ExportRowFields, { additionalProperties: false }), { maxItems: 1_000_000, description: 'The chunk rows `<name>#<i>`, in order' }),
  },
  { additionalProperties: false },
);
export const ImportBody = Type.Object(
  {
    keyspace: Keyspace,
    items: Type.Array(Type.Union([ExportTableItem, ExportRowItem, ExportMetadataItem, ExportFileItem]), {
      minItems: 1,
      maxItems: DEFAULT_LIMITS.batchItems,
      [BATCH_LIMIT]: true,
      description: 'Lines of an export after its header, in order (the `end` line is not sent)',
    }),
  },
  { additionalProperties: false },
);
export type ImportBody = Static<typeof ImportBody>;
export const ExportQuery = Type.Object({ keyspace: Keyspace, table: Type.Optional(TableName) }, { additionalProperties: false });
