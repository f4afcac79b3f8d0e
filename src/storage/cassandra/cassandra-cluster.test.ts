/**
 * A node of a three-node cluster (RF 3, QUORUM writes) dies by SIGKILL while vectors are being
 * written: every acknowledged write must still be readable, searches must keep working, and the
 * node must rejoin. Runs only with VSS_TEST_CASSANDRA_CLUSTER=1, against the cluster that
 * `npm run test:cassandra-cluster` starts (`scripts/cassandra/cassandra.sh start --nodes 3`),
 * whose pid files it reads to kill and restart nodes.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { PROJECT_ROOT } from '../../config/config.ts';
import type { Storage, VectorRow } from '../api.ts';
import { openCassandraStorage } from './cassandra-storage.ts';
import { dropPrefixed as dropTestKeyspaces } from './test-support.ts';

const ENABLED = process.env.VSS_TEST_CASSANDRA_CLUSTER === '1';
const HOME = process.env.VSS_CASSANDRA_HOME ?? path.join(PROJECT_ROOT, '.cassandra');
const NODES = ['127.0.0.1', '127.0.0.2', '127.0.0.3'];
const SCRIPT = path.join(PROJECT_ROOT, 'scripts/cassandra/cassandra.sh');

const pidOf = (node: number): number => Number(readFileSync(path.join(HOME, 'c3', `node${node}`, 'cassandra.pid'), 'utf8').trim());

function kill9(node: number): void {
  process.kill(pidOf(node), 'SIGKILL');
}

function startMissingNodes(): void {
  const r = spawnSync('bash', [SCRIPT, 'start', '--nodes', '3', '--heap', process.env.CASSANDRA_HEAP ?? '768M'], { encoding: 'utf8', timeout: 240_000 });
  assert.equal(r.status, 0, `restart failed (status ${r.status}, signal ${r.signal}, error ${r.error}):\n${r.stderr}\n${r.stdout}`);
}

const dropPrefixed = (prefix: string): Promise<void> => dropTestKeyspaces(NODES, 'datacenter1', prefix);

const vec = (i: number, d: number): Float32Array => Float32Array.from({ length: d }, (_, j) => Math.sin(i * 0.37 + j * 1.3) + (j === i % d ? 2 : 0));

if (!ENABLED) {
  describe('cassandra cluster', () => {
    it('is skipped: run `npm run test:cassandra-cluster` (3 local nodes, RF 3)', { skip: 'VSS_TEST_CASSANDRA_CLUSTER is not 1' }, () => {});
  });
} else {
  describe('cassandra cluster (3 nodes, RF 3, QUORUM)', () => {
    const prefix = `t${randomBytes(5).toString('hex')}_`;
    const D = 32;
    let s: Storage;
    before(async () => {
      s = await openCassandraStorage({
        contactPoints: NODES,
        localDc: 'datacenter1',
        replication: "{'class': 'SimpleStrategy', 'replication_factor': 3}",
        systemKeyspace: `${prefix}vss_system`,
        keyspacePrefix: prefix,
        writeConsistency: 'QUORUM',
      });
      await s.createKeyspace({ name: 'durable', owner: null });
      await s.createTable({ keyspace: 'durable', name: 'v', dimension: D, metric: 'cosine', model: null });
    });
    after(async () => {
      try {
        startMissingNodes();
      } finally {
        await s?.close();
        await dropPrefixed(prefix).catch(() => undefined);
      }
    });

    it('loses no QUORUM-acknowledged write when a node is SIGKILLed mid-stream', { timeout: 600_000 }, async (t) => {
      const acked: VectorRow[] = [];
      let failures = 0;
      let next = 0;
      const writer = async (until: number): Promise<void> => {
        while (Date.now() < until) {
          const rows = Array.from({ length: 10 }, () => {
            const i = next++;
            return { key: `k${i}`, vector: vec(i, D), metadata: { i }, text: null };
          });
          try {
            await s.upsertVectors('durable', 'v', rows);
            acked.push(...rows);
          } catch (err) {
            failures++;
            assert.equal((err as { code?: string }).code, 'storage_unavailable', String(err));
          }
        }
      };
      const end = Date.now() + 6000;
      const writers = [writer(end), writer(end)];
      await new Promise((r) => setTimeout(r, 2000));
      kill9(3);
      t.diagnostic('node 3 killed (SIGKILL)');
      await Promise.all(writers);
      t.diagnostic(`${acked.length} rows acknowledged, ${failures} calls failed (storage_unavailable) around the kill`);
      assert.ok(acked.length > 0);

      // Every acknowledged row is there at QUORUM with one node down.
      for (const r of acked) {
        const got = await s.getVector('durable', 'v', r.key);
        assert.ok(got, `acknowledged row ${r.key} missing`);
        assert.deepEqual([...got.vector], [...r.vector]);
      }
      assert.ok((await s.countVectors('durable', 'v')) >= acked.length);
      const hits = await s.search('durable', 'v', { vector: acked[5].vector, metric: 'cosine', candidates: 10, limit: 3 });
      assert.equal(hits[0].key, acked[5].key);

      // The node comes back; then the first node dies: QUORUM now needs the restarted one.
      startMissingNodes();
      t.diagnostic('node 3 restarted');
      kill9(1);
      t.diagnostic('node 1 killed (SIGKILL)');
      for (const r of acked) assert.ok(await s.getVector('durable', 'v', r.key), `row ${r.key} missing after node 1 died`);
      assert.equal(await s.ping(), true);
    });
  });
}
