/** Users: profile, devices, events and risk summary, each relation through a per-request loader. */
import type { QueryResolvers, Resolvers } from '../generated/types';
import { compact, envOf } from './common';

export const query: QueryResolvers = {
  user: (_p, { id }, ctx) => ctx.loaders.user.load(id),
};

export const types: Resolvers = {
  User: {
    id: (u) => u.userId,
    traits: (u) => u.traits,
    devices: (u, { first, includeRemoved }, ctx) =>
      ctx.loaders.userDevices(first, includeRemoved ?? false).load(u.userId),
    events: (u, { first, after, filter }, ctx) => {
      const f = compact(filter);
      // The first page of an unfiltered list is batched across users; later pages are searches.
      if (!after && Object.keys(f).length === 0) return ctx.loaders.userEventPage(first).load(u.userId);
      return ctx.services.queries.events(envOf(ctx), { ...f, userId: u.userId }, { first, after });
    },
    riskSummary: (u, _a, ctx) => ctx.loaders.riskSummary.load(u.userId),
  },
};
