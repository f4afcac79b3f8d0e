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

/** The server could not be reached at all (refused, DNS, timeout). */
export class ConnectionError extends Error {
  constructor(readonly url: string, cause: unknown) {
    super(`cannot reach the server at ${url}: ${(cause as Error)?.cause ? String((cause as { cause: Error }).cause.message) : String((cause as Error)?.message ?? cause)}`);
    this.name = 'ConnectionError';
  }
}

export class Client {
  constructor(readonly baseUrl: string, private readonly key: string | undefined) {}

  async request<T = any>(method: string, path: string, body?: unknown, init: { raw?: BodyInit; headers?: Record<string, string> } = {}): Promise<T> {
    const url = this.baseUrl.replace(/\/+$/, '') + path;
    const headers: Record<string, string> = { ...init.headers };
    if (this.key) headers['x-api-key'] = this.key;
    if (body !== undefined) headers['content-type'] = 'application/json';
    let res: Response;
    try {
      res = await fetch(url, { method, headers, body: init.raw ?? (body === undefined ? undefined : JSON.stringify(body)) });
    } catch (e) {
      throw new ConnectionError(this.baseUrl, e);
    }
    const text = await res.text();
    let parsed: any = null;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      parsed = text;
    }
    if (!res.ok) {
      const p = parsed && typeof parsed === 'object' ? parsed : {};
      throw new ApiError(res.status, p.code ?? `http_${res.status}`, p.detail ?? (typeof parsed === 'string' ? parsed : res.statusText), p.errors ?? []);
    }
    return parsed as T;
  }

  get = <T = any>(path: string) => this.request<T>('GET', path);
  post = <T = any>(path: string, body?: unknown) => this.request<T>('POST', path, body);
}
