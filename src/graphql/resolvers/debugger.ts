/** The debugger: rejected track payloads with their reasons. */
import type { QueryResolvers, Resolvers } from '../generated/types';
import { compact, connection, envOf } from './common';

export const query: QueryResolvers = {
  rejectedPayloads: (_p, { filter, first, after }, ctx) =>
    ctx.services.queries.rejected(envOf(ctx), compact(filter), { first, after }),
};

export const types: Resolvers = {
  RejectedPayloadConnection: connection,
};
