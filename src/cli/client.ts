/** A small client for the v1 API: JSON in, JSON out, problem bodies turned into ApiError. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
    readonly fieldErrors: { path: string; message: string }[] = [],
  ) {
    super(detail);
    this.name = 'ApiError';
  }
}

/** No answer a vss server would give: refused, DNS, timeout, or a proxy's page instead of JSON. */
export class UnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnavailableError';
  }
}

/** Long enough for a slow query, short enough that a server which accepts and never answers does not hang a script. */
export const DEFAULT_TIMEOUT_MS = 60_000;
/** Uploads and import batches: the server may extract and embed hundreds of texts before it answers. */
export const LONG_TIMEOUT_MS = 600_000;

export interface RequestOptions {
  body?: unknown;
  raw?: BodyInit;
  /** The content type of a `raw` body (a form sets its own). */
  contentType?: string;
  timeoutMs?: number;
  /** Aborts the request; its reason is thrown as is (an interrupted import). */
  signal?: AbortSignal;
}

const GATEWAY_STATUSES = new Set([502, 503, 504]);

const causeOf = (e: unknown): string => {
  const err = e as Error & { cause?: Error };
  return err?.cause?.message ?? err?.message ?? String(e);
};

export class Client {
  /** `timeoutMs`, when given (--timeout), replaces every request's own timeout. */
  constructor(
    readonly baseUrl: string,
    private readonly key: string | undefined,
    private readonly timeoutMs?: number,
  ) {}

  /** The status and JSON body of an answer, whatever its status; throws UnavailableError when there is no JSON answer. */
  async send(method: string, path: string, opts: RequestOptions = {}): Promise<{ status: number; body: any }> {
    const url = this.baseUrl.replace(/\/+$/, '') + path;
    const headers: Record<string, string> = {};
    if (this.key) headers['x-api-key'] = this.key;
    if (opts.body !== undefined) headers['content-type'] = 'application/json';
    else if (opts.contentType !== undefined) headers['content-type'] = opts.contentType;
    const timeoutMs = this.timeoutMs ?? opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout;
    let res: Response;
    let text: string;
    try {
      res = await fetch(url, { method, headers, signal, body: opts.raw ?? (opts.body === undefined ? undefined : JSON.stringify(opts.body)) });
      text = await res.text();
    } catch (e) {
      if (opts.signal?.aborted) throw opts.signal.reason;
      if (timeout.aborted) throw new UnavailableError(`the server at ${this.baseUrl} did not answer within ${timeoutMs / 1000} s (--timeout <seconds> to wait longer)`);
      throw new UnavailableError(`cannot reach the server at ${this.baseUrl}: ${causeOf(e)}`);
    }
    return { status: res.status, body: this.parse(res, text) };
  }

  /** A vss server always answers JSON (or nothing); an HTML page is a proxy or some other server speaking. */
  private parse(res: Response, text: string): unknown {
    if (!text) return null;
    try {
      return JSON.parse(text);
    } catch {
      if (GATEWAY_STATUSES.has(res.status)) throw new UnavailableError(`the server at ${this.baseUrl} is unavailable: a proxy or gateway answered HTTP ${res.status} ${res.statusText}`);
      throw new UnavailableError(`the server at ${this.baseUrl} answered HTTP ${res.status} with something other than JSON: is it a vss server?`);
    }
  }

  /**
   * An answer to be streamed (a snapshot download): its Response when 2xx, the problem as
   * ApiError otherwise. The timeout covers the whole transfer.
   */
  async stream(path: string, opts: RequestOptions = {}): Promise<Response> {
    const headers: Record<string, string> = this.key ? { 'x-api-key': this.key } : {};
    const timeoutMs = this.timeoutMs ?? opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    let res: Response;
    try {
      res = await fetch(this.baseUrl.replace(/\/+$/, '') + path, { headers, signal: AbortSignal.timeout(timeoutMs) });
    } catch (e) {
      throw new UnavailableError(`cannot reach the server at ${this.baseUrl}: ${causeOf(e)}`);
    }
    if (res.ok) return res;
    const text = await res.text();
    const p = (this.parse(res, text) ?? {}) as { code?: string; detail?: string; errors?: [] };
    throw new ApiError(res.status, p.code ?? `http_${res.status}`, p.detail ?? `HTTP ${res.status}`, p.errors ?? []);
  }

  async request<T = any>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    const { status, body } = await this.send(method, path, opts);
    if (status < 200 || status > 299) {
      const p = body && typeof body === 'object' ? body : {};
      throw new ApiError(status, p.code ?? `http_${status}`, p.detail ?? `HTTP ${status}`, p.errors ?? []);
    }
    return body as T;
  }

  get = <T = any>(path: string, opts?: RequestOptions) => this.request<T>('GET', path, opts);
  post = <T = any>(path: string, body?: unknown, opts?: RequestOptions) => this.request<T>('POST', path, { ...opts, body });
}
