/**
 * Prometheus metrics (prom-client) in one registry per process: HTTP requests by route and
 * status, embedding batches, index sizes, and storage call latencies. Everything here observes;
 * nothing changes behaviour.
 */
import client from 'prom-client';
import type { Storage } from '../storage/api.ts';

export interface IndexStat {
  keyspace: string;
  table: string;
  rows: number;
  indexed: number;
  pending: number;
  inMemorySegments?: number;
  postingLists?: boolean;
}

export class Metrics {
  readonly registry = new client.Registry();
  readonly httpRequests = new client.Counter({
    name: 'vss_http_requests_total',
    help: 'HTTP requests by route, method and status code',
    labelNames: ['route', 'method', 'status'] as const,
    registers: [this.registry],
  });
  readonly httpDuration = new client.Histogram({
    name: 'vss_http_request_duration_seconds',
    help: 'HTTP request latency by route and method',
    labelNames: ['route', 'method'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });
  readonly embeddingBatch = new client.Histogram({
    name: 'vss_embedding_batch_size',
    help: 'Texts per embedding model call',
    labelNames: ['model'] as const,
    buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256],
    registers: [this.registry],
  });
  readonly embeddingDuration = new client.Histogram({
    name: 'vss_embedding_batch_duration_seconds',
    help: 'Duration of one embedding model call',
    labelNames: ['model', 'outcome'] as const,
    buckets: [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });
  readonly storageDuration = new client.Histogram({
    name: 'vss_storage_operation_duration_seconds',
    help: 'Storage backend call latency by operation and outcome',
    labelNames: ['operation', 'outcome'] as const,
    buckets: [0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5],
    registers: [this.registry],
  });

  /**
   * `process: false` leaves out the process's own metrics (CPU, memory, event-loop lag, GC), whose
   * observers live as long as the process: for an app that does not (the search warm-up's).
   */
  constructor(indexStats?: () => IndexStat[], opts: { process?: boolean } = {}) {
    if (opts.process !== false) client.collectDefaultMetrics({ register: this.registry, prefix: 'vss_process_' });
    if (indexStats) {
      const labelNames = ['keyspace', 'table'] as const;
      const indexed = new client.Gauge({ name: 'vss_index_indexed_rows', help: 'Rows in the ANN index per table', labelNames, registers: [] });
      const pending = new client.Gauge({ name: 'vss_index_pending_rows', help: 'Rows written but not yet in the ANN index (scanned exactly meanwhile)', labelNames, registers: [] });
      const inMemory = new client.Gauge({
        name: 'vss_index_segments_in_memory',
        help: 'Sealed ANN graph segments still searched from memory, by one thread alone, until written to their files and mapped (embedded backend)',
        labelNames,
        registers: [],
      });
      const lists = new client.Gauge({
        name: 'vss_lexical_posting_lists',
        help: "1 when a table's lexical searches are answered from its in-memory posting lists, 0 while FTS5 answers them (embedded backend)",
        labelNames,
        registers: [],
      });
      // One read of the index status fills all five gauges; the first one collected does it.
      const rows = new client.Gauge({
        name: 'vss_index_rows',
        help: 'Rows per table',
        labelNames,
        registers: [],
        collect() {
          for (const g of [this, indexed, pending, inMemory, lists]) g.reset();
          for (const s of indexStats()) {
            const labels = { keyspace: s.keyspace, table: s.table };
            this.set(labels, s.rows);
            indexed.set(labels, s.indexed);
            pending.set(labels, s.pending);
            if (s.inMemorySegments !== undefined) inMemory.set(labels, s.inMemorySegments);
            if (s.postingLists !== undefined) lists.set(labels, s.postingLists ? 1 : 0);
          }
        },
      });
      for (const g of [rows, indexed, pending, inMemory, lists]) this.registry.registerMetric(g);
    }
  }

  /** For EmbedderOptions.onBatch. */
  readonly onEmbeddingBatch = (model: string, size: number, ms: number, ok: boolean): void => {
    this.embeddingBatch.observe({ model }, size);
    this.embeddingDuration.observe({ model, outcome: ok ? 'ok' : 'error' }, ms / 1000);
  };

  /**
   * Wraps a storage backend so that every async call is timed. A Proxy keeps this independent
   * of which backend it is and of methods added later.
   */
  instrument<S extends Storage>(storage: S): S {
    const hist = this.storageDuration;
    return new Proxy(storage, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver);
        if (typeof value !== 'function' || typeof prop !== 'string' || prop === 'close') return value;
        return (...args: unknown[]) => {
          const end = hist.startTimer({ operation: prop });
          let result: unknown;
          try {
            result = (value as (...a: unknown[]) => unknown).apply(target, args);
          } catch (e) {
            end({ outcome: 'error' });
            throw e;
          }
          if (result instanceof Promise) {
            return result.then(
              (v) => (end({ outcome: 'ok' }), v),
              (e) => {
                end({ outcome: 'error' });
                throw e;
              },
            );
          }
          end({ outcome: 'ok' });
          return result;
        };
      },
    });
  }
}
