/** The TypeScript quick start of README.md, run as written against a real server. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, it } from 'node:test';
import { startTempServer, type TempServer } from './test-server.ts';

const PACKAGE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const TSC = path.resolve(PACKAGE, '../../node_modules/typescript/bin/tsc');
const ADMIN = 'readme-admin-key-0123456789abcdef';
let running: TempServer;

before(async () => {
  running = await startTempServer('readme', ADMIN);
});
after(() => running?.stop());

/** The first ```js block of the README's TypeScript client section. */
async function quickStart(): Promise<string> {
  const readme = await readFile(path.join(PACKAGE, '../../README.md'), 'utf8');
  const section = readme.split('\n## The TypeScript client\n')[1];
  assert.ok(section, 'README.md has a "## The TypeScript client" section');
  const block = /```js\n([\s\S]*?)\n```/.exec(section.split('\n## ')[0]);
  assert.ok(block, 'the section has a ```js block');
  return block[1];
}

it('the README quick start runs as written, in plain Node on the built package, and finds the cat', async () => {
  const code = await quickStart();
  assert.match(code, /from '@vss\/client'/);
  // The build the README names (npm run build -w @vss/client), then the block as quickstart.mjs without tsx.
  const build = spawnSync(process.execPath, [TSC, '-p', path.join(PACKAGE, 'tsconfig.build.json')], { encoding: 'utf8', timeout: 120_000 });
  assert.equal(build.status, 0, build.stdout + build.stderr);
  // Inside the package, so '@vss/client' resolves as the package itself (as it does for a user who installed it).
  const file = path.join(PACKAGE, `.quickstart-${randomUUID()}.mjs`);
  await writeFile(file, code);
  try {
    const run = spawnSync(process.execPath, [file], {
      env: { ...process.env, VSS_URL: running.server.url, VSS_API_KEY: ADMIN },
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(run.status, 0, run.stderr);
    assert.match(run.stdout, /^cat 0\.\d{3}\n$/);
  } finally {
    await rm(file, { force: true });
  }
  const stored = await running.server.call('POST', '/v1/vector/count', { keyspace: 'default_keyspace', table: 'vector' });
  assert.equal(stored.body.count, 2);
});
