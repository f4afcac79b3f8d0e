#!/usr/bin/env node
// The `vss` command: TypeScript sources run through tsx, so no build step is needed.

// First of all, before anything slow: `--key` would otherwise stay readable by every local user in
// `ps` and /proc/<pid>/cmdline for the whole run. On Linux the new title overwrites the arguments
// there. (The shell history and the moment before this line still see it: scripts should set
// VSS_API_KEY or the config file instead.)
const command = process.argv.slice(2).find((arg, i, args) => !arg.startsWith('-') && !['--url', '--key', '--config', '--timeout'].includes(args[i - 1]));
process.title = command ? `vss ${command}` : 'vss';

// A reader that stops early (`vss export | head`) closes the pipe: that is its choice, not a
// failure, so stop quietly with 0, as if the output had ended there (a non-zero status would fail
// `set -o pipefail` scripts that only wanted the first lines).
process.stdout.on('error', (err) => {
  if (err.code === 'EPIPE') process.exit(0);
  throw err;
});

const { register } = await import('tsx/esm/api');
register();
const { run } = await import('../src/cli/main.ts');
const code = await run(process.argv.slice(2));
// `serve` never returns; everything else exits with its code.
process.exitCode = code;
