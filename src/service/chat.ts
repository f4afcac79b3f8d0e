/**
 * `POST /v1/chat/`: a few commands, and questions answered from stored content.
 *
 * A question is searched over every table of one keyspace (the given one, or the default); the
 * best passages are split into sentences, each sentence is embedded with the same model and
 * scored against the question, and the best few, in passage order, are the extractive answer,
 * with the passages they came from as `sources`. When an OpenAI-compatible endpoint is
 * configured (VSS_CHAT_URL), it writes the answer from those same passages instead; if it is
 * slow, failing or answers nonsense, the extractive answer is given with a `note`, never an error.
 */
import { invalid } from '../errors.ts';
import { exactScore } from '../index/metric.ts';
import type { FileRecord } from '../storage/api.ts';
import { coversResource, requireKeyspace, type Caller } from './caller.ts';
import { chatCompletion, LlmError, type ChatMessage } from './chat-llm.ts';
import type { LlmSlots } from './llm-slots.ts';
import type { Deps } from './deps.ts';
import { listKeyspaces, tableViews } from './keyspaces.ts';
import { searchKeyspace, type QueryMatch } from './query.ts';
import { utf8Bytes } from './validate.ts';

export interface ChatInput {
  query: string;
  /** The keyspace questions, `/search` and `/tables` use (default: the default keyspace). */
  keyspace?: string;
}

export interface ChatSource {
  keyspace: string;
  table: string;
  key: string;
  score: number;
  source_file: string | null;
}

export type ChatMode = 'command' | 'extractive' | 'llm';

export interface ChatOutput {
  query: string;
  mode: ChatMode;
  response: string;
  sources: ChatSource[];
  /** Why the answer is not what was configured (the chat endpoint failed). */
  note?: string;
  /** Commands: the structured form of `response`. */
  data?: Record<string, unknown>;
}

/** Passages retrieved for a question. */
export const CHAT_PASSAGES = 5;
/** Sentences in an extractive answer, at most. */
export const ANSWER_SENTENCES = 3;
/** A sentence scoring this far below the best one is left out. */
const SENTENCE_MARGIN = 0.15;
/**
 * Below this cosine a sentence does not answer the question (all-MiniLM-L6-v2: a sentence that
 * answers scores about 0.5 to 0.7; unrelated text under 0.2).
 */
const MIN_SENTENCE_SCORE = 0.25;
/** Sentences embedded per question, at most (the best passages' first ones). */
const MAX_SENTENCES = 120;
/** Characters of a passage given to the chat model. */
const PASSAGE_CHARS = 4000;
const SEARCH_RESULTS = 5;

export const COMMANDS: readonly { command: string; description: string }[] = [
  { command: '/help', description: 'this list' },
  { command: '/files', description: 'the uploaded files you can see (of the given keyspace, or all of yours)' },
  { command: '/keyspaces', description: 'your keyspaces and their tables' },
  { command: '/tables [keyspace]', description: 'the tables of a keyspace (default: the given or default keyspace)' },
  { command: '/search <text>', description: 'the stored passages that best match the text (by meaning and by its words)' },
];

const KEYSPACE_NAME = /^[a-z][a-z0-9_]{0,47}$/;

/** `llm` bounds the calls to the chat endpoint: one per process, shared by every request. */
export async function chat(deps: Deps, caller: Caller, input: ChatInput, llm: LlmSlots): Promise<ChatOutput> {
  const text = input.query.trim();
  if (text === '') throw invalid([{ path: '/body/query', message: 'must not be empty' }]);
  if (utf8Bytes(input.query) > deps.config.limits.queryBytes) {
    throw invalid([{ path: '/body/query', message: `must be at most ${deps.config.limits.queryBytes} bytes in UTF-8` }]);
  }
  if (text.startsWith('/')) {
    const [, name, rest] = /^(\/\S*)\s*([\s\S]*)$/.exec(text)!;
    return command(deps, caller, input, name.toLowerCase(), rest.trim());
  }
  return answer(deps, caller, input.query, input.keyspace ?? deps.config.defaultKeyspace, llm);
}

// ---------------------------------------------------------------------------------------------
// Commands

async function command(deps: Deps, caller: Caller, input: ChatInput, name: string, arg: string): Promise<ChatOutput> {
  const out = (response: string, data: Record<string, unknown>, sources: ChatSource[] = []): ChatOutput => ({
    query: input.query,
    mode: 'command',
    response,
    sources,
    data,
  });
  switch (name) {
    case '/help':
      return out(
        ['Commands:', ...COMMANDS.map((c) => `  ${c.command} — ${c.description}`), 'Anything else is a question, answered from your stored content with its sources.'].join('\n'),
        { commands: COMMANDS },
      );

    case '/keyspaces': {
      const { keyspaces } = await listKeyspaces(deps, caller);
      const lines = keyspaces.map((k) => `  ${k.keyspace}: ${k.tables.length === 0 ? 'no tables' : k.tables.map((t) => `${t.table} (${t.row_count} rows)`).join(', ')}`);
      return out(keyspaces.length === 0 ? 'You have no keyspaces.' : [`Your keyspaces (${keyspaces.length}):`, ...lines].join('\n'), { keyspaces });
    }

    case '/tables': {
      const keyspace = arg === '' ? (input.keyspace ?? deps.config.defaultKeyspace) : arg;
      if (!KEYSPACE_NAME.test(keyspace)) {
        throw invalid([{ path: '/body/query', message: `"${keyspace}" is not a keyspace name (lower-case letter, then letters, digits or underscores)` }]);
      }
      await requireKeyspace(deps.storage, caller, keyspace);
      const tables = await tableViews(deps, keyspace);
      const lines = tables.map((t) => `  ${t.table}: ${t.row_count} rows, ${t.dimension} dimensions, ${t.metric}${t.model ? `, ${t.model}` : ''}`);
      return out(tables.length === 0 ? `Keyspace ${keyspace} has no tables.` : [`Tables of ${keyspace} (${tables.length}):`, ...lines].join('\n'), { keyspace, tables });
    }

    case '/files': {
      let names: string[];
      if (input.keyspace !== undefined) {
        await requireKeyspace(deps.storage, caller, input.keyspace);
        names = [input.keyspace];
      } else {
        // The same keyspaces as GET /v1/files/: all for `All`, else the caller's own and ownerless ones, within the key's resources.
        names = (await deps.storage.listKeyspaces())
          .filter((k) => caller.permissions === 'All' || k.owner === null || k.owner === caller.userId)
          .filter((k) => coversResource(caller.resources, k.name))
          .map((k) => k.name);
      }
      const files: FileRecord[] = names.length === 0 ? [] : await deps.storage.listFiles(names);
      const view = files.map((f) => ({ keyspace: f.keyspace, table: f.table, name: f.name, type: f.type, size: f.size, chunks: f.chunks, created_at: f.createdAt }));
      const lines = view.map((f) => `  ${f.keyspace}/${f.table}: ${f.name} (${f.type}, ${f.size} bytes, ${f.chunks} chunks)`);
      return out(view.length === 0 ? 'No files have been uploaded yet.' : [`Files (${view.length}):`, ...lines].join('\n'), { files: view });
    }

    case '/search': {
      if (arg === '') return out('Usage: /search <text> — the stored passages that best match the text (by meaning and by its words).', { matches: [] });
      const keyspace = input.keyspace ?? deps.config.defaultKeyspace;
      const embedder = deps.models.get();
      await requireKeyspace(deps.storage, caller, keyspace);
      const [vector] = await embedder.embed([arg]);
      const { matches } = await searchKeyspace(deps, keyspace, vector, arg, SEARCH_RESULTS);
      const lines = matches.map((m, i) => `${i + 1}. [${m.score.toFixed(3)}] ${m.table}/${m.key}: ${snippet(passageText(m) ?? '', 160)}`);
      return out(
        matches.length === 0 ? `Nothing is stored in keyspace ${keyspace} yet.` : [`Best passages in ${keyspace}:`, ...lines].join('\n'),
        { keyspace, matches: matches.map(({ text: _t, ...m }) => m) },
        matches.map(toSource),
      );
    }

    default:
      return out(`Unknown command ${name}. ${COMMANDS.map((c) => c.command.split(' ')[0]).join(', ')} are the commands; anything else is a question.`, {
        commands: COMMANDS,
      });
  }
}

// ---------------------------------------------------------------------------------------------
// Questions

interface Passage {
  match: QueryMatch;
  text: string;
}

interface Sentence {
  passage: number;
  position: number;
  text: string;
  score: number;
}

async function answer(deps: Deps, caller: Caller, question: string, keyspace: string, slots: LlmSlots): Promise<ChatOutput> {
  const embedder = deps.models.get();
  await requireKeyspace(deps.storage, caller, keyspace);
  const [qv] = await embedder.embed([question]);
  const { matches } = await searchKeyspace(deps, keyspace, qv, question, CHAT_PASSAGES);
  const passages: Passage[] = [];
  for (const m of matches) {
    const text = passageText(m);
    if (text !== null && text.trim() !== '') passages.push({ match: m, text });
  }
  if (passages.length === 0) {
    return { query: question, mode: 'extractive', response: `Nothing stored in keyspace ${keyspace} answers this yet: upload files or write texts first.`, sources: [] };
  }

  // Every sentence of the best passages, once (chunks overlap, so a sentence may repeat).
  const candidates: Omit<Sentence, 'score'>[] = [];
  const seen = new Set<string>();
  passages.forEach((p, passage) => {
    splitSentences(p.text).forEach((text, position) => {
      const norm = text.toLowerCase().replace(/\s+/g, ' ');
      if (seen.has(norm) || candidates.length >= MAX_SENTENCES) return;
      seen.add(norm);
      candidates.push({ passage, position, text });
    });
  });
  const vectors = candidates.length > 0 ? await embedder.embed(candidates.map((c) => c.text)) : [];
  const scored: Sentence[] = candidates.map((c, i) => ({ ...c, score: cosine(qv, vectors[i]) }));
  scored.sort((a, b) => b.score - a.score);
  const best = scored[0]?.score ?? 0;
  const chosen = scored.filter((s, i) => i < ANSWER_SENTENCES && s.score >= best - SENTENCE_MARGIN && s.score >= MIN_SENTENCE_SCORE);
  if (chosen.length === 0) {
    return { query: question, mode: 'extractive', response: `Nothing stored in keyspace ${keyspace} answers this closely enough.`, sources: [] };
  }
  chosen.sort((a, b) => a.passage - b.passage || a.position - b.position);

  const used = [...new Set(chosen.map((s) => s.passage))].sort((a, b) => a - b);
  const response = chosen.map((s) => s.text).join(' ');
  const sourcePassages = used.map((i) => passages[i]);
  const sources = sourcePassages.map((p) => toSource(p.match));
  const extractive: ChatOutput = { query: question, mode: 'extractive', response, sources };

  const { chat: llm } = deps.config;
  if (llm.url === undefined) return extractive;
  const release = slots.tryClaim();
  if (release === null) {
    return { ...extractive, note: `The chat model is busy (${slots.max} questions are with it); this answer is extracted from the stored passages.` };
  }
  try {
    const written = await chatCompletion(
      { url: llm.url, model: llm.model, apiKey: llm.apiKey, timeoutMs: llm.timeoutMs ?? 15_000 },
      promptFor(question, sourcePassages),
    );
    return { query: question, mode: 'llm', response: written, sources };
  } catch (e) {
    if (!(e instanceof LlmError)) throw e;
    return { ...extractive, note: `The chat model gave no answer (${e.message}); this answer is extracted from the stored passages.` };
  } finally {
    release();
  }
}

function promptFor(question: string, passages: Passage[]): ChatMessage[] {
  const context = passages
    .map((p, i) => `[${i + 1}] ${p.match.metadata.source_file ?? `${p.match.table}/${p.match.key}`}\n${p.text.slice(0, PASSAGE_CHARS)}`)
    .join('\n\n');
  return [
    {
      role: 'system',
      content:
        'You answer questions using only the numbered passages the user gives. Answer concisely in the language of the question. ' +
        'If the passages do not contain the answer, say so. Do not invent facts.',
    },
    { role: 'user', content: `Passages:\n\n${context}\n\nQuestion: ${question}` },
  ];
}

// ---------------------------------------------------------------------------------------------
// Helpers

function passageText(m: QueryMatch & { text?: string | null }): string | null {
  if (typeof m.text === 'string') return m.text;
  return typeof m.metadata.text === 'string' ? m.metadata.text : null;
}

function toSource(m: QueryMatch): ChatSource {
  const file = m.metadata.source_file;
  return { keyspace: m.keyspace, table: m.table, key: m.key, score: m.score, source_file: typeof file === 'string' ? file : null };
}

function snippet(text: string, chars: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= chars ? flat : `${flat.slice(0, chars - 1).trimEnd()}…`;
}

/**
 * Sentences of a passage: paragraphs (blank lines, list items, headings) first, then sentence
 * ends (`.`, `!`, `?`, `…`, and CJK full stops) followed by space. Fragments without three
 * letters are dropped.
 */
export function splitSentences(text: string): string[] {
  const out: string[] = [];
  const blocks = text.split(/\n\s*\n|\n(?=\s*(?:[-*•#>]|\d+[.)])\s)/);
  for (const block of blocks) {
    const flat = block.replace(/\s+/g, ' ').trim();
    if (flat === '') continue;
    for (const piece of flat.split(/(?<=[.!?…](?:["'”’)\]]*))\s+(?=["'“‘(\[]?[\p{Lu}\p{N}])|(?<=[。！？])/u)) {
      const s = piece.trim();
      if ((s.match(/\p{L}/gu)?.length ?? 0) >= 3) out.push(s.length > 1000 ? `${s.slice(0, 999)}…` : s);
    }
  }
  return out;
}

const cosine = (a: Float32Array, b: Float32Array): number => exactScore('cosine', a, b);
