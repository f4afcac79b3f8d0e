import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Metrics } from './metrics.ts';

describe('Metrics, index gauges', () => {
  it("reports each table's rows, indexed and pending rows, and its in-memory segments and posting lists only where the backend keeps them", async () => {
    let lists: boolean | undefined = false;
    const m = new Metrics(() => [
      { keyspace: 'ks', table: 'big', rows: 30, indexed: 20, pending: 10, inMemorySegments: 1, postingLists: lists },
      { keyspace: 'ks', table: 'small', rows: 3, indexed: 0, pending: 0 },
    ]);
    let body = await m.registry.metrics();
    assert.match(body, /vss_index_rows\{keyspace="ks",table="big"\} 30/);
    assert.match(body, /vss_index_pending_rows\{keyspace="ks",table="big"\} 10/);
    assert.match(body, /vss_index_segments_in_memory\{keyspace="ks",table="big"\} 1/);
    assert.doesNotMatch(body, /vss_index_segments_in_memory\{keyspace="ks",table="small"\}/);
    assert.match(body, /vss_lexical_posting_lists\{keyspace="ks",table="big"\} 0/);
    assert.doesNotMatch(body, /vss_lexical_posting_lists\{keyspace="ks",table="small"\}/);
    lists = true;
    body = await m.registry.metrics();
    assert.match(body, /vss_lexical_posting_lists\{keyspace="ks",table="big"\} 1/);
    lists = undefined;
    body = await m.registry.metrics();
    assert.doesNotMatch(body, /vss_lexical_posting_lists\{/);
  });
});
