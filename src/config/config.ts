import { isIP } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { EnvReader, type Env } from './env-reader.ts';

/**
 * Settings are read from the environment exactly once, here, validated, frozen and passed down.
 * Nothing below the HTTP layer reads process.env.
 */

export const PROJECT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const DEFAULT_MODEL = 'all-MiniLM-L6-v2';

export interface Limits {
  /** Largest JSON body in bytes. */
  readonly bodyBytes: number;
  /** Largest uploaded file in bytes. */
  readonly uploadBytes: number;
  /** Most items in one batch write. */
  readonly batchItems: number;
  readonly maxDimension: number;
  readonly maxFinalTopK: number;
  readonly maxInitialTopK: number;
  /** Longest query text in bytes (UTF-8). */
  readonly queryBytes: number;
  /** Longest text to embed for a vector row, in bytes. */
  readonly textBytes: number;
  /** Longest vector key in bytes (UTF-8). */
  readonly keyBytes: number;
  /** Largest metadata object, serialised, in bytes. */
  readonly metadataBytes: number;
  /** Most inputs in one OpenAI-style embeddings call. */
  readonly embeddingInputs: number;
  /** Most tables in one keyspace (each holds a vector file open). */
  readonly tablesPerKeyspace: number;
  /** Most uploads one user may have in progress at once, in one process. */
  readonly uploadsPerUser: number;
  /** Requests with an invalid key one client address may make in a minute, in one process. */
  readonly authFailuresPerMinute: number;
  /** The same from all addresses together (slows a guess spread over many addresses). */
  readonly authFailuresPerMinuteGlobal: number;
}

export interface PlanLimits {
  /** Vectors stored across the user's keyspaces. */
  readonly maxVectors: number;
  /** Bytes of uploaded files stored. */
  readonly maxFileBytes: number;
  /** Requests per minute, over all of the user's keys. */
  readonly requestsPerMinute: number;
  /** Keyspaces the user owns (each table holds a vector file open: no user may take them all). */
  readonly maxKeyspaces: number;
}

export interface Config {
  readonly host: string;
  readonly port: number;
  readonly dataDir: string;
  /** A directory holding one folder per model (e.g. `<modelDir>/all-MiniLM-L6-v2`). */
  readonly modelDir: string;
  readonly defaultModel: string;
  readonly defaultKeyspace: string;
  readonly defaultTable: string;
  readonly adminKey: string | undefined;
  readonly storage: 'embedded' | 'cassandra';
  readonly cassandra: {
    readonly contactPoints: readonly string[];
    readonly localDc: string;
    readonly replication: string;
    /** Consistency of writes (ANN reads always run at ONE: Cassandra's rule). */
    readonly writeConsistency: 'QUORUM' | 'LOCAL_QUORUM' | 'ONE';
    /** Where accounts, catalog, files and webhook events live. */
    readonly systemKeyspace: string;
    /** Prepended to every data keyspace name, so deployments can share one cluster. */
    readonly keyspacePrefix: string;
    /**
     * How long (ms) a process remembers an API key it found, instead of reading it per request;
     * 0: never. A revocation through another process takes up to this long to reach this one.
     */
    readonly apiKeyCacheMs: number;
    /**
     * Path of a DataStax Astra DB secure connect bundle (zip). When set, the driver takes the
     * contact points, local data center and TLS settings from it; contactPoints and localDc are unused.
     */
    readonly secureConnectBundle?: string;
    /** For PasswordAuthenticator clusters and Astra DB (`token` + an AstraCS token). Never shown or logged. */
    readonly credentials?: { readonly username: string; readonly password: string };
  };
  readonly stripeWebhookSecret: string | undefined;
  readonly dockerHost: string | undefined;
  readonly chat: {
    readonly url: string | undefined;
    readonly model: string | undefined;
    /** Sent as `Authorization: Bearer` to the chat endpoint when set (a secret: never shown). */
    readonly apiKey?: string | undefined;
    /** How long to wait for the chat endpoint before answering extractively (default 15000). */
    readonly timeoutMs?: number;
    /** Calls to the chat endpoint in flight at once in this process; more are answered extractively. */
    readonly maxConcurrent: number;
  };
  /** A Cohere-compatible `/rerank` endpoint for `"rerank": true` searches (none: such searches are refused). */
  readonly rerank: {
    readonly url: string | undefined;
    /** Sent as `model` when set; servers that host one reranker (vLLM) need none. */
    readonly model: string | undefined;
    /** Sent as `Authorization: Bearer` when set (a secret: never shown). */
    readonly apiKey: string | undefined;
    /** How long to wait for the reranker before answering in the un-reranked order. */
    readonly timeoutMs: number;
    /** Calls to the reranker in flight at once in this process; more are answered un-reranked. */
    readonly maxConcurrent: number;
  };
  readonly logLevel: string;
  readonly limits: Limits;
  /** Plans by name: `free` for new users, `pro` after a checkout, `admin` for the administrator. */
  readonly plans: Readonly<Record<string, PlanLimits>>;
  /** The plan a completed checkout moves a user to. */
  readonly paidPlan: string;
  /**
   * `GET /metrics` without a key, only when VSS_METRICS_PUBLIC=true: its labels name every
   * tenant's keyspaces and tables, and a loopback listener is often behind a public proxy.
   */
  readonly metricsPublic: boolean;
  /**
   * Whose address a request is from, behind a reverse proxy (Fastify's `trustProxy`): false (the
   * socket's peer), true (the first address of X-Forwarded-For), or the proxies' addresses and
   * CIDR ranges (the nearest address in X-Forwarded-For not among them). Per-address limits
   * count what this gives.
   */
  readonly trustProxy: boolean | string[];
  /** After SIGTERM, how long requests in flight may take before their connections are cut. */
  readonly shutdownGraceMs: number;
  /** Embedding micro-batching: most texts per model call, and how long to wait to fill one. */
  readonly embedding: { readonly maxBatch: number; readonly batchWindowMs: number; readonly cacheEntries: number };
  /**
   * Bulk text (writes of texts, uploads) is embedded on its own threads while queries keep the
   * main thread's model (src/embedding/bulk-pool.ts): `workers` threads of `threads` ONNX
   * threads each (0 workers: bulk text runs on the main thread between queries), at CPU
   * priority `nice` so that a query's call is scheduled first.
   */
  readonly embedBulk: { readonly workers: number; readonly threads: number; readonly nice: number };
  /**
   * Most work per model call, on every session: rows × padded length (`tokens`) and rows × padded
   * length² (`attention`); larger batches run as several calls (src/embedding/model.ts callGroups).
   */
  readonly embedCall: { readonly tokens: number; readonly attention: number };
  /** MiB of vectors that small tables may also keep in memory (bigger ones are scanned from their files). */
  readonly vectorMemoryMb: number;
  /** MiB of the embedded database read through a memory map (SQLite caps it at 2 GiB; 0: plain reads). */
  readonly dbMmapMb: number;
  /**
   * Text extraction from uploaded files, in pooled child processes (src/ingest/extract/pool.ts):
   * processes at once, uploads waiting for one, each process's memory ceiling and time limit per
   * file, and what a file may give (characters kept, PDF pages read, bytes its zip entries or PDF
   * streams may decode to).
   */
  readonly extract: {
    readonly workers: number;
    readonly queue: number;
    readonly memoryMb: number;
    readonly timeoutMs: number;
    readonly maxChars: number;
    readonly maxPages: number;
    readonly maxExpandedBytes: number;
  };
  /**
   * ANN index upkeep: save after this many changes or this many ms, whichever comes first; tables
   * under exactBelowRows rows are scanned exactly; graphs are sealed at segmentRows rows.
   */
  readonly index: { readonly saveEveryChanges: number; readonly saveEveryMs: number; readonly exactBelowRows: number; readonly segmentRows: number };
  /**
   * Searches a server on the embedded store sends itself after start, on rows of its own, while
   * no client's request comes (src/http/warm-up.ts; 0: none).
   */
  readonly warmUpSearches: number;
  /**
   * The background removal of expired rows (TTL) in the embedded store: at most `batchRows`
   * deletions per batch, a pass every `intervalMs`. Expired rows are hidden from reads at once
   * either way; Cassandra's engine removes its own.
   */
  readonly ttlSweep: { readonly batchRows: number; readonly intervalMs: number };
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

const MiB = 1024 * 1024;

export const DEFAULT_LIMITS: Limits = Object.freeze({
  bodyBytes: 32 * MiB,
  uploadBytes: 64 * MiB,
  batchItems: 1000,
  maxDimension: 4096,
  maxFinalTopK: 1000,
  maxInitialTopK: 1_000_000,
  queryBytes: 8 * 1024,
  textBytes: 64 * 1024,
  keyBytes: 512,
  metadataBytes: 64 * 1024,
  embeddingInputs: 2048,
  tablesPerKeyspace: 100,
  uploadsPerUser: 4,
  authFailuresPerMinute: 120,
  authFailuresPerMinuteGlobal: 1200,
});

/** VSS_TRUST_PROXY: true, false, or comma-separated addresses and CIDR ranges of the proxies. */
function trustProxy(raw: string | undefined, problems: string[]): boolean | string[] {
  if (raw === undefined || raw.trim() === '' || raw === 'false') return false;
  if (raw === 'true') return true;
  const entries = raw.split(',').map((s) => s.trim());
  const bad = entries.filter((e) => {
    const [address, bits, ...more] = e.split('/');
    const family = isIP(address);
    if (family === 0 || more.length > 0) return true;
    return bits !== undefined && !(/^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128));
  });
  if (bad.length > 0) {
    problems.push(`VSS_TRUST_PROXY must be true, false, or the proxies' IP addresses and CIDR ranges, comma-separated (not: ${bad.map((b) => `"${b}"`).join(', ')})`);
  }
  return entries;
}

function isHttpUrl(value: string): boolean {
  try {
    const u = new URL(value);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '';
  } catch {
    return false;
  }
}

function deepFreeze<T>(o: T): T {
  if (o && typeof o === 'object') {
    for (const v of Object.values(o)) deepFreeze(v);
    Object.freeze(o);
  }
  return o;
}

/**
 * Builds the configuration from an environment map (process.env in production, a literal in
 * tests). `overrides` lets tests and the CLI set values without touching the environment.
 * Every problem is reported at once so an operator fixes them in one go.
 */
export function loadConfig(env: Env = {}, overrides: Partial<Omit<Config, 'limits'>> & { limits?: Partial<Limits> } = {}): Config {
  const r = new EnvReader(env);
  const { int, bool, str } = r;

  const storage = str('VSS_STORAGE') ?? 'embedded';
  if (storage !== 'embedded' && storage !== 'cassandra') r.problems.push(`VSS_STORAGE must be "embedded" or "cassandra" (got "${storage}")`);
  const adminKey = str('VSS_ADMIN_KEY');
  if (adminKey !== undefined && adminKey.length < 16) r.problems.push('VSS_ADMIN_KEY must be at least 16 characters');
  const logLevel = str('VSS_LOG_LEVEL') ?? 'info';
  if (!['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].includes(logLevel)) {
    r.problems.push(`VSS_LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent (got "${logLevel}")`);
  }
  const { limits: limitOverrides, ...rest } = overrides;

  const config: Config = {
    host: str('VSS_HOST') ?? '127.0.0.1',
    port: int('VSS_PORT', 8080, 0, 65535),
    dataDir: path.resolve(str('VSS_DATA_DIR') ?? './data'),
    modelDir: path.resolve(str('VSS_MODEL_DIR') ?? path.join(PROJECT_ROOT, 'models')),
    defaultModel: DEFAULT_MODEL,
    defaultKeyspace: 'default_keyspace',
    defaultTable: 'vector',
    adminKey,
    storage: storage as Config['storage'],
    cassandra: readCassandra(r),
    stripeWebhookSecret: str('STRIPE_WEBHOOK_SECRET'),
    dockerHost: str('DOCKER_HOST'),
    ...readUpstreams(r),
    logLevel,
    limits: readLimits(r, limitOverrides),
    plans: readPlans(r),
    paidPlan: 'pro',
    metricsPublic: bool('VSS_METRICS_PUBLIC', false),
    trustProxy: trustProxy(env.VSS_TRUST_PROXY, r.problems),
    shutdownGraceMs: int('VSS_SHUTDOWN_GRACE_MS', 10_000, 0, 600_000),
    warmUpSearches: int('VSS_WARM_UP_SEARCHES', 2_000, 0, 100_000),
    ...readTuning(r),
    ...rest,
  } as Config;

  if (r.problems.length > 0) throw new ConfigError(r.problems);
  return deepFreeze(config);
}

function readCassandra({ str, int, problems }: EnvReader): Config['cassandra'] {
  const consistency = (str('VSS_CASSANDRA_CONSISTENCY') ?? 'QUORUM').toUpperCase() as Config['cassandra']['writeConsistency'];
  if (!['QUORUM', 'LOCAL_QUORUM', 'ONE'].includes(consistency)) problems.push(`VSS_CASSANDRA_CONSISTENCY must be QUORUM, LOCAL_QUORUM or ONE (got "${consistency}")`);
  const username = str('VSS_CASSANDRA_USERNAME');
  const password = str('VSS_CASSANDRA_PASSWORD');
  if ((username === undefined) !== (password === undefined)) {
    problems.push('VSS_CASSANDRA_USERNAME and VSS_CASSANDRA_PASSWORD must be set together');
  }
  const secureBundle = str('VSS_CASSANDRA_SECURE_BUNDLE');
  return {
    contactPoints: (str('VSS_CASSANDRA_CONTACT_POINTS') ?? '127.0.0.1').split(',').map((s) => s.trim()).filter(Boolean),
    localDc: str('VSS_CASSANDRA_LOCAL_DC') ?? 'datacenter1',
    replication: str('VSS_CASSANDRA_REPLICATION') ?? "{'class': 'SimpleStrategy', 'replication_factor': 1}",
    writeConsistency: consistency,
    systemKeyspace: str('VSS_CASSANDRA_SYSTEM_KEYSPACE') ?? 'vss_system',
    keyspacePrefix: str('VSS_CASSANDRA_KEYSPACE_PREFIX') ?? '',
    apiKeyCacheMs: int('VSS_CASSANDRA_API_KEY_CACHE_MS', 1000, 0, 1000),
    ...(secureBundle !== undefined ? { secureConnectBundle: path.resolve(secureBundle) } : {}),
    ...(username !== undefined && password !== undefined ? { credentials: { username, password } } : {}),
  };
}

/** The optional chat and rerank services: where they are and how long and how many at once they are waited for. */
function readUpstreams({ str, int, problems }: EnvReader): Pick<Config, 'chat' | 'rerank'> {
  const chatUrl = str('VSS_CHAT_URL');
  if (chatUrl !== undefined && !isHttpUrl(chatUrl)) {
    // Shown without its value: a URL may carry credentials.
    problems.push('VSS_CHAT_URL must be an http:// or https:// URL (an OpenAI-compatible API base, as http://127.0.0.1:8000/v1)');
  }
  const rerankUrl = str('VSS_RERANK_URL');
  if (rerankUrl !== undefined && !isHttpUrl(rerankUrl)) {
    problems.push('VSS_RERANK_URL must be an http:// or https:// URL (a Cohere-compatible API base or /rerank URL, as http://127.0.0.1:8000/v1)');
  }
  return {
    chat: {
      url: chatUrl,
      model: str('VSS_CHAT_MODEL'),
      apiKey: str('VSS_CHAT_API_KEY'),
      timeoutMs: int('VSS_CHAT_TIMEOUT_MS', 15_000, 1, 600_000),
      maxConcurrent: int('VSS_CHAT_MAX_CONCURRENT', 4, 1, 1000),
    },
    rerank: {
      url: rerankUrl,
      model: str('VSS_RERANK_MODEL'),
      apiKey: str('VSS_RERANK_API_KEY'),
      // Shorter than the chat's: a search waits for it, and un-reranked matches are still an answer.
      timeoutMs: int('VSS_RERANK_TIMEOUT_MS', 5_000, 1, 600_000),
      maxConcurrent: int('VSS_RERANK_MAX_CONCURRENT', 4, 1, 1000),
    },
  };
}

function readLimits({ int }: EnvReader, overrides: Partial<Limits> | undefined): Limits {
  const authFailuresPerMinute = int('VSS_MAX_AUTH_FAILURES_PER_MINUTE', DEFAULT_LIMITS.authFailuresPerMinute, 1, 10_000_000);
  return {
    ...DEFAULT_LIMITS,
    bodyBytes: int('VSS_MAX_BODY_BYTES', DEFAULT_LIMITS.bodyBytes, 1024, 1024 * MiB),
    uploadBytes: int('VSS_MAX_UPLOAD_BYTES', DEFAULT_LIMITS.uploadBytes, 1024, 4096 * MiB),
    batchItems: int('VSS_MAX_BATCH_ITEMS', DEFAULT_LIMITS.batchItems, 1, 100_000),
    uploadsPerUser: int('VSS_MAX_UPLOADS_PER_USER', DEFAULT_LIMITS.uploadsPerUser, 1, 1000),
    authFailuresPerMinute,
    // Ten addresses' worth by default: a guess needs many addresses to go faster than one could.
    authFailuresPerMinuteGlobal: int('VSS_MAX_AUTH_FAILURES_PER_MINUTE_GLOBAL', 10 * authFailuresPerMinute, 1, 100_000_000),
    ...overrides,
  };
}

function readPlans({ int }: EnvReader): Record<string, PlanLimits> {
  const GiB = 1024 * MiB;
  return {
    free: {
      maxVectors: int('VSS_FREE_MAX_VECTORS', 100_000, 0, Number.MAX_SAFE_INTEGER),
      maxFileBytes: int('VSS_FREE_MAX_FILE_BYTES', GiB, 0, Number.MAX_SAFE_INTEGER),
      requestsPerMinute: int('VSS_FREE_REQUESTS_PER_MINUTE', 600, 1, 10_000_000),
      maxKeyspaces: int('VSS_FREE_MAX_KEYSPACES', 100, 0, 1_000_000),
    },
    pro: {
      maxVectors: int('VSS_PRO_MAX_VECTORS', 10_000_000, 0, Number.MAX_SAFE_INTEGER),
      maxFileBytes: int('VSS_PRO_MAX_FILE_BYTES', 100 * GiB, 0, Number.MAX_SAFE_INTEGER),
      requestsPerMinute: int('VSS_PRO_REQUESTS_PER_MINUTE', 6000, 1, 10_000_000),
      maxKeyspaces: int('VSS_PRO_MAX_KEYSPACES', 1000, 0, 1_000_000),
    },
    admin: { maxVectors: Number.MAX_SAFE_INTEGER, maxFileBytes: Number.MAX_SAFE_INTEGER, requestsPerMinute: 1_000_000, maxKeyspaces: Number.MAX_SAFE_INTEGER },
  };
}

/** The engine's tunables: embedding batches, bulk and extraction threads, memory, index upkeep, expiry sweep. */
function readTuning({ int }: EnvReader): Pick<Config, 'embedding' | 'embedBulk' | 'embedCall' | 'extract' | 'vectorMemoryMb' | 'dbMmapMb' | 'index' | 'ttlSweep'> {
  return {
    embedding: {
      maxBatch: int('VSS_EMBED_MAX_BATCH', 32, 1, 512),
      batchWindowMs: int('VSS_EMBED_BATCH_WINDOW_MS', 0, 0, 1000),
      cacheEntries: int('VSS_EMBED_CACHE_ENTRIES', 2048, 0, 1_000_000),
    },
    embedBulk: {
      // One single-threaded session per core: measured faster than one session of `cores` threads
      // on batches of passages (docs/PERFORMANCE.md, "Text ingest").
      workers: int('VSS_EMBED_BULK_WORKERS', os.availableParallelism(), 0, 256),
      threads: int('VSS_EMBED_BULK_THREADS', 1, 1, 256),
      nice: int('VSS_EMBED_BULK_NICE', 10, 0, 19),
    },
    embedCall: {
      tokens: int('VSS_EMBED_CALL_TOKENS', 4096, 512, 1_048_576),
      attention: int('VSS_EMBED_CALL_ATTENTION', 524_288, 65_536, 1_073_741_824),
    },
    extract: {
      workers: int('VSS_EXTRACT_WORKERS', 2, 1, 64),
      queue: int('VSS_EXTRACT_QUEUE', 32, 0, 10_000),
      memoryMb: int('VSS_EXTRACT_MAX_MEMORY_MB', 1024, 128, 65_536),
      timeoutMs: int('VSS_EXTRACT_TIMEOUT_MS', 120_000, 100, 3_600_000),
      maxChars: int('VSS_EXTRACT_MAX_CHARS', 10_000_000, 1000, 1_000_000_000),
      maxPages: int('VSS_EXTRACT_MAX_PAGES', 2000, 1, 1_000_000),
      maxExpandedBytes: int('VSS_EXTRACT_MAX_EXPANDED_MB', 256, 1, 65_536) * MiB,
    },
    vectorMemoryMb: int('VSS_VECTOR_MEMORY_MB', 256, 0, 1_000_000),
    dbMmapMb: int('VSS_DB_MMAP_MB', 2048, 0, 1_000_000),
    index: {
      saveEveryChanges: int('VSS_INDEX_SAVE_EVERY_CHANGES', 50_000, 1, 100_000_000),
      saveEveryMs: int('VSS_INDEX_SAVE_EVERY_MS', 60_000, 100, 86_400_000),
      exactBelowRows: int('VSS_EXACT_BELOW_ROWS', 10_000, 0, 100_000_000),
      segmentRows: int('VSS_INDEX_SEGMENT_ROWS', 250_000, 1_000, 100_000_000),
    },
    ttlSweep: {
      batchRows: int('VSS_TTL_SWEEP_BATCH_ROWS', 200, 1, 1_000_000),
      intervalMs: int('VSS_TTL_SWEEP_INTERVAL_MS', 1_000, 10, 86_400_000),
    },
  };
}
