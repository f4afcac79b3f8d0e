import type { Config } from '../config/config.ts';
import type { ModelRegistry } from '../embedding/registry.ts';
import type { Storage } from '../storage/api.ts';
import type { Reranker } from './rerank.ts';

/** What every use case needs; built once at start and passed down. */
export interface Deps {
  readonly config: Config;
  readonly storage: Storage;
  readonly models: ModelRegistry;
  /** The cross-encoder for `"rerank": true` searches; null when VSS_RERANK_URL is unset. */
  readonly reranker: Reranker | null;
  /** The clock TTLs count from (ms since the epoch); default Date.now. Tests pass the one their storage expires rows by. */
  readonly clock?: () => number;
}
