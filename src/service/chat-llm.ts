/**
 * A minimal OpenAI-compatible chat-completions client (global fetch). It never throws anything
 * but LlmError: every way the endpoint can fail (no answer in time, a non-2xx status, a body
 * that is not the expected JSON) becomes one, with a short reason that is safe to show.
 */

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
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), opts.timeoutMs);
  try {
    let res: Response;
    try {
      res = await fetch(endpoint, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json',
          ...(opts.apiKey ? { authorization: `Bearer ${opts.apiKey}` } : {}),
        },
        body: JSON.stringify({ model: opts.model ?? DEFAULT_CHAT_MODEL, messages, temperature: 0.2, stream: false }),
        signal: controller.signal,
      });
    } catch (e) {
      if (controller.signal.aborted) throw new LlmError(`the chat endpoint did not answer within ${opts.timeoutMs} ms`, { cause: e });
      throw new LlmError('the chat endpoint could not be reached', { cause: e });
    }
    let raw: string;
    try {
      raw = await readCapped(res);
    } catch (e) {
      if (controller.signal.aborted) throw new LlmError(`the chat endpoint did not answer within ${opts.timeoutMs} ms`, { cause: e });
      throw e instanceof LlmError ? e : new LlmError('the chat endpoint closed the connection mid-answer', { cause: e });
    }
    if (!res.ok) throw new LlmError(`the chat endpoint answered HTTP ${res.status}`);
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch (e) {
      throw new LlmError('the chat endpoint answered something that is not JSON', { cause: e });
    }
    const content = contentOf(body);
    if (content === null) throw new LlmError('the chat endpoint answered without a message (no choices[0].message.content)');
    return content.trim();
  } finally {
    clearTimeout(timer);
  }
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

async function readCapped(res: Response): Promise<string> {
  if (!res.body) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength;
    if (size > MAX_ANSWER_BYTES) throw new LlmError(`the chat endpoint's answer is larger than ${MAX_ANSWER_BYTES} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
