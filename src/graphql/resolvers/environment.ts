/** The caller and its environment; setting the webhook URL. */
import type { MutationResolvers, QueryResolvers, Resolvers } from '../generated/types';
import { envOf, freshEnv } from './common';

export const query: QueryResolvers = {
  viewer: (_p, _a, ctx) => ctx.principal,
  environment: (_p, _a, ctx) => freshEnv(ctx),
};

export const mutation: MutationResolvers = {
  setWebhookUrl: (_p, { url }, ctx) => ctx.services.environments.setWebhookUrl(envOf(ctx), url ?? null),
};

export const types: Resolvers = {
  Viewer: {
    environment: (p) => p.env,
    credentialKind: (p) => p.kind,
    canMutate: (p) => p.kind === 'secret',
  },
};
