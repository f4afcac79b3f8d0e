/** The hybrid search fields (issue #25) go to the server as given; what it answers comes back whole. */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { VssClient, type SearchRequest } from './index.ts';

it('search sends mode, fusion, mmr and rerank unchanged and to /v1/search/', async () => {
  const sent: { url: string; body: unknown; key: string | null }[] = [];
  const capture: typeof fetch = async (input, init) => {
    sent.push({ url: String(input), body: JSON.parse(String(init?.body)), key: new Headers(init?.headers).get('x-api-key') });
    return Response.json({ matches: [{ key: 'a', score: 0.03, metadata: {}, scores: { semantic: 0.8, lexical: null } }], note: 'reranker timed out' });
  };
  const request: SearchRequest = {
    keyspace: 'ks',
    table: 't',
    query: 'error code E1234',
    mode: 'hybrid',
    fusion: { method: 'relative', alpha: 0.4 },
    mmr: { diversity: 0.3, candidates: 50 },
    rerank: true,
    final_top_k: 5,
  };
  const answer = await new VssClient({ url: 'http://127.0.0.1:1/v1/', apiKey: 'k-0123456789abcdef', fetch: capture }).search(request);
  assert.deepEqual(sent, [{ url: 'http://127.0.0.1:1/v1/search/', body: request, key: 'k-0123456789abcdef' }]);
  assert.deepEqual(answer.matches[0].scores, { semantic: 0.8, lexical: null });
  assert.equal(answer.note, 'reranker timed out');
});
