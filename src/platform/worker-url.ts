/**
 * Starts a worker thread from one of our TypeScript modules, from source and from the bundle alike.
 *
 * In the bundle, scripts/build.mjs builds each worker module as its own entry point beside
 * main.mjs (named by the file's base name), and this code is part of a file in that same folder.
 *
 * From source (`import.meta.url` here ends in .ts: tests, tsx), the module is bundled once per
 * process with esbuild (the compiler tsx uses) into dist/dev-workers/, named by its content's hash,
 * and started from there. Why not tsx in the thread: Node 20 does not pass tsx's loader hooks on to
 * workers, and registering tsx in each new thread took 0.2-0.6 s a start against ~25 ms, with a
 * digest thread started for every graph save.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker, type WorkerOptions } from 'node:worker_threads';

const FROM_SOURCE = import.meta.url.endsWith('.ts');

/**
 * A worker running `entry`, the module's path under src/ without its extension
 * ('index/graph-search.worker'); every worker module must also be listed in scripts/build.mjs.
 * Workers start with no Node flags of this process (`execArgv: []`) unless told otherwise.
 */
export function startWorker(entry: string, options: WorkerOptions = {}): Worker {
  const url = FROM_SOURCE ? sourceBuild(entry) : new URL(`./${path.basename(entry)}.mjs`, import.meta.url);
  return new Worker(url, { execArgv: [], ...options });
}

const built = new Map<string, URL>();

/** The worker module bundled from source (our code only; packages stay imports), built once per process. */
function sourceBuild(entry: string): URL {
  let url = built.get(entry);
  if (url) return url;
  const srcDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  const outDir = path.join(srcDir, '..', 'dist', 'dev-workers');
  const { buildSync } = createRequire(import.meta.url)('esbuild') as typeof import('esbuild');
  const [out] = buildSync({
    entryPoints: [path.join(srcDir, `${entry}.ts`)],
    bundle: true,
    packages: 'external',
    platform: 'node',
    target: 'node20',
    format: 'esm',
    sourcemap: 'inline', // stack traces point at the TypeScript
    keepNames: true,
    write: false,
    logLevel: 'error',
  }).outputFiles;
  const file = path.join(outDir, `${path.basename(entry)}-${createHash('sha256').update(out.contents).digest('hex').slice(0, 16)}.mjs`);
  if (!existsSync(file)) {
    // Several test processes may build the same module at once: each writes its own file and renames.
    mkdirSync(outDir, { recursive: true });
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, out.contents);
    renameSync(tmp, file);
  }
  url = pathToFileURL(file);
  built.set(entry, url);
  return url;
}
