/**
 * The web console: the static files of `web/` served at `/`.
 *
 * The pages carry no data; every call they make goes to the API with the user's key. So the
 * files are public and not rate limited. @fastify/static only decorates `reply.sendFile` here
 * (`serve: false`): one explicit route per file, found at start, declares that route config
 * itself (a wildcard route would also catch unknown `/v1/...` paths, and the static plugin's
 * own routes cannot carry our config). Every response of this plugin gets a strict
 * Content-Security-Policy: scripts, styles and connections from this origin only, no inline
 * script, no framing.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance } from 'fastify';

export const WEB_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../web');

export const CONSOLE_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "font-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; '),
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'permissions-policy': 'camera=(), microphone=(), geolocation=(), payment=()',
};

/** Files under `root`, as URL paths relative to it ('app.js', 'icons/x.svg'); dot files left out. */
function listFiles(root: string, dir = ''): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(path.join(root, dir), { withFileTypes: true })) {
    if (entry.name.startsWith('.')) continue;
    const rel = dir ? `${dir}/${entry.name}` : entry.name;
    if (entry.isDirectory()) out.push(...listFiles(root, rel));
    else if (entry.isFile()) out.push(rel);
  }
  return out.sort();
}

export async function consolePlugin(app: FastifyInstance, opts: { root?: string } = {}): Promise<void> {
  const root = opts.root ?? WEB_ROOT;
  await app.register(async (scope) => {
    await scope.register(fastifyStatic, { root, serve: false, cacheControl: false });
    scope.addHook('onSend', async (_request, reply, payload) => {
      for (const [name, value] of Object.entries(CONSOLE_HEADERS)) reply.header(name, value);
      return payload;
    });
    const config = { permission: 'public' as const, rateLimit: false as const };
    const serve = (file: string) => ({
      schema: { hide: true },
      config,
      // No fingerprinted names: the browser revalidates (ETag) so an upgrade shows at once.
      handler: (_req: unknown, reply: { header(n: string, v: string): unknown; sendFile(f: string): unknown }) => {
        reply.header('cache-control', 'no-cache');
        return reply.sendFile(file);
      },
    });
    for (const file of listFiles(root)) scope.get(`/${file}`, serve(file) as never);
    scope.get('/', serve('index.html') as never);
  });
}
