/** VssVectorStore (LangChain.js) against a real server with the real model. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Document } from '@langchain/core/documents';
import { SyntheticEmbeddings } from '@langchain/core/utils/testing';
import { startTempServer, type TempServer } from './test-server.ts';
import { VssClient } from './index.ts';
import { VssServerEmbeddings, VssVectorStore } from './langchain.ts';

const ADMIN = 'langchain-admin-key-0123456789abcdef';

const docs = [
  new Document({ pageContent: 'A cat is lying on a sofa.', metadata: { kind: 'animal', n: 1 } }),
  new Document({ pageContent: 'A kitten sleeps on the couch.', metadata: { kind: 'animal', n: 2 } }),
  new Document({ pageContent: 'Let the dough rise before baking the bread.', metadata: { kind: 'food', n: 3 } }),
  new Document({ pageContent: 'The mechanic replaced the brakes of the car.', metadata: { kind: 'machine', n: 4 } }),
];
const ids = ['cat', 'kitten', 'bread', 'car'];

describe('VssVectorStore against a real server', () => {
  let running: TempServer;
  let client: VssClient;

  before(async () => {
    running = await startTempServer('langchain', ADMIN);
    client = new VssClient({ url: running.server.url, apiKey: ADMIN });
  });
  after(() => running?.stop());

  it('with embeddings null the server embeds: ids kept, search by meaning, scores, filters, retriever, delete', async () => {
    const store = await VssVectorStore.fromDocuments(docs, null, { client, table: 'lc_server', ids });
    assert.deepEqual((await client.list({ keyspace: 'default_keyspace', table: 'lc_server' })).vectors.map((v) => v.key).sort(), [...ids].sort());

    const [best] = await store.similaritySearch('a pet resting on furniture', 1);
    assert.ok(best.id === 'cat' || best.id === 'kitten', `got ${best.id}`);
    assert.deepEqual(best.metadata.kind, 'animal');
    assert.ok(!('text' in best.metadata));

    const scored = await store.similaritySearchWithScore('baking bread at home', 4);
    assert.equal(scored[0][0].pageContent, 'Let the dough rise before baking the bread.');
    assert.ok(scored.every(([, s], i) => i === 0 || s <= scored[i - 1][1]), 'best first');

    const filtered = await store.similaritySearch('a pet resting on furniture', 4, { kind: { $ne: 'animal' } });
    assert.deepEqual(filtered.map((d) => d.id).sort(), ['bread', 'car']);

    const retrieved = await store.asRetriever({ k: 1 }).invoke('fixing a vehicle');
    assert.deepEqual(retrieved.map((d) => d.id), ['car']);

    await store.delete({ ids: ['car'] });
    await store.delete({ filter: { kind: 'food' } });
    assert.equal((await client.count({ keyspace: 'default_keyspace', table: 'lc_server' })).count, 2);
  });

  it('with an Embeddings the vectors are computed here and sent; query vectors too', async () => {
    const synthetic = new SyntheticEmbeddings({ vectorSize: 8 });
    const store = await VssVectorStore.fromTexts(docs.map((d) => d.pageContent), { from: 'texts' }, synthetic, { client, table: 'lc_client' });
    const [first] = (await client.list({ keyspace: 'default_keyspace', table: 'lc_client', include_vector: true })).vectors;
    const expected = await synthetic.embedQuery(first.text!);
    assert.deepEqual(first.vector!.map((v) => v.toFixed(5)), expected.map((v) => Math.fround(v).toFixed(5)));
    assert.equal(first.metadata.from, 'texts');

    const exact = await store.similaritySearchVectorWithScore(expected, 1);
    assert.equal(exact[0][0].pageContent, first.text);
    assert.ok(exact[0][1] > 0.9999);

    // The real model on this side (through the server's embeddings endpoint): meaning still found.
    const meaningful = new VssVectorStore(new VssServerEmbeddings(client), { client, table: 'lc_vectors' });
    await meaningful.addVectors(await meaningful.embeddings.embedDocuments(docs.map((d) => d.pageContent)), docs, { ids });
    assert.equal((await meaningful.similaritySearch('fixing a vehicle', 1))[0].id, 'car');
  });

  it('maxMarginalRelevanceSearch sends the server mmr with diversity = 1 - lambda', async () => {
    const bodies: any[] = [];
    const capture: typeof fetch = async (input, init) => {
      bodies.push(JSON.parse(String(init?.body)));
      return Response.json({ matches: [{ key: 'cat', score: 0.9, metadata: { text: 'A cat.', kind: 'animal' } }] });
    };
    const store = new VssVectorStore(null, { client: new VssClient({ url: 'http://127.0.0.1:1', fetch: capture }), table: 't' });
    const found = await store.maxMarginalRelevanceSearch('pets', { k: 3, fetchK: 10, lambda: 0.25, filter: { kind: 'animal' } });
    assert.deepEqual(bodies[0], { keyspace: 'default_keyspace', table: 't', final_top_k: 3, query: 'pets', mmr: { diversity: 0.75, candidates: 10 }, filter: { kind: 'animal' } });
    assert.deepEqual(found.map((d) => [d.id, d.pageContent, d.metadata]), [['cat', 'A cat.', { kind: 'animal' }]]);
  });

  it('maxMarginalRelevanceSearch on the server, when its search takes mmr', async (t) => {
    const document = (await (await fetch(`${running.server.url}/v1/openapi.json`)).json()) as any;
    const searchBody = document.paths['/v1/search/'].post.requestBody.content['application/json'].schema;
    if (!JSON.stringify(searchBody).includes('"mmr"')) {
      t.skip('this server has no mmr in its search schema yet (issue #25)');
      return;
    }
    const store = await VssVectorStore.fromDocuments(docs, null, { client, table: 'lc_mmr', ids });
    const relevant = await store.maxMarginalRelevanceSearch('a cat on a couch', { k: 2, fetchK: 4, lambda: 1 });
    const diverse = await store.maxMarginalRelevanceSearch('a cat on a couch', { k: 2, fetchK: 4, lambda: 0 });
    assert.deepEqual(relevant.map((d) => d.id).sort(), ['cat', 'kitten']);
    assert.equal(diverse.filter((d) => d.id === 'cat' || d.id === 'kitten').length, 1, 'near-duplicates dropped');
  });
});
