/**
 * An in-memory inverted index of one table's rows: for each term, the documents holding it and how
 * often (a posting list, as Lucene, Tantivy and Qdrant's sparse index keep one), and each
 * document's length in tokens. It is derived data: built from the rows' texts and kept current by
 * the caller, so that BM25's top k is computed from typed arrays instead of asking SQLite FTS5 to
 * rank every row holding a query word.
 *
 * A rewritten row gets a new document (the old one is marked dead), so posting lists only grow at
 * their end and stay sorted by document; dead documents are skipped, and the caller rebuilds the
 * index when they pile up (deadShare).
 */
import { BM25_B, BM25_K1, termScore, type Bm25Stats } from './bm25.ts';

/**
 * A term's postings, documents ascending, each packed with its term frequency as doc * 128 + tf in
 * one array of small integers (tf >= 127 kept in `big`). Plain arrays: typed arrays per term (tens
 * of thousands of small buffers) made every garbage collection slower as the index grew.
 */
interface Postings {
  e: number[];
  big?: Map<number, number>;
  /** Live documents holding the term, and `dead` (the index's) when it was counted. */
  df: number;
  dfAt: number;
}

const TF_MAX = 127;
const docAt = (p: Postings, j: number): number => Math.floor(p.e[j] / 128);

export class PostingIndex {
  readonly #terms = new Map<string, Postings>();
  /** Per document: its row id, and its length in tokens (-1: dead). */
  #rowOf = new Float64Array(1024);
  #length = new Int32Array(1024);
  #docs = 0;
  #dead = 0;
  readonly #docOf = new Map<number, number>();
  /** Scratch for a query: each document's score so far (0: not reached). */
  #acc = new Float64Array(0);

  /** Live documents (rows with text). */
  get size(): number {
    return this.#docOf.size;
  }

  /** The share of documents that are dead (rewritten or deleted rows). */
  get deadShare(): number {
    return this.#docs === 0 ? 0 : this.#dead / this.#docs;
  }

  /** Sets a row's tokens (null: the row has no text, or is gone; a text of no tokens still counts as a row, as in FTS5). */
  set(rowId: number, tokens: readonly string[] | null): void {
    const old = this.#docOf.get(rowId);
    if (old !== undefined) {
      this.#length[old] = -1;
      this.#dead++;
      this.#docOf.delete(rowId);
    }
    if (tokens === null) return;
    const doc = this.#docs++;
    if (doc === this.#length.length) {
      this.#length = grow(this.#length, Int32Array);
      this.#rowOf = grow(this.#rowOf, Float64Array);
    }
    this.#rowOf[doc] = rowId;
    this.#length[doc] = tokens.length;
    this.#docOf.set(rowId, doc);
    // A term's postings end with this document once it has been seen in it: count there.
    for (const term of tokens) {
      let p = this.#terms.get(term);
      if (p === undefined) this.#terms.set(term, (p = { e: [], df: 0, dfAt: 0 }));
      const last = p.e.length - 1;
      if (last >= 0 && docAt(p, last) === doc) {
        const tf = this.#tf(p, last) + 1;
        if (tf >= TF_MAX) (p.big ??= new Map()).set(doc, tf);
        p.e[last] = doc * 128 + Math.min(tf, TF_MAX);
        continue;
      }
      p.e.push(doc * 128 + 1);
      if (p.dfAt === this.#dead) p.df++;
    }
  }

  /** How many live rows hold the term (recounted only after rows died). */
  documentFrequency(term: string): number {
    const p = this.#terms.get(term);
    if (p === undefined) return 0;
    if (p.dfAt !== this.#dead) {
      let df = 0;
      for (let i = 0; i < p.e.length; i++) if (this.#length[docAt(p, i)] >= 0) df++;
      p.df = df;
      p.dfAt = this.#dead;
    }
    return p.df;
  }

  /**
   * Every live row holding one of the terms `seeds`, with its BM25 over the terms `terms` (indexes
   * into `idfs`, summed in that order, each term's share computed as FTS5 computes it), or rather
   * those of the best `limit` and every row within `slack` of the k-th: `score` is exact, the
   * caller breaks ties. Rows holding only other terms are not matches (prune.ts's seeding rule).
   *
   * The seeds' postings are summed term at a time, rarest first, as MaxScore does it (Lucene's
   * MaxScoreBulkScorer): once the k-th sum so far beats what the terms left could give a row not yet
   * reached (idf (k1 + 1) each), those terms only add to the rows reached, looked up by binary
   * search, instead of their whole lists being read. The sums are approximate (another order, the
   * arithmetic rearranged), so the rows near the k-th are scored again exactly.
   */
  topK(terms: readonly string[], idfs: readonly number[], seeds: readonly number[], stats: Bm25Stats, limit: number, slack: number): { rowId: number; score: number }[] {
    if (this.#acc.length < this.#docs) this.#acc = new Float64Array(this.#length.length);
    const acc = this.#acc;
    const length = this.#length;
    const reached: number[] = [];
    const lists = seeds
      .map((i) => ({ p: this.#terms.get(terms[i]), idf: idfs[i] }))
      .filter((x): x is { p: Postings; idf: number } => x.p !== undefined)
      .sort((x, y) => x.p.e.length - y.p.e.length);
    const c1 = BM25_K1 * (1 - BM25_B);
    const c2 = (BM25_K1 * BM25_B * stats.rows) / stats.tokens;
    // What the lists not yet read can add to a row: idf (k1 + 1) each.
    let left = lists.reduce((sum, x) => sum + x.idf * (BM25_K1 + 1), 0);
    let open = true;
    for (const { p, idf } of lists) {
      const w = idf * (BM25_K1 + 1);
      left -= w;
      if (open) {
        for (let j = 0; j < p.e.length; j++) {
          const d = docAt(p, j);
          const len = length[d];
          if (len < 0) continue;
          if (acc[d] === 0) reached.push(d);
          const tf = this.#tf(p, j);
          acc[d] += (w * tf) / (tf + c1 + c2 * len);
        }
        // Closed when no row outside `reached` can reach the k-th with what the terms left give.
        if (left > 0 && reached.length >= limit) open = kthOf(reached, acc, limit) * (1 - 1e-9) <= (left + slack) * (1 + 1e-9);
      } else if (reached.length * Math.log2(p.e.length + 1) < p.e.length) {
        for (const d of reached) {
          const j = search(p.e, d);
          if (j < 0) continue;
          const tf = this.#tf(p, j);
          acc[d] += (w * tf) / (tf + c1 + c2 * length[d]);
        }
      } else {
        for (let j = 0; j < p.e.length; j++) {
          const d = docAt(p, j);
          if (acc[d] === 0) continue;
          const tf = this.#tf(p, j);
          acc[d] += (w * tf) / (tf + c1 + c2 * length[d]);
        }
      }
    }
    let found: number[];
    try {
      // Every row that could, with the other terms' shares (at most `slack`), reach the k-th.
      const floor = reached.length < limit ? 0 : kthOf(reached, acc, limit) * (1 - 1e-9) - slack;
      found = floor > 0 ? reached.filter((d) => acc[d] >= floor) : reached.slice();
    } finally {
      for (const d of reached) acc[d] = 0;
    }
    return found.map((d) => ({ rowId: this.#rowOf[d], score: this.#exact(d, terms, idfs, stats) }));
  }

  /** A document's BM25 over the terms in query order, as bm25.ts's scoreTokens sums it. */
  #exact(d: number, terms: readonly string[], idfs: readonly number[], stats: Bm25Stats): number {
    let score = 0;
    for (let i = 0; i < terms.length; i++) {
      const p = this.#terms.get(terms[i]);
      if (p === undefined) continue;
      const j = search(p.e, d);
      if (j >= 0) score += termScore(idfs[i], this.#tf(p, j), this.#length[d], stats);
    }
    return score;
  }

  #tf(p: Postings, j: number): number {
    const tf = p.e[j] % 128;
    return tf === TF_MAX ? p.big!.get(docAt(p, j))! : tf;
  }
}

type TypedArray = Int32Array | Float64Array;
function grow<T extends TypedArray>(a: T, make: new (n: number) => T): T {
  const b = new make(a.length * 2);
  b.set(a as never);
  return b;
}

/** The index of document `d` in the postings `e` (sorted), -1 if absent. */
function search(e: readonly number[], d: number): number {
  let lo = 0;
  let hi = e.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const v = Math.floor(e[mid] / 128);
    if (v < d) lo = mid + 1;
    else if (v > d) hi = mid - 1;
    else return mid;
  }
  return -1;
}

/** The `limit`-th highest `acc` of the documents (there are at least `limit`). */
const kthOf = (docs: readonly number[], acc: Float64Array, limit: number): number => best(docs, acc, limit).reduce((m, d) => Math.min(m, acc[d]), Infinity);

/** The `limit` documents of highest `acc` (a min-heap over them), in no particular order. */
function best(docs: readonly number[], acc: Float64Array, limit: number): number[] {
  if (docs.length <= limit) return [...docs];
  const heap: number[] = [];
  const less = (a: number, b: number): boolean => acc[heap[a]] < acc[heap[b]];
  const swap = (a: number, b: number): void => void ([heap[a], heap[b]] = [heap[b], heap[a]]);
  for (const d of docs) {
    if (heap.length < limit) {
      heap.push(d);
      for (let i = heap.length - 1; i > 0 && less(i, (i - 1) >> 1); i = (i - 1) >> 1) swap(i, (i - 1) >> 1);
    } else if (acc[d] > acc[heap[0]]) {
      heap[0] = d;
      for (let i = 0; ; ) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < heap.length && less(l, m)) m = l;
        if (r < heap.length && less(r, m)) m = r;
        if (m === i) break;
        swap(i, m);
        i = m;
      }
    }
  }
  return heap;
}
