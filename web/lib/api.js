// The API client. The key lives in sessionStorage only (gone when the tab closes) and is sent
// as x-api-key; it is never logged or put in a URL.

const STORAGE_KEY = 'vss.console.key';

export class ApiError extends Error {
  constructor(status, problem, fallback) {
    super(problem?.detail || problem?.title || fallback || `The server answered ${status}.`);
    this.status = status;
    this.code = problem?.code ?? null;
    this.title = problem?.title ?? null;
    this.errors = Array.isArray(problem?.errors) ? problem.errors : [];
    this.requestId = problem?.request_id ?? null;
  }
}

const NETWORK = 'Cannot reach the server. Check that it is running and try again.';

let key = sessionStorage.getItem(STORAGE_KEY);
let onUnauthorized = () => {};

export const session = {
  get key() {
    return key;
  },
  set(newKey) {
    key = newKey;
    sessionStorage.setItem(STORAGE_KEY, newKey);
  },
  clear() {
    key = null;
    sessionStorage.removeItem(STORAGE_KEY);
  },
  /** Called when a signed-in call answers 401 (the key was revoked meanwhile). */
  onUnauthorized(fn) {
    onUnauthorized = fn;
  },
};

function parse(text) {
  try {
    return text ? JSON.parse(text) : null;
  } catch {
    return null;
  }
}

/** JSON call. `opts.key` overrides the session key (sign-in); `opts.public` sends none. */
export async function api(method, path, body, opts = {}) {
  const headers = {};
  const k = opts.public ? null : (opts.key ?? key);
  if (k) headers['x-api-key'] = k;
  if (body !== undefined) headers['content-type'] = 'application/json';
  let res;
  try {
    res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store' });
  } catch {
    throw new ApiError(0, null, NETWORK);
  }
  const data = parse(await res.text());
  if (!res.ok) {
    const err = new ApiError(res.status, data);
    if (res.status === 401 && !opts.key && !opts.public && key) onUnauthorized(err);
    throw err;
  }
  return data;
}

/**
 * Multipart upload with progress (fetch cannot report upload progress; XMLHttpRequest can).
 * `fields` go before the file part, as the server reads them first.
 * Returns {promise, abort}; onProgress(fraction 0..1) fires while the bytes go out.
 */
export function upload(path, file, fields, onProgress) {
  const xhr = new XMLHttpRequest();
  const promise = new Promise((resolve, reject) => {
    const form = new FormData();
    for (const [k, v] of Object.entries(fields)) if (v !== undefined && v !== '') form.append(k, v);
    form.append('file', file, file.name);
    xhr.open('POST', path);
    if (key) xhr.setRequestHeader('x-api-key', key);
    xhr.responseType = 'text';
    xhr.upload.addEventListener('progress', (e) => {
      if (e.lengthComputable && e.total > 0) onProgress(e.loaded / e.total);
    });
    xhr.upload.addEventListener('load', () => onProgress(1));
    xhr.addEventListener('load', () => {
      const data = parse(xhr.responseText);
      if (xhr.status >= 200 && xhr.status < 300) return resolve(data);
      const err = new ApiError(xhr.status, data);
      if (xhr.status === 401) onUnauthorized(err);
      reject(err);
    });
    xhr.addEventListener('error', () => reject(new ApiError(0, null, NETWORK)));
    xhr.addEventListener('abort', () => reject(new ApiError(0, null, 'Upload cancelled.')));
    xhr.send(form);
  });
  return { promise, abort: () => xhr.abort() };
}
