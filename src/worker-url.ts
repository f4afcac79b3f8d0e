/**
 * Starts a worker thread from one of our TypeScript modules, from source and from the bundle alike.
 *
 * From source (tsx), `import.meta.url` here ends in .ts and the module is loaded through
 * worker-bootstrap.cjs, which registers tsx in the new thread (Node 20 does not pass the loader
 * hooks on to workers, so `new Worker('x.ts')` fails even with `--import tsx`). In the bundle,
 * scripts/build.mjs builds each worker module as its own entry point beside main.mjs (named by
 * the file's base name), and this code is part of a file in that same folder.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker, type WorkerOptions } from 'node:worker_threads';

const FROM_SOURCE = import.meta.url.endsWith('.ts');

/**
 * A worker running `entry`, the module's path under src/ without its extension
 * ('index/graph-search.worker'); every worker module must also be listed in scripts/build.mjs.
 * Workers start with no Node flags of this process (`execArgv: []`) unless told otherwise.
 */
export function startWorker(entry: string, options: WorkerOptions = {}): Worker {
  const opts = { execArgv: [], ...options };
  if (!FROM_SOURCE) return new Worker(new URL(`./${path.basename(entry)}.mjs`, import.meta.url), opts);
  const module = fileURLToPath(new URL(`./${entry}.ts`, import.meta.url));
  return new Worker(new URL('./worker-bootstrap.cjs', import.meta.url), { ...opts, argv: [...(opts.argv ?? []), module] });
}
