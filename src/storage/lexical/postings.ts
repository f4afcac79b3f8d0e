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
 * A term's postings, documents ascending, each packed with its term frequency as doc * 128 + tf
 * (tf >= 127 kept in `big`): those frozen into the index's arena (`f`, a view of one shared
 * Int32Array: 4 bytes a posting), then those added since (`e`, a plain array: 8 bytes a posting,
 * but typed arrays per term, tens of thousands of small buffers, made every garbage collection
 * slower as the index grew).
 */
interface Postings {
  f: Int32Array;
  /**
   * Every BLOCK-th frozen posting, from `skipsAt` in `skips`, one array for all terms frozen at
   * once (set with `f` where it has more than BLOCK): a seek finds its block there, a few cache
   * lines, before it reads `f` itself.
   */
  skips?: Int32Array;
  skipsAt: number;
  e: number[];
  big?: Map<number, number>;
  /** Live documents holding the term, and `dead` (the index's) when it was counted. */
  df: number;
  dfAt: number;
  /**
   * Per term frequency seen (index; TF_MAX for any above), the shortest document with it: what the
   * term can add to a row is at most the best of these under any statistics (see topK). Rows gone
   * since still count, so it only ever overstates.
   */
  shortest: number[];
}

/** A row of a search's answer: its row id, its exact BM25 and the key given with its tokens. */
export type TopKRow = { rowId: number; score: number; key: string | undefined };

const TF_MAX = 127;
/**
 * The relative margin on the pruning bounds of a query of `terms` lists: its sums are kept in
 * float32 (half the memory a long list's rows stream through), each share and each addition within
 * 2^-24 of exact, and rows near a bound are kept and scored again exactly.
 */
const marginFor = (terms: number): number => 2 ** -22 * (terms + 1);
/** The byte length code of a document of LONG - 1 tokens or more (see #short). */
const LONG = 255;
/** A live document's length in tokens, from its byte code where it fits. */
const lengthOf = (s: Scratch, d: number): number => (s.short[d] === LONG ? s.length[d] : s.short[d] - 1);
/** Documents an index can number (dead ones too): doc * 128 + tf stays a small integer (31 bits), read with shifts. */
export const MAX_DOCUMENTS = 2 ** 24;
const EMPTY = new Int32Array(0);
/** Frozen postings per entry of a term's skips. */
const BLOCK = 64;
/** Posting `j` of the term: the frozen ones first. */
const at = (p: Postings, j: number): number => (j < p.f.length ? p.f[j] : p.e[j - p.f.length]);
const count = (p: Postings): number => p.f.length + p.e.length;
/**
 * Scratch arrays an index keeps between searches: as many as searches may wait their turns at once,
 * and one (lexical-postings.worker.ts). Made afresh for each, zeroed 8 MB at 1,000,000 rows, they
 * cost hybrid searches at c16 0.8 ms more CPU each when kept 2.
 */
const SPARE_SCRATCH = 9;
/**
 * What looking a row up in a long list costs, in postings read in order (a gallop through its
 * skips and a block): an estimate, for the work topKSteps yields.
 */
const SEEK_WORK = 16;
/** Postings a step of topKSteps reads at most (rows looked up count SEEK_WORK each): ~1 ms of a long list's reading. */
const STEP_READS = 1 << 17;
/** Freeze again once the postings added since the last freeze are this share of the frozen ones. */
const REFREEZE_SHARE = 1 / 8;

export class PostingIndex {
  readonly #terms = new Map<string, Postings>();
  /** Per document: its row id, its length in tokens (-1: dead), and its row's key (when given). */
  #rowOf = new Float64Array(1024);
  #length = new Int32Array(1024);
  /**
   * The same lengths in a byte each, as a search reads them: 0 dead, else the length + 1, or
   * LONG when it is LONG - 1 or more (then #length tells). A long list's search streams through a
   * quarter of the bytes.
   */
  #short = new Uint8Array(1024);
  #keyOf: (string | undefined)[] = [];
  #docs = 0;
  #dead = 0;
  /** Postings in the arena, and added to the terms' plain arrays since. */
  #frozen = 0;
  #added = 0;
  /** Documents that died since the last freeze began (their postings may still be in the lists). */
  #deadUnfrozen = 0;
  /** The freeze under way (see freezeStep). */
  #freezing: { arena: Int32Array; skips: Int32Array; s: number; terms: { term: string; p: Postings; size: number }[]; next: number; n: number; read: number; dead: boolean } | null = null;
  readonly #docOf = new Map<number, number>();
  /**
   * Scratch for searches: each document's score so far (0: not reached), and the documents
   * reached. A search takes one for its steps and gives it back clean, so searches whose steps
   * interleave (topKSteps) each have their own. Sums kept only for the rows reached, in document
   * order, each list merged into them, were slower: 1.2x warm, 1.1x cold at 100k rows
   * (bench/hybrid-postings.bench.ts [--cold 32]).
   */
  #spare: { acc: Float32Array; reached: Int32Array }[] = [];
  /** Counts the changes to the lists (set, freezeStep): a search checks it between its steps. */
  #version = 0;

  /** Live documents (rows with text). */
  get size(): number {
    return this.#docOf.size;
  }

  /** The share of documents that are dead (rewritten or deleted rows). */
  get deadShare(): number {
    return this.#docs === 0 ? 0 : this.#dead / this.#docs;
  }

  /**
   * Sets a row's tokens (null: the row has no text, or is gone; a text of no tokens still counts as
   * a row, as in FTS5), and its key: kept so that a search's answer needs no read of the rows.
   */
  set(rowId: number, tokens: readonly string[] | null, key?: string): void {
    this.#version++;
    const old = this.#docOf.get(rowId);
    if (old !== undefined) {
      this.#length[old] = -1;
      this.#short[old] = 0;
      this.#keyOf[old] = undefined;
      this.#dead++;
      this.#deadUnfrozen++;
      this.#docOf.delete(rowId);
    }
    if (tokens === null) return;
    if (this.#docs === MAX_DOCUMENTS) throw new RangeError(`a posting index holds at most ${MAX_DOCUMENTS} documents`);
    const doc = this.#docs++;
    if (doc === this.#length.length) {
      this.#length = grow(this.#length, Int32Array);
      this.#rowOf = grow(this.#rowOf, Float64Array);
      this.#short = grow(this.#short, Uint8Array);
    }
    this.#rowOf[doc] = rowId;
    this.#length[doc] = tokens.length;
    this.#short[doc] = Math.min(tokens.length + 1, LONG);
    this.#keyOf[doc] = key;
    this.#docOf.set(rowId, doc);
    // A term's postings end with this document once it has been seen in it: count there.
    for (const term of tokens) {
      let p = this.#terms.get(term);
      if (p === undefined) this.#terms.set(term, (p = { f: EMPTY, e: [], df: 0, dfAt: 0, shortest: [], skipsAt: 0 }));
      // The document is new: its postings so far are all in `e`.
      const last = p.e.length - 1;
      if (last >= 0 && p.e[last] >> 7 === doc) {
        const tf = tfAt(p, p.f.length + last) + 1;
        if (tf >= TF_MAX) (p.big ??= new Map()).set(doc, tf);
        p.e[last] = doc * 128 + Math.min(tf, TF_MAX);
        noteShortest(p, tf, tokens.length);
        continue;
      }
      p.e.push(doc * 128 + 1);
      noteShortest(p, 1, tokens.length);
      this.#added++;
      if (p.dfAt === this.#dead) p.df++;
    }
  }

  /** Whether enough postings were added since the last freeze began for another to pay (see freezeStep). */
  get freezeDue(): boolean {
    return this.#freezing === null && this.#added > 0 && this.#added >= this.#frozen * REFREEZE_SHARE;
  }

  /**
   * Moves every term's postings into one new Int32Array (half the memory of plain arrays, read as
   * one run), dead documents' left out: done whenever freezeDue (the postings thread checks after
   * each slice of a build and each write it reads). It goes a term at a time, at most about
   * `budget` postings per call, so that the caller answers searches between calls: answers whether
   * it is done (a term's postings change in one step, so a search reads each term whole, from the
   * old arrays or the new). Rows set meanwhile are kept (the postings a term gets after the freeze
   * began stay in its plain array).
   */
  freezeStep(budget = Infinity): boolean {
    this.#version++;
    let f = this.#freezing;
    if (f === null) {
      const terms = [...this.#terms].map(([term, p]) => ({ term, p, size: count(p) }));
      const size = terms.reduce((sum, t) => sum + t.size, 0);
      // The skips in one array too, as views (a typed array of its own per term slowed every collection).
      const skips = new Int32Array(terms.reduce((sum, t) => sum + (t.size > BLOCK ? Math.ceil(t.size / BLOCK) : 0), 0));
      f = this.#freezing = { arena: new Int32Array(size), skips, s: 0, terms, next: 0, n: 0, read: 0, dead: this.#deadUnfrozen > 0 };
      this.#deadUnfrozen = 0;
      this.#added = 0;
    }
    const { arena, terms } = f;
    const length = this.#length;
    const stop = f.read + budget;
    for (; f.next < terms.length && f.read < stop; f.next++) {
      const { term, p, size } = terms[f.next];
      f.read += size;
      const from = f.n;
      const fromE = size - p.f.length; // the added postings counted when the freeze began
      if (!f.dead) {
        arena.set(p.f, f.n);
        f.n += p.f.length;
        for (let j = 0; j < fromE; j++) arena[f.n++] = p.e[j];
      } else {
        for (let j = 0; j < p.f.length; j++) if (length[p.f[j] >> 7] >= 0) arena[f.n++] = p.f[j];
        for (let j = 0; j < fromE; j++) if (length[p.e[j] >> 7] >= 0) arena[f.n++] = p.e[j];
        if (p.big !== undefined) for (const d of p.big.keys()) if (length[d] < 0) p.big.delete(d);
      }
      if (f.n === from && p.e.length === fromE) {
        this.#terms.delete(term);
        continue;
      }
      p.f = arena.subarray(from, f.n);
      p.skips = undefined;
      if (p.f.length > BLOCK) {
        p.skips = f.skips;
        p.skipsAt = f.s;
        for (let b = 0; b < p.f.length; b += BLOCK) f.skips[f.s++] = p.f[b];
      }
      p.e = p.e.slice(fromE);
    }
    if (f.next < terms.length) return false;
    this.#frozen = f.n;
    this.#freezing = null;
    return true;
  }

  /** All of freezeStep at once. */
  freeze(): void {
    this.freezeStep();
  }

  /** How many live rows hold the term (recounted only after rows died). */
  documentFrequency(term: string): number {
    const p = this.#terms.get(term);
    if (p === undefined) return 0;
    if (p.dfAt !== this.#dead) {
      let df = 0;
      for (let i = 0; i < count(p); i++) if (this.#length[at(p, i) >> 7] >= 0) df++;
      p.df = df;
      p.dfAt = this.#dead;
    }
    return p.df;
  }

  /**
   * Every live row holding one of the terms `seeds`, with its BM25 over the terms `terms` (indexes
   * into `idfs`, summed in that order, each term's share computed as FTS5 computes it), or rather
   * those of the best `limit` and every row within `slack` of the k-th: `score` is exact, the
   * caller breaks ties (by `key`, the one given with the row's tokens). Rows holding only other
   * terms are not matches (prune.ts's seeding rule).
   *
   * The seeds' postings are summed term at a time, rarest first, as MaxScore does it (Lucene's
   * MaxScoreBulkScorer): once the k-th sum so far beats what the terms left could give a row not yet
   * reached, those terms only add to the rows reached, looked up in document order (Cursor), instead
   * of their whole lists being read; and after each of them, the rows reached that can no longer
   * reach the k-th are dropped, so the lookups get fewer (the k-th taken in the lookups' pass). What
   * a term can give is its best share over the shortest document of each frequency it has
   * (`shortest`), about half of the bound idf (k1 + 1) on short texts. The sums are approximate
   * (float32, another order), so the rows near the k-th are scored again exactly.
   */
  topK(terms: readonly string[], idfs: readonly number[], seeds: readonly number[], stats: Bm25Stats, limit: number, slack: number): TopKRow[] {
    const q = this.#begin(terms, idfs, seeds, stats, limit, slack);
    try {
      for (let i = 0; i < q.lists.length; i++) {
        this.#startList(q, i);
        this.#readList(q, Infinity);
        this.#endList(q);
      }
      // Every row that could, with the other terms' shares (at most `slack`), reach the k-th.
      if (q.n >= limit && Number.isNaN(q.kth)) q.kth = q.top.kth(q.s.reached, q.n, q.s.acc);
      return this.#scored(q, this.#found(q, q.n));
    } finally {
      this.#end(q);
    }
  }

  /**
   * topK in steps of at most about `stepReads` postings (or rows) read, so that a caller can answer
   * other searches between the steps of a long one (lexical-postings.worker.ts): the same answer.
   * Each step yields the postings and rows read so far (what the caller budgets a turn by).
   * The lists must not change between steps (set, freezeStep): a step after a change throws. Each
   * search has scratch of its own, given back when it ends (or is ended early with `return()`).
   * The steps' work is in plain methods: in the generator's own body it took 1.04× the time.
   */
  *topKSteps(terms: readonly string[], idfs: readonly number[], seeds: readonly number[], stats: Bm25Stats, limit: number, slack: number, stepReads = STEP_READS): Generator<number, TopKRow[], void> {
    const q = this.#begin(terms, idfs, seeds, stats, limit, slack);
    try {
      for (let i = 0; i < q.lists.length; i++) {
        this.#startList(q, i);
        while (!this.#readList(q, stepReads)) yield* this.#pause(q);
        this.#endList(q);
        yield* this.#pause(q);
      }
      const { n, top, s } = q;
      if (n >= limit && Number.isNaN(q.kth)) {
        top.clear();
        for (let r = 0; r < n; r += stepReads) {
          top.offerAll(s.reached, r, Math.min(n, r + stepReads), s.acc);
          q.work += Math.min(n, r + stepReads) - r;
          yield* this.#pause(q);
        }
        q.kth = top.least;
      }
      const found: number[] = [];
      while (q.cleared < n) {
        const from = q.cleared;
        this.#found(q, Math.min(n, from + stepReads), found);
        q.work += q.cleared - from;
        if (q.cleared < n) yield* this.#pause(q);
      }
      return this.#scored(q, found);
    } finally {
      this.#end(q);
    }
  }

  /** Between two steps: the one after throws if the lists changed meanwhile. */
  *#pause(q: TopKSearch): Generator<number, void, void> {
    yield q.work;
    if (this.#version !== q.version) throw new Error('the posting lists changed during a search');
  }

  /** A search's lists, rarest first, its bounds and its scratch (see topK). */
  #begin(terms: readonly string[], idfs: readonly number[], seeds: readonly number[], stats: Bm25Stats, limit: number, slack: number): TopKSearch {
    let scratch = this.#spare.pop();
    if (scratch === undefined || scratch.acc.length < this.#docs) scratch = { acc: new Float32Array(this.#length.length), reached: new Int32Array(this.#length.length) };
    // A term given more than once (words that stem alike) is read once, its weight counted as often:
    // each copy adds the same share to a row.
    const lists: { p: Postings; idf: number }[] = [];
    for (const i of seeds) {
      const p = this.#terms.get(terms[i]);
      if (p === undefined) continue;
      const l = lists.find((x) => x.p === p);
      if (l === undefined) lists.push({ p, idf: idfs[i] });
      else l.idf += idfs[i];
    }
    lists.sort((x, y) => count(x.p) - count(y.p));
    const c1 = BM25_K1 * (1 - BM25_B);
    const c2 = (BM25_K1 * BM25_B * stats.rows) / stats.tokens;
    // What the lists not yet read can add to a row.
    const most = lists.map(({ p, idf }) => idf * (BM25_K1 + 1) * bestShare(p, c1, c2));
    return {
      terms,
      idfs,
      stats,
      limit,
      slack,
      lists,
      most,
      left: most.reduce((sum, m) => sum + m, 0),
      margin: marginFor(lists.length),
      open: true,
      sorted: true,
      kth: NaN,
      n: 0,
      cleared: 0,
      top: new TopScores(limit),
      // Integer arithmetic on the packed postings (doc << 7 | tf: small integers), every scratch a
      // typed array: a query of common words only reads most of the table's postings.
      s: { acc: scratch.acc, reached: scratch.reached, short: this.#short, length: this.#length, c1, c2 },
      version: this.#version,
      list: lists[0]?.p,
      w: 0,
      how: 'all',
      read: 0,
      before: 0,
      cursor: null,
      work: 0,
    };
  }

  /**
   * Begins the search's `i`-th list (see topK): while a row not reached yet can still reach the
   * k-th, every posting is added; after, only to the rows reached: each looked up in the list when
   * they are few against it, else the list read through.
   */
  #startList(q: TopKSearch, i: number): void {
    const { p, idf } = q.lists[i];
    const postings = count(p);
    q.list = p;
    q.w = idf * (BM25_K1 + 1);
    q.left -= q.most[i];
    q.kth = NaN;
    q.read = 0;
    q.before = q.n;
    q.how = q.open ? 'all' : q.n * Math.log2(postings + 1) < postings ? 'sought' : 'reached';
    if (q.how === 'sought') {
      if (!q.sorted) q.s.reached.subarray(0, q.n).sort(), (q.sorted = true);
      q.cursor = new Cursor(p);
      q.top.clear();
    }
  }

  /** Reads on in the list begun, at most `budget` postings (or rows looked up); answers whether it is read through. */
  #readList(q: TopKSearch, budget: number): boolean {
    const { s, w } = q;
    const p = q.list!;
    if (q.how === 'sought') {
      const { acc, reached, c1, c2 } = s;
      const cursor = q.cursor!;
      const top = q.top;
      const end = Math.min(q.n, q.read + Math.ceil(budget / SEEK_WORK));
      for (let r = q.read; r < end; r++) {
        const d = reached[r];
        const j = cursor.seek(d);
        if (j >= 0) {
          const tf = tfAt(p, j);
          acc[d] += (w * tf) / (tf + c1 + c2 * lengthOf(s, d));
        }
        top.offer(acc[d]);
      }
      q.work += (end - q.read) * SEEK_WORK;
      q.read = end;
      return end === q.n;
    }
    // The frozen postings, then those added since, as one run.
    const f = p.f.length;
    const total = f + p.e.length;
    const from = q.read;
    const to = Math.min(total, from + budget);
    if (q.how === 'all') {
      if (from < f) q.n = addAll(p.f, from, Math.min(to, f), p.big, w, s, q.n);
      if (to > f) q.n = addAll(p.e, Math.max(0, from - f), to - f, p.big, w, s, q.n);
    } else {
      if (from < f) addReached(p.f, from, Math.min(to, f), p.big, w, s);
      if (to > f) addReached(p.e, Math.max(0, from - f), to - f, p.big, w, s);
    }
    q.work += to - from;
    q.read = to;
    return to === total;
  }

  /** Ends the list read: whether a row not reached can still reach the k-th, and the rows that can no longer dropped. */
  #endList(q: TopKSearch): void {
    const { s, top, margin, slack, limit } = q;
    if (q.how === 'all') {
      if (q.before > 0 && q.n > q.before) q.sorted = false;
      // Closed when no row outside `reached` can reach the k-th with what the terms left give.
      if (q.left > 0 && q.n >= limit) q.open = (q.kth = top.kth(s.reached, q.n, s.acc)) * (1 - margin) <= (q.left + slack) * (1 + margin);
    } else if (q.how === 'sought' && q.n >= limit) q.kth = top.least;
    q.cursor = null;
    // Closed: the rows that cannot reach the k-th with what the terms left give are dropped (their
    // sums back to 0); the k-th stays what it was, every row dropped being below it.
    if (!q.open && q.left > 0 && q.n >= limit) {
      if (Number.isNaN(q.kth)) q.kth = top.kth(s.reached, q.n, s.acc);
      q.n = dropHopeless(q.kth * (1 - margin) - (q.left + slack) * (1 + margin), s, q.n);
    }
  }

  /**
   * The rows reached up to the `to`-th, from the first not taken yet, that could reach the k-th
   * with the other terms' shares (at most `slack`): every one while fewer than `limit` were
   * reached. Their sums go back to 0. Answers `found`, with them added.
   */
  #found(q: TopKSearch, to: number, found: number[] = []): number[] {
    const floor = q.n < q.limit ? 0 : q.kth * (1 - q.margin) - q.slack;
    const { acc, reached } = q.s;
    for (let r = q.cleared; r < to; r++) {
      const d = reached[r];
      if (floor <= 0 || acc[d] >= floor) found.push(d);
      acc[d] = 0;
    }
    q.cleared = to;
    return found;
  }

  /** The rows found, each with its exact score and key. */
  #scored(q: TopKSearch, found: number[]): TopKRow[] {
    const scores = this.#exact(found, q.terms, q.idfs, q.stats);
    return found.map((d, i) => ({ rowId: this.#rowOf[d], score: scores[i], key: this.#keyOf[d] }));
  }

  /** Gives the search's scratch back clean, whether it ended, failed or was ended early. */
  #end(q: TopKSearch): void {
    const { acc, reached } = q.s;
    for (let r = q.cleared; r < q.n; r++) acc[reached[r]] = 0;
    // A few are kept for the next searches: 8 bytes a document each (8 MB at 1,000,000 rows).
    if (this.#spare.length < SPARE_SCRATCH) this.#spare.push({ acc, reached });
  }

  /**
   * Documents' BM25 over the terms in query order, as bm25.ts's scoreTokens sums it: each term's
   * postings read forward once for the documents in order, the shares then summed row by row.
   */
  #exact(docs: readonly number[], terms: readonly string[], idfs: readonly number[], stats: Bm25Stats): Float64Array {
    const order = Int32Array.from(docs.keys()).sort((a, b) => docs[a] - docs[b]);
    const tfs = new Int32Array(docs.length * terms.length);
    for (let i = 0; i < terms.length; i++) {
      // A term given again: its frequencies are the first copy's.
      const same = terms.indexOf(terms[i]);
      if (same < i) {
        for (let k = 0; k < docs.length; k++) tfs[k * terms.length + i] = tfs[k * terms.length + same];
        continue;
      }
      const p = this.#terms.get(terms[i]);
      if (p === undefined) continue;
      const cursor = new Cursor(p);
      for (const k of order) {
        const j = cursor.seek(docs[k]);
        if (j >= 0) tfs[k * terms.length + i] = tfAt(p, j);
      }
    }
    const scores = new Float64Array(docs.length);
    for (let k = 0; k < docs.length; k++) {
      let score = 0;
      for (let i = 0; i < terms.length; i++) {
        const tf = tfs[k * terms.length + i];
        if (tf > 0) score += termScore(idfs[i], tf, this.#length[docs[k]], stats);
      }
      scores[k] = score;
    }
    return scores;
  }
}

/** The term frequency of posting `j`. */
function tfAt(p: Postings, j: number): number {
  const v = at(p, j);
  const tf = v & 127;
  return tf === TF_MAX ? p.big!.get(v >> 7)! : tf;
}

/** Notes that the term occurs `tf` times in a document of `length` tokens. */
function noteShortest(p: Postings, tf: number, length: number): void {
  const i = Math.min(tf, TF_MAX);
  const l = p.shortest;
  if (!(l[i] <= length)) l[i] = length;
}

/** The most a term's postings can have of its weight: tf / (tf + c1 + c2 length) at best (1 past TF_MAX). */
function bestShare(p: Postings, c1: number, c2: number): number {
  const l = p.shortest;
  if (l.length > TF_MAX) return 1;
  let best = 0;
  for (let tf = 1; tf < l.length; tf++) if (l[tf] !== undefined) best = Math.max(best, tf / (tf + c1 + c2 * l[tf]));
  return best;
}

/** Keeps the first `n` reached documents whose sum is at least `floor`, the others' set back to 0; answers how many are kept. */
function dropHopeless(floor: number, s: Scratch, n: number): number {
  const { acc, reached } = s;
  let kept = 0;
  for (let r = 0; r < n; r++) {
    const d = reached[r];
    if (acc[d] >= floor) reached[kept++] = d;
    else acc[d] = 0;
  }
  return kept;
}

type TypedArray = Int32Array | Float64Array | Uint8Array;
function grow<T extends TypedArray>(a: T, make: new (n: number) => T): T {
  const b = new make(a.length * 2);
  b.set(a as never);
  return b;
}

/** A search under way (PostingIndex.topK): its query, its lists and what reading them found so far. */
interface TopKSearch {
  terms: readonly string[];
  idfs: readonly number[];
  stats: Bm25Stats;
  limit: number;
  slack: number;
  lists: { p: Postings; idf: number }[];
  /** What each list can add to a row, and what the lists not yet read can. */
  most: number[];
  left: number;
  margin: number;
  /** Whether a row not reached yet can still reach the k-th. */
  open: boolean;
  /** Whether `reached` is in document order (the first list read alone is). */
  sorted: boolean;
  /** The k-th sum when known since the sums last changed (NaN: not known). */
  kth: number;
  /** Documents reached, and how many of them have their sums back to 0. */
  n: number;
  cleared: number;
  top: TopScores;
  s: Scratch;
  /** The index's version when the search began. */
  version: number;
  /** The list being read, its weight, how (see startList), how far, and the rows reached before it. */
  list: Postings | undefined;
  w: number;
  how: 'all' | 'sought' | 'reached';
  read: number;
  before: number;
  cursor: Cursor | null;
  /** Postings and rows read so far, by every step. */
  work: number;
}

/** A query's scratch arrays and BM25's length terms (tf / (tf + c1 + c2 length)). */
interface Scratch {
  acc: Float32Array;
  reached: Int32Array;
  short: Uint8Array;
  length: Int32Array;
  c1: number;
  c2: number;
}

/** Adds postings `from` to `to`'s shares to their live documents' sums, noting the documents reached first here; answers the new count reached. */
function addAll(e: ArrayLike<number>, from: number, to: number, big: Map<number, number> | undefined, w: number, s: Scratch, n: number): number {
  const { acc, reached, short, length, c1, c2 } = s;
  for (let j = from; j < to; j++) {
    const v = e[j];
    const d = v >> 7;
    const code = short[d];
    if (code === 0) continue;
    const len = code === LONG ? length[d] : code - 1;
    if (acc[d] === 0) reached[n++] = d;
    let tf = v & 127;
    if (tf === TF_MAX) tf = big!.get(d)!;
    acc[d] += (w * tf) / (tf + c1 + c2 * len);
  }
  return n;
}

/** Adds postings `from` to `to`'s shares to the documents already reached only. */
function addReached(e: ArrayLike<number>, from: number, to: number, big: Map<number, number> | undefined, w: number, s: Scratch): void {
  const { acc, c1, c2 } = s;
  for (let j = from; j < to; j++) {
    const v = e[j];
    const d = v >> 7;
    if (acc[d] === 0) continue;
    let tf = v & 127;
    if (tf === TF_MAX) tf = big!.get(d)!;
    acc[d] += (w * tf) / (tf + c1 + c2 * lengthOf(s, d));
  }
}

/**
 * Finds documents in a term's postings (frozen then added, ascending) for documents asked in
 * ascending order: each seek gallops forward from where the last one ended, as Lucene's advance
 * does, so a sorted batch of documents costs a few steps each, near the last, instead of a binary
 * search over the whole list.
 */
class Cursor {
  readonly #p: Postings;
  readonly #count: number;
  #j = 0;
  constructor(p: Postings) {
    this.#p = p;
    this.#count = count(p);
  }

  /** The index of document `d`'s posting, -1 if absent; `d` is not below the last document sought. */
  seek(d: number): number {
    const p = this.#p;
    const f = p.f;
    // The first posting of a document >= d is the first packed value >= d * 128.
    const key = d * 128;
    let j = this.#j;
    if (j < f.length) {
      if (f[f.length - 1] < key) j = f.length;
      else if (f[j] < key) j = p.skips === undefined ? gallop(f, j, f.length, key) : frozenSeek(f, p.skips, p.skipsAt, j, key);
    }
    if (j >= f.length) {
      const e = p.e;
      let i = j - f.length;
      if (i < e.length && e[i] < key) i = gallop(e, i, e.length, key);
      j = f.length + i;
    }
    this.#j = j;
    return j < this.#count && at(p, j) >> 7 === d ? j : -1;
  }
}

/**
 * The first index from `from` whose value is >= key in ascending `a` (a[from] < key): the step
 * doubles until it passes key or `end`, then the last step is bisected.
 */
function gallop(a: ArrayLike<number>, from: number, end: number, key: number): number {
  let lo = from;
  let step = 1;
  let hi = lo + 1;
  while (hi < end && a[hi] < key) {
    lo = hi;
    step *= 2;
    hi = lo + step;
  }
  if (hi > end) hi = end;
  lo++;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (a[mid] < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * The first index from `from` whose value is >= key in frozen postings `f` (f[from] < key <= its
 * last), its block found first in the term's skips (`skips` from `at`).
 */
function frozenSeek(f: Int32Array, skips: Int32Array, at: number, from: number, key: number): number {
  // The first block starting at key or beyond; the posting sought is in the block before it, or starts it.
  const blocks = Math.ceil(f.length / BLOCK);
  const b = Math.floor(from / BLOCK) + 1;
  const next = b < blocks && skips[at + b] < key ? gallop(skips, at + b, at + blocks, key) - at : b;
  const lo = Math.max(from, (next - 1) * BLOCK);
  return gallop(f, lo, Math.min(f.length, next * BLOCK + 1), key);
}

/** The `limit` highest scores among some (a min-heap of typed numbers, allocated once per query). */
class TopScores {
  readonly #heap: Float64Array;
  /** Scores offered since clear, up to `limit` (the heap's size). */
  #size = 0;
  constructor(readonly limit: number) {
    this.#heap = new Float64Array(limit);
  }

  /** The `limit`-th highest `acc` of the first `n` documents of `docs` (there are at least `limit`). */
  kth(docs: Int32Array, n: number, acc: Float32Array): number {
    const h = this.#heap;
    const k = this.limit;
    for (let i = 0; i < k; i++) h[i] = acc[docs[i]];
    for (let i = (k >> 1) - 1; i >= 0; i--) siftDown(h, k, i);
    for (let i = k; i < n; i++) {
      const x = acc[docs[i]];
      if (x > h[0]) (h[0] = x), siftDown(h, k, 0);
    }
    return h[0];
  }

  /** Starts a new set of offers (offer, least). */
  clear(): void {
    this.#size = 0;
  }

  /** Offers the `acc` of `docs` from `from` to `to`. */
  offerAll(docs: Int32Array, from: number, to: number, acc: Float32Array): void {
    for (let i = from; i < to; i++) this.offer(acc[docs[i]]);
  }

  /** Offers one score. */
  offer(x: number): void {
    const h = this.#heap;
    if (this.#size < this.limit) {
      let i = this.#size++;
      while (i > 0 && h[(i - 1) >> 1] > x) {
        h[i] = h[(i - 1) >> 1];
        i = (i - 1) >> 1;
      }
      h[i] = x;
    } else if (x > h[0]) {
      h[0] = x;
      siftDown(h, this.limit, 0);
    }
  }

  /** The `limit`-th highest score offered since clear (there were at least `limit`). */
  get least(): number {
    return this.#heap[0];
  }
}

function siftDown(h: Float64Array, n: number, i: number): void {
  const x = h[i];
  for (;;) {
    let m = 2 * i + 1;
    if (m >= n) break;
    if (m + 1 < n && h[m + 1] < h[m]) m++;
    if (h[m] >= x) break;
    h[i] = h[m];
    i = m;
  }
  h[i] = x;
}
