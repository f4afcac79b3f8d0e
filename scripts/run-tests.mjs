#!/usr/bin/env node
// Runs every *.test.ts under src/, test/ and clients/ with Node's own test runner (through tsx).
// Node 20's --test does not expand globs itself, so the files are found here.
// Usage: node scripts/run-tests.mjs [path-substring ...]  (filters the files)
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';

const roots = ['src', 'test', 'clients'];
const filters = process.argv.slice(2);
const files = [];
const walk = (dir) => {
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules') continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p);
    else if (name.endsWith('.test.ts')) files.push(p);
  }
};
for (const r of roots) {
  try { walk(r); } catch { /* root absent */ }
}
const selected = filters.length ? files.filter((f) => filters.some((s) => f.includes(s))) : files;
if (selected.length === 0) {
  console.error('no test files matched');
  process.exit(1);
}
const res = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=1', ...selected.sort()], { stdio: 'inherit' });
process.exit(res.status ?? 1);
