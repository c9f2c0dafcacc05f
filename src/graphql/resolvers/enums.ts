/** GraphQL enum names → the core's values (codegen `enumValues` types them; Apollo maps them). */
import type { Resolvers } from '../generated/types';
import { ENUM_VALUES } from '../enum-values';

export const enumResolvers: Resolvers = ENUM_VALUES;
