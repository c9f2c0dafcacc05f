/** Webhook deliveries with their attempts, and the test webhook, through the core's WebhookService. */
import type { MutationResolvers, QueryResolvers, Resolvers } from '../generated/types';
import { connection, envOf, freshEnv } from './common';

export const query: QueryResolvers = {
  webhookDeliveries: (_p, { status, userId, first, after }, ctx) =>
    ctx.services.webhooks.page(envOf(ctx), { status, userId, first, after }),
  webhookDelivery: (_p, { id }, ctx) => ctx.services.webhooks.get(envOf(ctx), id),
};

export const mutation: MutationResolvers = {
  sendTestWebhook: async (_p, _a, ctx) => ctx.services.webhooks.sendTest(await freshEnv(ctx)),
};

export const types: Resolvers = {
  WebhookDelivery: {
    user: (d, _a, ctx) => (d.userId ? ctx.loaders.user.load(d.userId) : null),
    device: (d, _a, ctx) => (d.deviceToken ? ctx.loaders.device.load(d.deviceToken) : null),
  },
  WebhookDeliveryConnection: connection,
};
