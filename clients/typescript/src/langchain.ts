/**
 * LangChain.js integration (`@vss/client/langchain`; needs the optional peer @langchain/core):
 * a VectorStore over one vss table. Given no Embeddings (null), the server embeds documents and
 * queries with its own model; given one, vectors are computed here and sent.
 */
import type { Callbacks } from '@langchain/core/callbacks/manager';
import { Document, type DocumentInterface } from '@langchain/core/documents';
import { Embeddings, type EmbeddingsInterface } from '@langchain/core/embeddings';
import { VectorStore, type MaxMarginalRelevanceSearchOptions } from '@langchain/core/vectorstores';
import type { VssClient } from './client.ts';
import type { SearchAnswer } from './types/answers.ts';
import type { Filter, SearchRequest, UpsertRecord } from './types/requests.ts';

export interface VssVectorStoreArgs {
  client: VssClient;
  keyspace?: string;
  table?: string;
  /** The server's model for texts it embeds (its default otherwise). */
  model_name?: string;
}

/** The server's `/v1/embeddings` as LangChain Embeddings: what the store embeds queries with when given none. */
export class VssServerEmbeddings extends Embeddings {
  constructor(private readonly client: VssClient, private readonly model?: string) {
    super({});
  }

  async embedDocuments(texts: string[]): Promise<number[][]> {
    const vectors: number[][] = [];
    for (let i = 0; i < texts.length; i += 2048) vectors.push(...(await this.client.embed(texts.slice(i, i + 2048), this.model)));
    return vectors;
  }

  async embedQuery(text: string): Promise<number[]> {
    return (await this.client.embed([text], this.model))[0];
  }
}

export class VssVectorStore extends VectorStore {
  declare FilterType: Filter;
  readonly client: VssClient;
  readonly keyspace: string;
  readonly table: string;
  readonly modelName: string | undefined;
  /** True when the server embeds texts (no Embeddings given). */
  readonly serverEmbeds: boolean;

  constructor(embeddings: EmbeddingsInterface | null, args: VssVectorStoreArgs) {
    super(embeddings ?? new VssServerEmbeddings(args.client, args.model_name), args);
    this.client = args.client;
    this.keyspace = args.keyspace ?? 'default_keyspace';
    this.table = args.table ?? 'vector';
    this.modelName = args.model_name;
    this.serverEmbeds = embeddings === null;
  }

  _vectorstoreType(): string {
    return 'vss';
  }

  /** Stores documents under `options.ids`, else their own `id`, else new UUIDs; answers the keys. */
  async addDocuments(documents: DocumentInterface[], options?: { ids?: string[] }): Promise<string[]> {
    if (this.serverEmbeds) return this.write(documents, undefined, options?.ids);
    return this.addVectors(await this.embeddings.embedDocuments(documents.map((d) => d.pageContent)), documents, options);
  }

  async addVectors(vectors: number[][], documents: DocumentInterface[], options?: { ids?: string[] }): Promise<string[]> {
    return this.write(documents, vectors, options?.ids);
  }

  private async write(documents: DocumentInterface[], vectors: number[][] | undefined, ids: string[] | undefined): Promise<string[]> {
    if (ids && ids.length !== documents.length) throw new RangeError(`${ids.length} ids for ${documents.length} documents`);
    const keys = documents.map((d, i) => ids?.[i] ?? d.id ?? crypto.randomUUID());
    const records: UpsertRecord[] = documents.map((d, i) => ({
      key: keys[i],
      text: d.pageContent,
      metadata: d.metadata,
      ...(vectors ? { vector: vectors[i] } : {}),
    }));
    const model = this.modelName === undefined ? {} : { model_name: this.modelName };
    await this.client.upsert({ keyspace: this.keyspace, table: this.table, vectors: records, ...model });
    return keys;
  }

  /** Deletes by `ids`, or every row matching `filter`. */
  override async delete(params: { ids?: string[]; filter?: Filter }): Promise<void> {
    const where = { keyspace: this.keyspace, table: this.table };
    if (params.ids) await this.client.delete({ ...where, keys: params.ids });
    else if (params.filter) await this.client.delete({ ...where, filter: params.filter });
    else throw new TypeError('delete needs ids or filter');
  }

  async similaritySearchVectorWithScore(query: number[], k: number, filter?: Filter): Promise<[DocumentInterface, number][]> {
    return toScored(await this.search({ vector: query }, k, filter));
  }

  override async similaritySearchWithScore(query: string, k = 4, filter?: Filter): Promise<[DocumentInterface, number][]> {
    return toScored(await this.search(await this.queryFields(query), k, filter));
  }

  override async similaritySearch(query: string, k = 4, filter?: Filter): Promise<DocumentInterface[]> {
    return (await this.similaritySearchWithScore(query, k, filter)).map(([doc]) => doc);
  }

  /**
   * The server's MMR (`mmr: {diversity, candidates}`): LangChain's `lambda` weighs relevance
   * (1 = relevance only), the server's `diversity` the other side, so diversity = 1 - lambda.
   */
  override async maxMarginalRelevanceSearch(query: string, options: MaxMarginalRelevanceSearchOptions<Filter>, _callbacks?: Callbacks): Promise<DocumentInterface[]> {
    const k = options.k ?? 4;
    const mmr = { diversity: 1 - (options.lambda ?? 0.5), candidates: Math.max(k, options.fetchK ?? 20) };
    return toScored(await this.search({ ...(await this.queryFields(query)), mmr }, k, options.filter)).map(([doc]) => doc);
  }

  static override async fromTexts(texts: string[], metadatas: object[] | object, embeddings: EmbeddingsInterface | null, args: VssVectorStoreArgs): Promise<VssVectorStore> {
    const docs = texts.map((text, i) => new Document({ pageContent: text, metadata: Array.isArray(metadatas) ? metadatas[i] : metadatas }));
    return VssVectorStore.fromDocuments(docs, embeddings, args);
  }

  static override async fromDocuments(docs: DocumentInterface[], embeddings: EmbeddingsInterface | null, args: VssVectorStoreArgs & { ids?: string[] }): Promise<VssVectorStore> {
    const store = new VssVectorStore(embeddings, args);
    await store.addDocuments(docs, { ids: args.ids });
    return store;
  }

  /** The text itself when the server embeds, else this side's query vector. */
  private async queryFields(query: string): Promise<Pick<SearchRequest, 'query' | 'vector'>> {
    return this.serverEmbeds ? { query } : { vector: await this.embeddings.embedQuery(query) };
  }

  private search(fields: Partial<SearchRequest>, k: number, filter: Filter | undefined): Promise<SearchAnswer> {
    const model = this.serverEmbeds && this.modelName !== undefined ? { model_name: this.modelName } : {};
    return this.client.search({ keyspace: this.keyspace, table: this.table, final_top_k: k, ...model, ...fields, ...(filter ? { filter } : {}) });
  }
}

/** A match as a Document (the row's text as pageContent, the key as id) and its score (higher is closer). */
function toScored(answer: SearchAnswer): [DocumentInterface, number][] {
  return answer.matches.map((m) => {
    const { text, ...metadata } = m.metadata;
    return [new Document({ id: m.key, pageContent: typeof text === 'string' ? text : '', metadata }), m.score];
  });
}
