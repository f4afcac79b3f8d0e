import type Stripe from 'stripe';
import { invalid, ServiceError, type FieldError } from '../errors.ts';
import { lazyImport } from '../platform/lazy-import.ts';
import type { Deps } from './deps.ts';

const loadStripe = lazyImport(() => import('stripe'));

/** Stripe's default: a signature older than this is a replay, not a delivery. */
export const SIGNATURE_TOLERANCE_SECONDS = 300;

interface CheckoutSession {
  client_reference_id?: string | null;
  payment_status?: string | null;
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
 * Verifies the raw body against `Stripe-Signature` with the stripe library, then applies a paid
 * checkout (`checkout.session.completed` with payment_status paid, or
 * `checkout.session.async_payment_succeeded`) by moving a free user to the paid plan. The event
 * id is stored in the same transaction as the plan change, so a replay is acknowledged and not
 * applied twice.
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

  const { id, type, session, errors } = readEvent(event as unknown);
  if (errors.length > 0) throw invalid(errors, 'The event verifies but is not a Stripe event this endpoint can read.');
  const ignore = async (reason: string): Promise<WebhookOutcome> => {
    // Recorded (a replay is then a duplicate) and acknowledged: a retry would not change the answer.
    const first = await deps.storage.applyWebhookEvent(id, type, null);
    return { received: true, event_id: id, type, status: first === 'duplicate' ? 'duplicate' : 'ignored', reason };
  };
  if (session === null) return ignore('event type not handled');
  // `completed` arrives before a delayed payment method has paid; `async_payment_succeeded` follows.
  if (!PAID.has(session.payment_status ?? '')) return ignore(`payment status "${session.payment_status ?? 'missing'}"`);
  let user = session.client_reference_id ? await deps.storage.getUser(session.client_reference_id) : null;
  const email = session.customer_details?.email ?? session.customer_email ?? null;
  if (user === null && email) user = await deps.storage.getUserByEmail(email);
  if (user === null) return ignore('no matching user');
  // A payment lifts a user from the free plan; it never moves anyone (an administrator, a user
  // already paid up) to another plan.
  if (user.plan !== 'free') return ignore(`user is on the ${user.plan} plan`);
  const outcome = await deps.storage.applyWebhookEvent(id, type, { userId: user.id, plan: deps.config.paidPlan });
  return { received: true, event_id: id, type, status: outcome };
}

const HANDLED = new Set(['checkout.session.completed', 'checkout.session.async_payment_succeeded']);
const PAID = new Set(['paid', 'no_payment_required']);

/**
 * The fields used, checked: the signature proves who sent the body, not that it has the shape
 * of an event, and a 5xx would make Stripe retry it for days. `session` is null for event types
 * that change no plan.
 */
function readEvent(event: unknown): { id: string; type: string; session: CheckoutSession | null; errors: FieldError[] } {
  const errors: FieldError[] = [];
  const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  const isText = (v: unknown, max = 255): v is string => typeof v === 'string' && v.length > 0 && v.length <= max && v.isWellFormed();
  if (!isObject(event)) return { id: '', type: '', session: null, errors: [{ path: '/body', message: 'must be an event object' }] };
  if (!isText(event.id)) errors.push({ path: '/body/id', message: 'must be the event id (a string of 1 to 255 characters)' });
  if (!isText(event.type)) errors.push({ path: '/body/type', message: 'must be the event type (a string of 1 to 255 characters)' });
  if (errors.length > 0 || !HANDLED.has(event.type as string)) return { id: String(event.id), type: String(event.type), session: null, errors };
  const object = isObject(event.data) ? event.data.object : undefined;
  if (!isObject(object)) return { id: event.id as string, type: event.type as string, session: null, errors: [{ path: '/body/data/object', message: 'must be the checkout session' }] };
  const optionalText = (v: unknown, path: string): void => {
    if (v !== undefined && v !== null && !isText(v, 1024)) errors.push({ path, message: 'must be a string or null' });
  };
  optionalText(object.client_reference_id, '/body/data/object/client_reference_id');
  optionalText(object.customer_email, '/body/data/object/customer_email');
  optionalText(object.payment_status, '/body/data/object/payment_status');
  const details = object.customer_details;
  if (details !== undefined && details !== null && !isObject(details)) errors.push({ path: '/body/data/object/customer_details', message: 'must be an object or null' });
  else if (isObject(details)) optionalText(details.email, '/body/data/object/customer_details/email');
  return { id: event.id as string, type: event.type as string, session: object as CheckoutSession, errors };
}
