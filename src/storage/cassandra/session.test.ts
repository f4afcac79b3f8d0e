/** Session behaviour that needs no Cassandra: the driver client's execute is replaced per test. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Session } from './session.ts';

/** A session whose driver calls are recorded (in call order) instead of sent. */
function recording(): { session: Session; calls: string[] } {
  const session = new Session({ contactPoints: ['127.0.0.1'], localDc: 'datacenter1', writeConsistency: 'QUORUM' });
  const calls: string[] = [];
  (session.client as unknown as { execute: (cql: string) => Promise<unknown> }).execute = async (cql: string) => {
    calls.push(cql);
    return { rows: [] };
  };
  return { session, calls };
}

const microtasks = async (n: number) => {
  for (let i = 0; i < n; i++) await Promise.resolve();
};

describe('session', () => {
  it('hands the ANN queries of one event-loop turn to the driver together, after the turn', async () => {
    const { session, calls } = recording();
    const answers = ['a', 'b', 'c'].map((q) => session.execute('ann', q));
    await microtasks(20);
    assert.deepEqual(calls, [], 'held until the turn ends');
    // Asked for by an immediate of the turn that releases the first three: sent in the next turn, not lost.
    const late = new Promise((resolve) => setImmediate(() => resolve(session.execute('ann', 'd'))));
    await Promise.all(answers);
    assert.deepEqual(calls, ['a', 'b', 'c']);
    await late;
    assert.deepEqual(calls, ['a', 'b', 'c', 'd']);
  });

  it('sends other statements at once', async () => {
    const { session, calls } = recording();
    const done = session.execute('read', 'r');
    await microtasks(5);
    assert.deepEqual(calls, ['r']);
    await done;
  });
});
