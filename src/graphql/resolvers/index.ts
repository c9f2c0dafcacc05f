/** Every resolver, merged into the one typed map the server runs. */
import type { Resolvers } from '../generated/types';
import { DateTimeScalar, JSONScalar } from '../scalars';
import { pageInfoResolvers } from './common';
import { enumResolvers } from './enums';
import * as analytics from './analytics';
import * as debuggerLog from './debugger';
import * as devices from './devices';
import * as environment from './environment';
import * as events from './events';
import * as lists from './lists';
import * as policies from './policies';
import * as privacy from './privacy';
import * as users from './users';
import * as webhooks from './webhooks';

export const resolvers: Resolvers = {
  ...enumResolvers,
  DateTime: DateTimeScalar,
  JSON: JSONScalar,
  PageInfo: pageInfoResolvers,
  ...environment.types,
  ...users.types,
  ...devices.types,
  ...events.types,
  ...analytics.types,
  ...policies.types,
  ...lists.types,
  ...webhooks.types,
  ...privacy.types,
  ...debuggerLog.types,
  Query: {
    ...environment.query,
    ...users.query,
    ...devices.query,
    ...events.query,
    ...analytics.query,
    ...policies.query,
    ...lists.query,
    ...webhooks.query,
    ...privacy.query,
    ...debuggerLog.query,
  },
  Mutation: {
    ...environment.mutation,
    ...devices.mutation,
    ...policies.mutation,
    ...lists.mutation,
    ...webhooks.mutation,
    ...privacy.mutation,
  },
};
