/** Privacy jobs, data-access exports and purges, through the core's PrivacyService. */
import { pageOfList, pageSize } from '../../core/queries/pagination';
import type { MutationResolvers, QueryResolvers, Resolvers } from '../generated/types';
import { connection, envOf, freshEnv } from './common';

/** The service lists jobs newest first by limit only; pages are cut from its newest 500. */
const REACHABLE_JOBS = 500;

export const query: QueryResolvers = {
  privacyJobs: async (_p, { userId, first, after }, ctx) =>
    pageOfList(await ctx.services.privacy.jobs(envOf(ctx), REACHABLE_JOBS, userId ?? undefined), pageSize(first, 20), after, (j) => j.id),
  privacyJob: (_p, { id }, ctx) => ctx.services.privacy.job(envOf(ctx), id),
};

export const mutation: MutationResolvers = {
  requestPrivacyExport: async (_p, { userId }, ctx) => ctx.services.privacy.requestAccess(await freshEnv(ctx), userId),
  purgeUser: async (_p, { userId }, ctx) => {
    const { deleted } = await ctx.services.privacy.purge(await freshEnv(ctx), userId);
    return { userId, deleted, total: Object.values(deleted).reduce((a, b) => a + b, 0) };
  },
};

export const types: Resolvers = {
  PrivacyJobConnection: connection,
};
