import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Stripe from 'stripe';
import { startTestApp, type TestApp } from './testing.ts';

const SECRET = 'whsec_test_secret_for_vss';

function checkoutEvent(id: string, object: Record<string, unknown>, type = 'checkout.session.completed') {
  return JSON.stringify({ id, object: 'event', type, api_version: '2024-06-20', created: Math.floor(Date.now() / 1000), data: { object: { object: 'checkout.session', ...object } } });
}

// Fake embedder: billing only.
describe('POST /v1/stripe/webhook/checkout', () => {
  let t: TestApp;
  let userId: string;
  before(async () => {
    t = await startTestApp({ model: 'fake', env: { STRIPE_WEBHOOK_SECRET: SECRET } });
    userId = (await t.call('POST', '/v1/user/', { name: 'Payer', email: 'payer@example.com' })).json().account_id;
  });
  after(() => t.close());

  const send = (payload: string, header: string | null) =>
    t.app.inject({ method: 'POST', url: '/v1/stripe/webhook/checkout', headers: { 'content-type': 'application/json', ...(header ? { 'stripe-signature': header } : {}) }, payload });
  const sign = (payload: string, opts: { secret?: string; timestamp?: number } = {}) =>
    Stripe.webhooks.generateTestHeaderString({ payload, secret: opts.secret ?? SECRET, ...(opts.timestamp ? { timestamp: opts.timestamp } : {}) });
  const plan = async () => (await t.deps.storage.getUser(userId))!.plan;

  it('refuses a missing, wrong-secret, tampered or stale signature with 400 and changes nothing', async () => {
    const payload = checkoutEvent('evt_bad', { client_reference_id: userId });
    const cases = [
      null,
      sign(payload, { secret: 'whsec_other' }),
      sign(payload.replace('evt_bad', 'evt_bax')),
      sign(payload, { timestamp: Math.floor(Date.now() / 1000) - 3600 }),
    ];
    for (const header of cases) {
      const res = await send(payload, header);
      assert.equal(res.statusCode, 400, res.body);
      assert.equal(res.json().code, 'validation_failed');
      assert.ok(!res.body.includes(SECRET));
    }
    assert.equal(await plan(), 'free');
  });

  it('applies checkout.session.completed once; a replay is acknowledged, not applied again', async () => {
    const payload = checkoutEvent('evt_1', { client_reference_id: userId });
    const res = await send(payload, sign(payload));
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().status, 'applied');
    assert.equal(await plan(), 'pro');
    await t.deps.storage.setUserPlan(userId, 'free');
    const replay = await send(payload, sign(payload));
    assert.equal(replay.statusCode, 200);
    assert.equal(replay.json().status, 'duplicate');
    assert.equal(await plan(), 'free');
  });

  it('finds the user by the customer e-mail when there is no client_reference_id', async () => {
    const payload = checkoutEvent('evt_2', { customer_details: { email: 'payer@example.com' } });
    const res = await send(payload, sign(payload));
    assert.equal(res.json().status, 'applied');
    assert.equal(await plan(), 'pro');
  });

  it('acknowledges other event types and unknown users without applying anything', async () => {
    await t.deps.storage.setUserPlan(userId, 'free');
    const other = checkoutEvent('evt_3', { client_reference_id: userId }, 'invoice.paid');
    let res = await send(other, sign(other));
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().status, 'ignored');
    const unknown = checkoutEvent('evt_4', { client_reference_id: 'nobody', customer_email: 'nobody@example.com' });
    res = await send(unknown, sign(unknown));
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().status, 'ignored');
    assert.equal(await plan(), 'free');
  });
});

describe('webhook without a configured secret', () => {
  let t: TestApp;
  before(async () => (t = await startTestApp({ model: 'fake' })));
  after(() => t.close());
  it('answers 503', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/v1/stripe/webhook/checkout', headers: { 'content-type': 'application/json', 'stripe-signature': 't=1,v1=x' }, payload: '{}' });
    assert.equal(res.statusCode, 503);
    assert.equal(res.json().code, 'not_ready');
  });
});
