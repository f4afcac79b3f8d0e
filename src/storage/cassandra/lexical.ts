/**
 * Lexical search (BM25) over a Cassandra table, ranking as the embedded backend's FTS5 does.
 *
 * Cassandra 5.0's SAI can analyze text (`index_analyzer`) but keeps no term statistics and its
 * analyzers do not give FTS5's tokens, so the terms are made here (storage/lexical, FTS5's
 * tokenizers in JS) and kept in the system keyspace, where every service process reads the same:
 *   lexical_postings ((keyspace_name, table_name, term), tf DESC, dl ASC, key): one row per
 *     (term, row of the table) with the term's count in the row (tf) and the row's length (dl);
 *   lexical_stats and lexical_stats_expiring: counters of rows with text and of their tokens,
 *     those of expiring rows by expiry bucket, so that they leave N when they expire (lexical-stats.ts).
 *
 * Writes (vectors.ts) read the rows' current text first, then write the row, the postings of its
 * terms and the deletes of postings it no longer has in one LOGGED batch (the row's own
 * atomicity; a row whose postings exceed a batch is written new postings -> row -> stale deletes,
 * so a crash midway leaves stale postings, never a row missing from the index), then add the
 * change to the counters. Deletes remove a row's postings with the row, at the row's timestamp.
 *
 * A query is split as the embedded backend gives it to FTS5 (storage/lexical/bm25.ts: one phrase
 * per query word, of one token as a rule, of several under trigram). For each token looked up it
 * reads the best POSTINGS_PER_TERM postings of the token's partition (tf high, dl low first); a
 * token's document frequency is the number read, or, for a longer partition, its count. A
 * one-token phrase takes tf and dl from its postings; a longer one is looked for in the texts of
 * the rows holding its first, middle and last tokens. BM25 is summed over those; then the best
 * candidates' rows are read (metadata for the filter, text for the answer) and each row's score is
 * computed again from its current text, which drops postings left stale by a race or a crash. A row
 * must hold a seeding phrase (storage/lexical/prune.ts: in a large table, words in half the rows or
 * more bring no rows of their own), as on the embedded backend.
 * Exact (the same rows and scores as FTS5 on the same data) while every query token has at most
 * POSTINGS_PER_TERM rows and the counters are true; beyond that, a row whose only postings were
 * cut off is missed. Counter updates are not idempotent and cannot join
 * the batch: a write whose counter update fails, or two concurrent writes of one key, leave the row
 * count or total length off by that row for good; that moves BM25's N and average length, hence
 * scores, by a tiny fraction, and never which rows match.
 */
import { invalid } from '../../errors.ts';
import { compareCodePoints } from '../../index/filter.ts';
import type { LexicalQuery, Metadata, StoredMatch, TableInfo } from '../api.ts';
import { type Bm25Stats, type Phrase, phraseCount, queryPhrases, scoreTokens, termScore } from '../lexical/bm25.ts';
import { holdsSeed, seedPhrases, weigh } from '../lexical/prune.ts';
import { termCounts, tokenize } from '../lexical/tokenize.ts';
import { chunks, fromCqlVector, fromMetadataText, utf8Bytes } from './codec.ts';
import { requireTable } from './catalog.ts';
import { type Ctx, dataTable, sysTable } from './context.ts';
import { readStats } from './lexical-stats.ts';
import { forEachLimit, type Params } from './session.ts';
import { compile } from './vectors.ts';

/** How many postings of one term a query reads at most. */
export const POSTINGS_PER_TERM = 5000;
const TERM_CONCURRENCY = 8;
const IN_CHUNK = 100;

/** A statement of a write, with its size as a batch would count it (roughly). */
export interface Stmt {
  query: string;
  params: Params;
  bytes: number;
}

/** A row's text as the index holds it: term counts and length in tokens; null without text. */
export type Indexed = { counts: Map<string, number>; length: number } | null;

/** Rows with text '' are not indexed (nor counted), as in the embedded backend. */
export const indexed = (t: TableInfo, text: string | null | undefined): Indexed => (typeof text === 'string' && text !== '' ? termCounts(t.lexical.tokenizer, text) : null);

const postingBytes = (key: string, term: string): number => utf8Bytes(key) + utf8Bytes(term) + 64;

/**
 * The postings statements that move row `key` from `before` to `after`: inserts of all its
 * (term, tf, dl), so that they carry the row's new timestamp (a delete by filter that read the
 * row's older version must not take them), and deletes of those it no longer has. A posting in
 * both is not deleted: a delete and an insert of one posting in one batch share a timestamp, and
 * then the delete would win.
 */
export function postingChanges(ctx: Ctx, t: TableInfo, key: string, before: Indexed, after: Indexed): { inserts: Stmt[]; deletes: Stmt[] } {
  const table = sysTable(ctx, 'lexical_postings');
  const ins = `INSERT INTO ${table} (keyspace_name, table_name, term, tf, dl, key) VALUES (?, ?, ?, ?, ?, ?)`;
  const del = `DELETE FROM ${table} WHERE keyspace_name = ? AND table_name = ? AND term = ? AND tf = ? AND dl = ? AND key = ?`;
  const kept = (term: string): boolean => before !== null && after !== null && before.length === after.length && before.counts.get(term) === after.counts.get(term);
  const inserts: Stmt[] = [];
  const deletes: Stmt[] = [];
  if (after !== null) {
    for (const [term, tf] of after.counts) inserts.push({ query: ins, params: [t.keyspace, t.name, term, tf, after.length, key], bytes: postingBytes(key, term) });
  }
  if (before !== null) {
    for (const [term, tf] of before.counts) if (!kept(term)) deletes.push({ query: del, params: [t.keyspace, t.name, term, tf, before.length, key], bytes: postingBytes(key, term) });
  }
  return { inserts, deletes };
}

/** Inserts of a row's postings, `USING TIMESTAMP` `at`, expiring after `ttl` seconds as the row does (0: never) (lexical-backfill.ts). */
export function postingInserts(ctx: Ctx, t: TableInfo, key: string, x: Indexed, at: unknown, ttl: number): Stmt[] {
  if (x === null || at === null || at === undefined) return [];
  const query = `INSERT INTO ${sysTable(ctx, 'lexical_postings')} (keyspace_name, table_name, term, tf, dl, key) VALUES (?, ?, ?, ?, ?, ?) USING TTL ? AND TIMESTAMP ?`;
  return [...x.counts].map(([term, tf]) => ({ query, params: [t.keyspace, t.name, term, tf, x.length, key, ttl, at], bytes: postingBytes(key, term) }));
}

/** Deletes of a row's postings; with `at`, only as written at or before that timestamp (`USING TIMESTAMP`). */
export function postingDeletes(ctx: Ctx, t: TableInfo, key: string, before: Indexed, at: unknown): Stmt[] {
  if (before === null) return [];
  const table = sysTable(ctx, 'lexical_postings');
  const where = 'WHERE keyspace_name = ? AND table_name = ? AND term = ? AND tf = ? AND dl = ? AND key = ?';
  const query = at === null ? `DELETE FROM ${table} ${where}` : `DELETE FROM ${table} USING TIMESTAMP ? ${where}`;
  return [...before.counts].map(([term, tf]) => {
    const params = [t.keyspace, t.name, term, tf, before.length, key];
    return { query, params: at === null ? params : [at, ...params], bytes: postingBytes(key, term) };
  });
}

const num = (v: unknown): number => (v === null || v === undefined ? 0 : typeof v === 'number' ? v : Number(String(v)));

interface Posting {
  key: string;
  tf: number;
  dl: number;
}

/** The best POSTINGS_PER_TERM postings of a term, and how many rows hold it. */
async function readTerm(ctx: Ctx, t: TableInfo, term: string): Promise<{ postings: Posting[]; df: number }> {
  const table = sysTable(ctx, 'lexical_postings');
  const errCtx = { keyspace: t.keyspace, table: t.name, action: 'reading lexical postings' };
  const postings: Posting[] = [];
  for await (const page of ctx.session.pages(`SELECT key, tf, dl FROM ${table} WHERE keyspace_name = ? AND table_name = ? AND term = ? LIMIT ?`, [t.keyspace, t.name, term, POSTINGS_PER_TERM + 1], {
    fetchSize: 2500,
    ctx: errCtx,
  })) {
    for (const r of page) postings.push({ key: r.key as string, tf: r.tf as number, dl: r.dl as number });
  }
  if (postings.length <= POSTINGS_PER_TERM) return { postings, df: postings.length };
  const rs = await ctx.session.execute('read', `SELECT count(*) AS n FROM ${table} WHERE keyspace_name = ? AND table_name = ? AND term = ?`, [t.keyspace, t.name, term], { ctx: errCtx });
  return { postings: postings.slice(0, POSTINGS_PER_TERM), df: num(rs.first()?.n) };
}

interface Scored {
  key: string;
  score: number;
}

const bestFirst = (a: Scored, b: Scored): number => b.score - a.score || compareCodePoints(a.key, b.key);

/** At most this many tokens of a multi-token phrase (a trigram word) are looked up to find rows holding it. */
const PHRASE_PROBES = 3;

/** The tokens of a phrase whose postings narrow down the rows that may hold it: first, middle and last. */
function probes(phrase: Phrase): string[] {
  const picks = phrase.length <= PHRASE_PROBES ? phrase : [phrase[0], phrase[phrase.length >> 1], phrase[phrase.length - 1]];
  return [...new Set(picks)];
}

export async function lexicalSearch(ctx: Ctx, keyspace: string, table: string, q: LexicalQuery): Promise<StoredMatch[]> {
  const t = await requireTable(ctx, keyspace, table);
  if (typeof q?.text !== 'string') throw invalid([{ path: '/text', message: 'must be a string' }]);
  const limit = Math.floor(q.limit);
  if (!(limit > 0)) return [];
  const match = q.filter && Object.keys(q.filter).length > 0 ? compile(q.filter) : null;
  const phrases = queryPhrases(t.lexical.tokenizer, q.text);
  if (phrases.length === 0) return [];

  const [stats, read] = await Promise.all([readStats(ctx, t), readTerms(ctx, t, [...new Set(phrases.flatMap(probes))])]);
  // Each phrase's rows: (tf, dl) straight from the postings for one token; for several, from the
  // texts of the rows that hold all its probed tokens.
  const multi = phrases.filter((p) => p.length > 1);
  const texts = await tokensOf(ctx, t, [...new Set(multi.flatMap((p) => intersect(probes(p).map((x) => read.get(x)!.postings))))]);
  const hits = phrases.map((phrase) => {
    if (phrase.length === 1) return read.get(phrase[0])!;
    const postings: Posting[] = [];
    for (const key of intersect(probes(phrase).map((x) => read.get(x)!.postings))) {
      const tokens = texts.get(key);
      const tf = tokens ? phraseCount(tokens, phrase) : 0;
      if (tf > 0) postings.push({ key, tf, dl: tokens!.length });
    }
    return { postings, df: postings.length };
  });
  // Rows with text cannot be fewer than any phrase's rows, nor their tokens fewer than one per row, whatever the counters say.
  const rows = Math.max(stats.rows, ...hits.map((h) => h.df));
  const s: Bm25Stats = { rows, tokens: Math.max(stats.tokens, rows) };
  const weighted: { phrase: Phrase; idf: number }[] = [];
  const scores = new Map<string, number>();
  // Rows holding none of the seeding phrases do not match (storage/lexical/prune.ts): as on the embedded backend.
  const all = weigh(phrases.map((phrase, i) => ({ phrase, df: hits[i].df })), rows);
  const seeds = seedPhrases(all, rows);
  const seeded = new Set<string>();
  phrases.forEach((phrase, i) => {
    const { postings, df } = hits[i];
    if (df === 0) return;
    const w = all[i].idf;
    weighted.push({ phrase, idf: w });
    for (const p of postings) scores.set(p.key, (scores.get(p.key) ?? 0) + termScore(w, p.tf, p.dl, s));
    if (seeds.includes(i)) for (const p of postings) seeded.add(p.key);
  });
  const candidates: Scored[] = [...scores].filter(([key]) => seeded.has(key)).map(([key, score]) => ({ key, score })).sort(bestFirst);
  return verify(ctx, t, candidates, weighted, s, limit, match, q.includeVector === true, (tokens) => holdsSeed(tokens, all, seeds));
}

/** The keys in every one of the lists. */
function intersect(lists: Posting[][]): string[] {
  const [first, ...rest] = [...lists].sort((a, b) => a.length - b.length);
  const sets = rest.map((l) => new Set(l.map((p) => p.key)));
  return (first ?? []).map((p) => p.key).filter((k) => sets.every((x) => x.has(k)));
}

async function readTerms(ctx: Ctx, t: TableInfo, terms: string[]): Promise<Map<string, { postings: Posting[]; df: number }>> {
  const read = new Map<string, { postings: Posting[]; df: number }>();
  await forEachLimit(terms, TERM_CONCURRENCY, async (term) => {
    read.set(term, await readTerm(ctx, t, term));
  });
  return read;
}

/** The current tokens of the rows' texts (rows gone or without text left out). */
async function tokensOf(ctx: Ctx, t: TableInfo, keys: string[]): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  const cql = `SELECT "key", "text" FROM ${dataTable(ctx, t.keyspace, t.name)} WHERE "key" IN ?`;
  await forEachLimit(chunks(keys, IN_CHUNK), 4, async (part) => {
    const rs = await ctx.session.execute('read', cql, [part], { ctx: { keyspace: t.keyspace, table: t.name, action: 'reading texts for lexical search' } });
    for (const r of rs.rows) if (typeof r.text === 'string' && r.text !== '') out.set(r.key as string, tokenize(t.lexical.tokenizer, r.text));
  });
  return out;
}

/**
 * Reads the candidates' rows best first and scores each from its current text, until `limit`
 * rows are found and the next candidate scores below the last of them (by its postings). Rows
 * gone, without a query phrase any more, or failing the filter drop out.
 */
async function verify(
  ctx: Ctx,
  t: TableInfo,
  candidates: Scored[],
  phrases: { phrase: Phrase; idf: number }[],
  stats: Bm25Stats,
  limit: number,
  match: ((m: Metadata) => boolean) | null,
  includeVector: boolean,
  seeded: (tokens: string[]) => boolean,
): Promise<StoredMatch[]> {
  const found: StoredMatch[] = [];
  const cols = includeVector ? '"key", "metadata", "text", "vector"' : '"key", "metadata", "text"';
  const cql = `SELECT ${cols} FROM ${dataTable(ctx, t.keyspace, t.name)} WHERE "key" IN ?`;
  // Without a filter, `limit` rows (and a few for rows gone) are all a query needs as a rule.
  const round = Math.max(IN_CHUNK, match ? limit * 2 : limit + 10);
  for (let i = 0; i < candidates.length; i += round) {
    if (found.length >= limit && candidates[i].score < found[limit - 1].score) break;
    const part = candidates.slice(i, i + round);
    const rows = new Map<string, StoredMatch>();
    await forEachLimit(chunks(part.map((c) => c.key), IN_CHUNK), 4, async (keys) => {
      const rs = await ctx.session.execute('read', cql, [keys], { ctx: { keyspace: t.keyspace, table: t.name, action: 'reading lexical matches' } });
      for (const r of rs.rows) {
        const text = (r.text as string | null) ?? null;
        if (text === null || text === '') continue;
        const metadata = fromMetadataText(r.metadata);
        if (match && !match(metadata)) continue;
        const tokens = tokenize(t.lexical.tokenizer, text);
        if (!seeded(tokens)) continue;
        const score = scoreTokens(tokens, phrases, stats);
        if (score <= 0) continue;
        const m: StoredMatch = { key: r.key as string, score, metadata, text };
        if (includeVector && r.vector != null) m.vector = fromCqlVector(r.vector);
        rows.set(m.key, m);
      }
    });
    for (const c of part) {
      const m = rows.get(c.key);
      if (m) found.push(m);
    }
    found.sort(bestFirst);
  }
  return found.slice(0, limit);
}
