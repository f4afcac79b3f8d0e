import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import cassandra from 'cassandra-driver';
import { translateDriverError } from '../storage/cassandra/driver-errors.ts';
import { loggerOptions } from './logging.ts';
import { startTestApp } from './testing.ts';

// Fake embedder: this checks what a storage failure answers and logs, nothing of meaning.
describe('a storage backend failure', () => {
  it('is answered 503 without the driver text, hosts or ports, and logged in full', async () => {
    const lines: string[] = [];
    const t = await startTestApp({ model: 'fake', logger: loggerOptions('info', { write: (l: string) => void lines.push(l) }) });
    try {
      const refused = Object.assign(new Error('connect ECONNREFUSED 10.20.30.40:9042'), { code: 'ECONNREFUSED', address: '10.20.30.40', port: 9042 });
      const driverError = new cassandra.errors.NoHostAvailableError({ '10.20.30.40:9042': refused });
      t.deps.storage.listKeyspaces = async () => {
        throw translateDriverError(driverError, { action: 'listing keyspaces' });
      };
      const res = await t.call('GET', '/v1/keyspaces/list');
      assert.equal(res.statusCode, 503);
      assert.equal(res.json().code, 'storage_unavailable');
      for (const leak of ['10.20.30.40', '9042', 'ECONNREFUSED', 'host(s)']) assert.ok(!res.body.includes(leak), `${leak} in ${res.body}`);
      const logged = lines.find((l) => l.includes(res.json().request_id) && l.includes('"level":50'));
      assert.ok(logged, lines.join(''));
      assert.match(logged, /10\.20\.30\.40:9042/);
      assert.match(logged, /All host\(s\) tried/);
    } finally {
      await t.close();
    }
  });
});
