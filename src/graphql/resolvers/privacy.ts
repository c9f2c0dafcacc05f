/** Privacy jobs, data-access exports and purges, through the same core calls as REST and gRPC. */
import { privacySubject } from '../../core/privacy/service';
import type { MutationResolvers, QueryResolvers, Resolvers } from '../generated/types';
import { connection, envOf, freshEnv } from './common';

const purgeResult = (p: { userId: string; deleted: Record<string, number> }) => ({
  ...p,
  total: Object.values(p.deleted).reduce((a, b) => a + b, 0),
});

export const query: QueryResolvers = {
  privacyJobs: (_p, { userId, first, after }, ctx) =>
    ctx.services.privacy.jobsPage(envOf(ctx), { userId, first, after }),
  privacyJob: (_p, { id }, ctx) => ctx.services.privacy.job(envOf(ctx), id),
};

export const mutation: MutationResolvers = {
  requestPrivacyExport: async (_p, { userId }, ctx) => {
    const [job] = await ctx.services.privacy.requestAccessFor(
      await freshEnv(ctx),
      privacySubject({ userId }),
    );
    if (!job) throw new Error('an access request answers at least one job');
    return job;
  },
  requestPrivacyExports: async (_p, args, ctx) =>
    ctx.services.privacy.requestAccessFor(await freshEnv(ctx), privacySubject(args)),
  purgeUser: async (_p, { userId }, ctx) => {
    const [purged] = await ctx.services.privacy.purgeFor(await freshEnv(ctx), privacySubject({ userId }));
    return purgeResult(purged ?? { userId, deleted: {} });
  },
  purgeUsers: async (_p, args, ctx) =>
    (await ctx.services.privacy.purgeFor(await freshEnv(ctx), privacySubject(args))).map(purgeResult),
};

export const types: Resolvers = {
  PrivacyJobConnection: connection,
};
