import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Stripe from 'stripe';
import { startTestApp, type TestApp } from './testing.ts';

const SECRET = 'whsec_test_secret_for_vss';

function checkoutEvent(id: string, object: Record<string, unknown>, type = 'checkout.session.completed') {
  return JSON.stringify({ id, object: 'event', type, api_version: '2024-06-20', created: Math.floor(Date.now() / 1000), data: { object: { object: 'checkout.session', payment_status: 'paid', ...object } } });
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

  it('waits for the payment: an unpaid completed session changes nothing, its async_payment_succeeded does', async () => {
    await t.deps.storage.setUserPlan(userId, 'free');
    const unpaid = checkoutEvent('evt_5', { client_reference_id: userId, payment_status: 'unpaid' });
    let res = await send(unpaid, sign(unpaid));
    assert.equal(res.json().status, 'ignored');
    assert.equal(await plan(), 'free');
    const failed = checkoutEvent('evt_6', { client_reference_id: userId, payment_status: 'unpaid' }, 'checkout.session.async_payment_failed');
    res = await send(failed, sign(failed));
    assert.equal(res.json().status, 'ignored');
    assert.equal(await plan(), 'free');
    const paid = checkoutEvent('evt_7', { client_reference_id: userId, payment_status: 'paid' }, 'checkout.session.async_payment_succeeded');
    res = await send(paid, sign(paid));
    assert.equal(res.json().status, 'applied');
    assert.equal(await plan(), 'pro');
  });

  it('never moves an administrator (or any non-free user) to another plan', async () => {
    const admin = await t.deps.storage.getUserByEmail('admin@localhost');
    assert.equal(admin!.plan, 'admin');
    const payload = checkoutEvent('evt_8', { client_reference_id: admin!.id });
    const res = await send(payload, sign(payload));
    assert.equal(res.json().status, 'ignored');
    assert.equal((await t.deps.storage.getUser(admin!.id))!.plan, 'admin');
  });

  it('answers a signed body that is not a readable event 400, naming the fields (never 5xx: Stripe would retry it)', async () => {
    const cases: [string, string[]][] = [
      [JSON.stringify({ id: 'evt_m1', type: 'checkout.session.completed' }), ['/body/data/object']],
      [JSON.stringify({ id: 'evt_m2', type: 'checkout.session.completed', data: null }), ['/body/data/object']],
      [JSON.stringify({ id: { x: 1 }, type: 'checkout.session.completed' }), ['/body/id']],
      [JSON.stringify({ type: 'invoice.paid' }), ['/body/id']],
      [JSON.stringify({ id: 'evt_m3' }), ['/body/type']],
      [JSON.stringify({ id: 'evt_m4', type: 'checkout.session.completed', data: { object: { client_reference_id: { x: 1 }, customer_email: 7 } } }), ['/body/data/object/client_reference_id', '/body/data/object/customer_email']],
      ['null', ['/body']],
      ['[1,2]', ['/body']],
      ['"evt"', ['/body']],
    ];
    for (const [payload, paths] of cases) {
      const res = await send(payload, sign(payload));
      assert.equal(res.statusCode, 400, `${payload}: ${res.body}`);
      assert.equal(res.json().code, 'validation_failed');
      assert.deepEqual(res.json().errors.map((e: { path: string }) => e.path).sort(), paths, payload);
    }
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
