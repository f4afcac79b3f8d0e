import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { it } from 'node:test';
import { generateTypes, GENERATED_PATH } from './generate-types.ts';

it('the checked-in request and answer types are what the server document generates now', async () => {
  const fresh = await generateTypes();
  assert.ok(fresh.includes('"/v1/search/"') && fresh.includes('"/v1/vector/batch"') && fresh.includes('Problem:'));
  const checkedIn = await readFile(GENERATED_PATH, 'utf8');
  assert.ok(checkedIn === fresh, 'src/types/openapi.ts is stale: run `npm run generate -w @vss/client` and commit it');
});
