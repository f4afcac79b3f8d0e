/**
 * Runs the real server as a child process, for tests that need a process to kill: the same entry
 * as `npm start` (scripts/start.mjs, which runs the esbuild bundle of src/main.ts, rebuilt when stale).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export interface RunningServer {
  url: string;
  child: ChildProcess;
  output(): string;
  /** POST/GET JSON with the given key. */
  call(method: string, route: string, body?: unknown, key?: string): Promise<{ status: number; body: any }>;
  kill(signal: NodeJS.Signals): Promise<number | null>;
}

/**
 * `root`: the checkout to run (default this one; a bench may compare against another commit's).
 * `nodeArgs`: flags for node itself, e.g. a bench's --cpu-prof (which NODE_OPTIONS refuses).
 */
export async function startServer(env: Record<string, string>, timeoutMs = 60_000, root = ROOT, nodeArgs: string[] = []): Promise<RunningServer> {
  const child = spawn(process.execPath, [...nodeArgs, path.join(root, 'scripts/start.mjs')], {
    cwd: root,
    // MALLOC_ARENA_MAX as `npm start` sets it unless given (see its entry in README.md's settings).
    env: { MALLOC_ARENA_MAX: '2', ...process.env, VSS_PORT: '0', VSS_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start in ${timeoutMs} ms:\n${out}`)), timeoutMs);
    let listening = false;
    const onData = (d: Buffer) => {
      out += d.toString();
      // Once found, not looked for again: a server run with a V8 trace writes megabytes.
      if (listening) return;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) {
        listening = true;
        clearTimeout(timer);
        resolve(m[1]);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code} before listening:\n${out}`));
    });
  });
  const server: RunningServer = {
    url,
    child,
    output: () => out,
    call: jsonCaller(url, env.VSS_ADMIN_KEY),
    async kill(signal) {
      child.kill(signal);
      return exited;
    },
  };
  // Ready means the model is loaded too (healthcheck 200).
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const h = await server.call('GET', '/v1/healthcheck/').catch(() => ({ status: 0, body: null }));
    if (h.status === 200) break;
    if (Date.now() > deadline) throw new Error(`server not healthy in ${timeoutMs} ms:\n${out}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return server;
}

/** JSON calls to `url` over one keep-alive agent, with `key` as x-api-key unless a call gives its own (a bench times a peer's server through this too). */
export function jsonCaller(url: string, key?: string): RunningServer['call'] {
  const agent = new http.Agent({ keepAlive: true });
  return (method, route, body, k = key) => request(agent, url + route, method, body, k);
}

/**
 * One JSON request over node:http with a keep-alive agent. Not fetch: benchmarks time requests
 * through this, and fetch (undici) spent ~1 ms more of the client's time per request, on the same
 * two cores as the server (a throwaway probe at 1M rows: client send to server receipt p50 1.05
 * against 0.55 ms, response sent to client done 0.6 against 0.22 ms).
 */
function request(agent: http.Agent, url: string, method: string, body: unknown, key: string | undefined): Promise<{ status: number; body: any }> {
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  const headers: Record<string, string | number> = key ? { 'x-api-key': key } : {};
  if (payload) Object.assign(headers, { 'content-type': 'application/json', 'content-length': payload.byteLength });
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, agent, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        try {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode!, body: text ? JSON.parse(text) : null });
        } catch (e) {
          reject(e);
        }
      });
    });
    req.on('error', reject);
    req.end(payload);
  });
}
