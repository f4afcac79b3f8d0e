import type Stripe from 'stripe';
import { ServiceError } from '../errors.ts';
import { lazyImport } from '../lazy-import.ts';
import type { Deps } from './deps.ts';

const loadStripe = lazyImport(() => import('stripe'));

/** Stripe's default: a signature older than this is a replay, not a delivery. */
export const SIGNATURE_TOLERANCE_SECONDS = 300;

interface CheckoutSession {
  client_reference_id?: string | null;
  customer_email?: string | null;
  customer_details?: { email?: string | null } | null;
}

export interface WebhookOutcome {
  received: true;
  event_id: string;
  type: string;
  status: 'applied' | 'duplicate' | 'ignored';
  reason?: string;
}

/**
 * Verifies the raw body against `Stripe-Signature` with the stripe library, then applies
 * `checkout.session.completed` by moving the user to the paid plan. The event id is stored in
 * the same transaction as the plan change, so a replay is acknowledged and not applied twice.
 */
export async function handleCheckoutWebhook(deps: Deps, rawBody: Buffer, signature: string | undefined): Promise<WebhookOutcome> {
  const secret = deps.config.stripeWebhookSecret;
  if (secret === undefined) {
    throw new ServiceError('not_ready', 'The payment webhook is not configured on this server (STRIPE_WEBHOOK_SECRET).');
  }
  if (!signature) throw new ServiceError('validation_failed', 'The Stripe-Signature header is missing.', { errors: [{ path: '/headers/stripe-signature', message: 'is required' }] });
  const { default: StripeLib } = await loadStripe();
  let event: Stripe.Event;
  try {
    event = StripeLib.webhooks.constructEvent(rawBody, signature, secret, SIGNATURE_TOLERANCE_SECONDS);
  } catch {
    // The library's message can echo header contents; say only what failed.
    throw new ServiceError('validation_failed', 'The Stripe-Signature does not verify (wrong secret, altered body, or a stale timestamp).', {
      errors: [{ path: '/headers/stripe-signature', message: 'does not verify' }],
    });
  }

  if (event.type !== 'checkout.session.completed') {
    const first = await deps.storage.applyWebhookEvent(event.id, event.type, null);
    return { received: true, event_id: event.id, type: event.type, status: first === 'duplicate' ? 'duplicate' : 'ignored', reason: 'event type not handled' };
  }
  const session = event.data.object as CheckoutSession;
  let user = session.client_reference_id ? await deps.storage.getUser(session.client_reference_id) : null;
  const email = session.customer_details?.email ?? session.customer_email ?? null;
  if (user === null && email) user = await deps.storage.getUserByEmail(email);
  if (user === null) {
    // Acknowledged (a retry would not find the user either), recorded, and visible in the log.
    const first = await deps.storage.applyWebhookEvent(event.id, event.type, null);
    return { received: true, event_id: event.id, type: event.type, status: first === 'duplicate' ? 'duplicate' : 'ignored', reason: 'no matching user' };
  }
  const outcome = await deps.storage.applyWebhookEvent(event.id, event.type, { userId: user.id, plan: deps.config.paidPlan });
  return { received: true, event_id: event.id, type: event.type, status: outcome };
}
