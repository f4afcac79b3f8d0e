/** One bad field of a problem body: a JSON pointer into the request and what is wrong with it. */
export interface FieldError {
  path: string;
  message: string;
}

/** The RFC 9457 problem body the server answers every error with (docs/API.md, "Everywhere"). */
export interface ProblemBody {
  type?: string;
  title?: string;
  status?: number;
  detail?: string;
  instance?: string;
  code?: string;
  request_id?: string;
  errors?: FieldError[];
  [extra: string]: unknown;
}

/**
 * An error answer of the server, or a request that never got one. Branch on `code` (the
 * server's stable codes such as `validation_failed`, `vector_not_found`, `rate_limited`; and
 * `network_error` or `unexpected_response` from the client itself); `detail` is for people.
 */
export class VssError extends Error {
  readonly code: string;
  /** The HTTP status, or 0 when no answer arrived. */
  readonly status: number;
  readonly detail: string;
  readonly errors: FieldError[];
  readonly requestId: string | undefined;
  /** The whole problem body as answered (with extensions such as `valid` or `supported`). */
  readonly problem: ProblemBody;

  constructor(status: number, problem: ProblemBody, options?: { cause?: unknown }) {
    const code = typeof problem.code === 'string' ? problem.code : 'unexpected_response';
    const detail = typeof problem.detail === 'string' ? problem.detail : (problem.title ?? `HTTP ${status}`);
    super(`${code} (${status}): ${detail}`, options);
    this.name = 'VssError';
    this.code = code;
    this.status = status;
    this.detail = detail;
    this.errors = Array.isArray(problem.errors) ? problem.errors : [];
    this.requestId = typeof problem.request_id === 'string' ? problem.request_id : undefined;
    this.problem = problem;
  }

  /** Reads an error answer; a body that is not a problem (a proxy's HTML page) keeps a bounded excerpt in `detail`. */
  static async fromResponse(res: Response): Promise<VssError> {
    const text = await res.text().catch(() => '');
    let problem: ProblemBody;
    try {
      const parsed: unknown = JSON.parse(text);
      problem = parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as ProblemBody) : { detail: text.slice(0, 500) };
    } catch {
      problem = { detail: text.slice(0, 500) || res.statusText || `HTTP ${res.status}` };
    }
    problem.request_id ??= res.headers.get('x-request-id') ?? undefined;
    return new VssError(res.status, problem);
  }

  static network(url: string, cause: unknown): VssError {
    const reason = cause instanceof Error ? cause.message : String(cause);
    return new VssError(0, { code: 'network_error', detail: `no answer from ${url}: ${reason}` }, { cause });
  }
}
