#!/usr/bin/env node
// `npm start`: (re)builds dist/server/main.mjs when it is missing or older than src/ (see
// build.mjs), then runs it in this process. Stack traces go through the bundle's source map.
import { pathToFileURL } from 'node:url';
import { ensureBuilt } from './build.mjs';

process.setSourceMapsEnabled(true);
const bundle = await ensureBuilt();
await import(pathToFileURL(bundle).href);
