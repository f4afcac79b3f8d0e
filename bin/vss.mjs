#!/usr/bin/env node
// The `vss` command: TypeScript sources run through tsx, so no build step is needed.
import { register } from 'tsx/esm/api';

register();
const { run } = await import('../src/cli/main.ts');
const code = await run(process.argv.slice(2));
// `serve` never returns; everything else exits with its code.
process.exitCode = code;
