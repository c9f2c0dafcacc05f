/** The caller and its environment; setting the webhook URL and the retention. */
import { retentionDaysOf } from '../../core/retention';
import type { MutationResolvers, QueryResolvers, Resolvers } from '../generated/types';
import { envOf, freshEnv } from './common';

export const query: QueryResolvers = {
  viewer: (_p, _a, ctx) => ctx.principal,
  environment: (_p, _a, ctx) => freshEnv(ctx),
};

export const mutation: MutationResolvers = {
  setWebhookUrl: (_p, { url }, ctx) => ctx.services.environments.setWebhookUrl(envOf(ctx), url ?? null),
  setRetentionDays: (_p, { days }, ctx) => ctx.services.environments.setRetentionDays(envOf(ctx), days),
};

export const types: Resolvers = {
  Viewer: {
    environment: (p) => p.env,
    credentialKind: (p) => p.kind,
    canMutate: (p) => p.kind === 'secret',
  },
  Environment: {
    retentionDays: (e) => retentionDaysOf(e),
  },
};
