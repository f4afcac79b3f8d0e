import { VssError } from './errors.ts';
import { DEFAULT_RETRY, isRetryable, retryDelay, type RetryPolicy } from './retry.ts';

export interface TransportOptions {
  /** The server's base URL, e.g. `http://127.0.0.1:8080` (with or without `/v1`). */
  url: string;
  apiKey?: string;
  retry?: Partial<RetryPolicy>;
  /** Per attempt; none by default (uploads of large files take minutes). */
  timeoutMs?: number;
  /** Another fetch (a proxy-aware one, or a test double); the global one by default. */
  fetch?: typeof fetch;
}

/** What a request sends: a JSON value, or a multipart form (uploads). */
export type RequestBody = { json: unknown } | { form: FormData };

/** HTTP with the key, problem bodies turned into VssError, and retries of 429 and 503. */
export class Transport {
  readonly base: string;
  private readonly apiKey: string | undefined;
  private readonly policy: RetryPolicy;
  private readonly timeoutMs: number | undefined;
  private readonly fetchImpl: typeof fetch;

  constructor(options: TransportOptions) {
    this.base = options.url.replace(/\/+$/, '').replace(/\/v1$/, '');
    this.apiKey = options.apiKey;
    this.policy = { ...DEFAULT_RETRY, ...options.retry };
    this.timeoutMs = options.timeoutMs;
    this.fetchImpl = options.fetch ?? globalThis.fetch.bind(globalThis);
  }

  async json<T>(method: string, path: string, body?: RequestBody, signal?: AbortSignal): Promise<T> {
    const res = await this.send(method, path, body, signal);
    return (await res.json()) as T;
  }

  /** Sends until an answer that is not a retryable refusal, or the policy gives up; a non-2xx answer throws. */
  async send(method: string, path: string, body?: RequestBody, signal?: AbortSignal): Promise<Response> {
    const url = this.base + path;
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.apiKey !== undefined) headers['x-api-key'] = this.apiKey;
    let payload: string | FormData | undefined;
    if (body && 'json' in body) {
      headers['content-type'] = 'application/json';
      payload = JSON.stringify(body.json);
    } else if (body) {
      payload = body.form;
    }
    for (let attempt = 0; ; attempt++) {
      const signals = [signal, this.timeoutMs === undefined ? undefined : AbortSignal.timeout(this.timeoutMs)].filter((s): s is AbortSignal => s !== undefined);
      let res: Response;
      try {
        res = await this.fetchImpl(url, { method, headers, body: payload, signal: signals.length ? AbortSignal.any(signals) : undefined });
      } catch (e) {
        if (signal?.aborted) throw e;
        throw VssError.network(url, e);
      }
      if (res.ok) return res;
      if (isRetryable(res.status) && attempt < this.policy.retries) {
        const delay = retryDelay(res.headers.get('retry-after'), attempt, this.policy);
        if (delay !== null) {
          await res.body?.cancel().catch(() => undefined);
          await sleep(delay, signal);
          continue;
        }
      }
      throw await VssError.fromResponse(res);
    }
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(signal.reason);
    }, { once: true });
  });
}
