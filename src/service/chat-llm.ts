/**
 * A minimal OpenAI-compatible chat-completions client (global fetch). It never throws anything
 * but LlmError: every way the endpoint can fail (no answer in time, a non-2xx status, a body
 * that is not the expected JSON) becomes one, with a short reason that is safe to show.
 */
import { postJson } from './json-endpoint.ts';

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface LlmOptions {
  /** The endpoint: a base URL (`…/v1`, `/chat/completions` is appended) or the full completions URL. */
  url: string;
  model?: string;
  apiKey?: string;
  timeoutMs: number;
}

export class LlmError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'LlmError';
  }
}

/** Sent when VSS_CHAT_MODEL is not set; servers that host one model (llama.cpp, vLLM) ignore it. */
export const DEFAULT_CHAT_MODEL = 'default';

/** Longest answer body read from the endpoint. */
const MAX_ANSWER_BYTES = 1024 * 1024;

export function completionsUrl(url: string): string {
  const u = new URL(url);
  if (!/\/chat\/completions\/?$/.test(u.pathname)) u.pathname = `${u.pathname.replace(/\/+$/, '')}/chat/completions`;
  return u.toString();
}

/** The assistant's text of one chat completion. Throws LlmError. */
export async function chatCompletion(opts: LlmOptions, messages: ChatMessage[]): Promise<string> {
  let endpoint: string;
  try {
    endpoint = completionsUrl(opts.url);
  } catch (e) {
    throw new LlmError('the chat endpoint URL is not valid', { cause: e });
  }
  const body = await postJson({
    url: endpoint,
    body: { model: opts.model ?? DEFAULT_CHAT_MODEL, messages, temperature: 0.2, stream: false },
    apiKey: opts.apiKey,
    timeoutMs: opts.timeoutMs,
    maxAnswerBytes: MAX_ANSWER_BYTES,
    name: 'the chat endpoint',
    fail: (reason, cause) => new LlmError(reason, { cause }),
  });
  const content = contentOf(body);
  if (content === null) throw new LlmError('the chat endpoint answered without a message (no choices[0].message.content)');
  return content.trim();
}

function contentOf(body: unknown): string | null {
  if (typeof body !== 'object' || body === null) return null;
  const choices = (body as { choices?: unknown }).choices;
  if (!Array.isArray(choices) || choices.length === 0) return null;
  const message = (choices[0] as { message?: unknown } | null)?.message;
  if (typeof message !== 'object' || message === null) return null;
  const content = (message as { content?: unknown }).content;
  return typeof content === 'string' && content.trim() !== '' ? content : null;
}
