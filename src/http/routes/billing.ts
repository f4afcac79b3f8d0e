import type { FastifyPluginAsync } from 'fastify';
import { handleCheckoutWebhook } from '../../service/billing.ts';
import type { Deps } from '../../service/deps.ts';
import { answers } from '../openapi-responses.ts';
import { WebhookAnswer } from '../schemas/index.ts';

const WEBHOOK_BODY_LIMIT = 1024 * 1024;

/**
 * The payment provider's webhook. Signatures are over the exact bytes sent, so this plugin
 * (encapsulated: the parser applies here only) keeps the body raw.
 */
export const billingRoutes: FastifyPluginAsync<{ deps: Deps }> = async (app, { deps }) => {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: WEBHOOK_BODY_LIMIT }, (_req, body, done) => done(null, body));

  app.post('/v1/stripe/webhook/checkout', {
    schema: { tags: ['billing'], summary: 'Stripe checkout webhook (authenticated by Stripe-Signature)', response: answers({ 200: WebhookAnswer }, ['malformed_body', 'payload_too_large', 'not_ready', 'user_not_found', 'storage_unavailable', 'insufficient_storage']) },
    config: { permission: 'public' },
    bodyLimit: WEBHOOK_BODY_LIMIT,
    handler: (req) => {
      const sig = req.headers['stripe-signature'];
      return handleCheckoutWebhook(deps, Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0), typeof sig === 'string' ? sig : undefined);
    },
  });
};
