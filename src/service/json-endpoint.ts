/**
 * One JSON POST to a model endpoint outside the service (the chat model, the reranker), with a
 * time-out and a bound on the answer's size. Every way it can fail becomes the caller's own error
 * class, with a short reason that is safe to show: no URL (it may carry credentials), no key.
 */

export interface JsonPost {
  /** The full endpoint URL. */
  url: string;
  body: unknown;
  /** Sent as `Authorization: Bearer` when set. */
  apiKey?: string;
  timeoutMs: number;
  /** Longest answer read, in bytes. */
  maxAnswerBytes: number;
  /** What the endpoint is called in reasons, e.g. "the chat endpoint". */
  name: string;
  fail: (reason: string, cause?: unknown) => Error;
}

/** The endpoint's answer, parsed, when it is a 2xx with a JSON body. Throws only `fail`'s errors. */
export async function postJson(p: JsonPost): Promise<unknown> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), p.timeoutMs);
  const timedOut = (cause: unknown) => p.fail(`${p.name} did not answer within ${p.timeoutMs} ms`, cause);
  try {
    let res: Response;
    try {
      res = await fetch(p.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json',
          ...(p.apiKey ? { authorization: `Bearer ${p.apiKey}` } : {}),
        },
        body: JSON.stringify(p.body),
        signal: controller.signal,
      });
    } catch (e) {
      if (controller.signal.aborted) throw timedOut(e);
      throw p.fail(`${p.name} could not be reached`, e);
    }
    let raw: string;
    try {
      raw = await readCapped(res, p);
    } catch (e) {
      if (controller.signal.aborted) throw timedOut(e);
      throw e instanceof TooLarge ? p.fail(e.message) : p.fail(`${p.name} closed the connection mid-answer`, e);
    }
    if (!res.ok) throw p.fail(`${p.name} answered HTTP ${res.status}`);
    try {
      return JSON.parse(raw);
    } catch (e) {
      throw p.fail(`${p.name} answered something that is not JSON`, e);
    }
  } finally {
    clearTimeout(timer);
  }
}

class TooLarge extends Error {}

async function readCapped(res: Response, p: JsonPost): Promise<string> {
  if (!res.body) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength;
    if (size > p.maxAnswerBytes) throw new TooLarge(`${p.name}'s answer is larger than ${p.maxAnswerBytes} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
