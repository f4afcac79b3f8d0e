#!/usr/bin/env node
// Bundles the server (src/main.ts) into dist/server/main.mjs with esbuild, its worker threads' modules beside it: one file of our code,
// the packages left as imports, so a start loads one module instead of every source through tsx.
// Code imported with `await import('./x.ts')` (the Cassandra backend) goes into a chunk file beside
// it, loaded only when used, so its packages stay unloaded too.
// The bundle sits two folders deep on purpose: src/config/config.ts (PROJECT_ROOT) and
// src/http/console.ts (WEB_ROOT) resolve `../..` from import.meta.url, which must stay the
// project root. `node scripts/build.mjs` builds; scripts/start.mjs builds only when stale.
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, renameSync, statSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const OUT_DIR = path.join(ROOT, 'dist', 'server');
export const BUNDLE = path.join(OUT_DIR, 'main.mjs');
/** Chunks no build refers to any more are deleted once this old (a running server may still load one). */
const STALE_CHUNK_MS = 24 * 3600_000;

/**
 * Packages bundled in rather than imported at run time: typebox ships ~700 small ES modules, and
 * resolving and compiling them one by one cost ~150 ms of every start; bundled (tree-shaken) it is
 * a few ms. Only pure-JS packages with no file or native lookups belong here.
 */
const BUNDLED_PACKAGES = ['typebox'];
const isBundled = (specifier) => BUNDLED_PACKAGES.some((p) => specifier === p || specifier.startsWith(`${p}/`));

/**
 * The bundle's entry points: the server, and each worker thread's module, built beside main.mjs
 * under its base name (src/platform/worker-url.ts starts them from there). Shared code goes into chunks.
 */
const ENTRY_POINTS = [
  'src/main.ts',
  'src/platform/file-digest.worker.ts',
  'src/index/graph-search.worker.ts',
  'src/storage/embedded/db-warmer.worker.ts',
  'src/storage/embedded/lexical-postings.worker.ts',
  'src/embedding/bulk-embed.worker.ts',
  // A child process's module, not a thread's: src/ingest/extract/pool.ts starts it.
  'src/ingest/extract/extract.worker.ts',
];

/**
 * What the bundle is made from: a change to any of these (by mtime) makes it stale. The lock file
 * stands for the bundled packages' versions (npm gives installed files a fixed old mtime).
 */
const INPUT_DIRS = ['src'];
const INPUT_FILES = ['package.json', 'package-lock.json', 'tsconfig.json', 'scripts/build.mjs'];

/** Newest mtime of the files and folders under dir (a folder's changes when an entry is added, removed or renamed). */
function newestMtime(dir) {
  let newest = statSync(dir).mtimeMs;
  for (const d of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, d.name);
    if (d.isDirectory()) newest = Math.max(newest, newestMtime(p));
    else newest = Math.max(newest, statSync(p).mtimeMs);
  }
  return newest;
}

/** True when the bundle is missing or older than any input (a stat walk of src/: a few ms). */
export function isStale() {
  let built;
  try {
    built = statSync(BUNDLE).mtimeMs;
  } catch {
    return true;
  }
  for (const f of INPUT_FILES) {
    try {
      if (statSync(path.join(ROOT, f)).mtimeMs > built) return true;
    } catch {
      // an optional input that is absent
    }
  }
  return INPUT_DIRS.some((d) => newestMtime(path.join(ROOT, d)) > built);
}

/**
 * Builds the bundle, its chunks and their source maps. Safe with several processes building at
 * once: each writes its own temporary files and renames them into place, main.mjs last (chunks are
 * named by content hash, so a new main.mjs finds its chunks, and an old one its own), so a reader
 * sees a whole old or a whole new build. Every file's mtime is set to when the build started, so a
 * source saved during the build still counts as newer.
 */
export async function build() {
  const started = new Date();
  const { build: esbuild, stop } = await import('esbuild');
  // The esbuild service is a child process; stopped after the build so a server does not keep it.
  const result = await esbuild({
    absWorkingDir: ROOT,
    entryPoints: ENTRY_POINTS,
    entryNames: '[name]',
    outdir: OUT_DIR,
    chunkNames: 'chunk-[hash]',
    outExtension: { '.js': '.mjs' },
    bundle: true,
    splitting: true,
    platform: 'node',
    target: 'node20',
    format: 'esm',
    // Every package stays an import resolved at run time (as `packages: 'external'`), but those above.
    plugins: [
      {
        name: 'external-packages',
        setup(b) {
          b.onResolve({ filter: /^[^./]/ }, (args) =>
            args.kind === 'entry-point' || isBundled(args.path) || path.isAbsolute(args.path) ? undefined : { path: args.path, external: true },
          );
        },
      },
    ],
    sourcemap: 'linked', // sources named ../../src/...: stack traces point at the TypeScript
    keepNames: true, // functions and classes keep their source names (.name, stack frames), as unbundled
    write: false,
    logLevel: 'warning',
  }).finally(() => stop());
  mkdirSync(OUT_DIR, { recursive: true });
  const tag = `.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  const files = result.outputFiles
    .map((f) => ({ final: f.path, temp: f.path + tag, contents: f.contents }))
    .sort((a, b) => Number(a.final === BUNDLE) - Number(b.final === BUNDLE)); // main.mjs last
  try {
    for (const f of files) {
      writeFileSync(f.temp, f.contents);
      utimesSync(f.temp, started, started);
    }
    for (const f of files) renameSync(f.temp, f.final);
  } finally {
    for (const f of files) {
      try {
        unlinkSync(f.temp);
      } catch {
        // renamed
      }
    }
  }
  pruneChunks(new Set(files.map((f) => path.basename(f.final))));
  return BUNDLE;
}

function pruneChunks(keep) {
  const now = Date.now();
  for (const name of readdirSync(OUT_DIR)) {
    if (keep.has(name) || !name.startsWith('chunk-')) continue;
    const p = path.join(OUT_DIR, name);
    try {
      if (now - statSync(p).mtimeMs > STALE_CHUNK_MS) unlinkSync(p);
    } catch {
      // another build removed it
    }
  }
}

/** The bundle's path, built first if stale. */
export async function ensureBuilt() {
  if (isStale()) await build();
  return BUNDLE;
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const t = performance.now();
  await build();
  process.stdout.write(`built ${path.relative(ROOT, BUNDLE)} in ${Math.round(performance.now() - t)} ms\n`);
}
