/** Events: look-up and search, their signals, device, user, and the policy revision behind a verdict. */
import { eventRole } from '../../core/events/catalog';
import { isTestTokenPolicy } from '../../core/policies/model';
import { riskLevel } from '../../core/scoring/signals';
import type { QueryResolvers, Resolvers } from '../generated/types';
import { compact, connection, envOf } from './common';

export const query: QueryResolvers = {
  event: (_p, { id }, ctx) => ctx.services.queries.event(envOf(ctx), id),
  events: (_p, { filter, first, after }, ctx) =>
    ctx.services.queries.events(envOf(ctx), compact(filter), { first, after }),
};

export const types: Resolvers = {
  Event: {
    user: (e, _a, ctx) => (e.userId ? ctx.loaders.user.load(e.userId) : null),
    device: (e, _a, ctx) => (e.deviceToken ? ctx.loaders.device.load(e.deviceToken) : null),
    kind: (e) => eventRole(e.name, e.action),
    riskLevel: (e) => (e.risk === null ? null : riskLevel(e.risk)),
    signals: (e) => e.signals.map((name) => ({ name, details: e.signalDetails[name] ?? {} })),
    headers: (e) => e.context.headers,
  },
  PolicyRef: {
    testToken: (ref) => isTestTokenPolicy(ref.id),
    revisionDetails: async (ref, _a, ctx) =>
      isTestTokenPolicy(ref.id)
        ? null
        : ((await ctx.loaders.policyRevisions.load(ref.id)).find((r) => r.id === ref.revision) ?? null),
    current: (ref, _a, ctx) => (isTestTokenPolicy(ref.id) ? null : ctx.loaders.policy.load(ref.id)),
  },
  EventConnection: connection,
};
