/** Signal analytics: every field is one core call on the filter its parent carries. */
import { validateEventFilter } from '../../core/queries/validate';
import type { QueryResolvers, Resolvers } from '../generated/types';
import { compact, envOf } from './common';

export const query: QueryResolvers = {
  analytics: (_p, { filter }) => {
    const f = compact(filter);
    validateEventFilter(f);
    return { filter: f };
  },
};

export const types: Resolvers = {
  Analytics: {
    total: (p, _a, ctx) => ctx.services.analytics.total(envOf(ctx), p.filter),
    actions: (p, _a, ctx) => ctx.services.analytics.actions(envOf(ctx), p.filter),
    signals: (p, { first }, ctx) => ctx.services.analytics.signals(envOf(ctx), p.filter, first),
    timeSeries: (p, { bucket }, ctx) => ctx.services.analytics.timeSeries(envOf(ctx), p.filter, bucket),
    top: (p, { dimension, first }, ctx) => ctx.services.analytics.top(envOf(ctx), dimension, p.filter, first),
  },
  TopList: {
    entries: (t) => t.entries.map((e) => ({ ...e, dimension: t.dimension })),
  },
  TopEntry: {
    user: (e, _a, ctx) => (e.dimension === 'user' ? ctx.loaders.user.load(e.key) : null),
    device: (e, _a, ctx) => (e.dimension === 'device' ? ctx.loaders.device.load(e.key) : null),
  },
};
