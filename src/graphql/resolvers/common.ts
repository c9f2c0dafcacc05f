/** Helpers every resolver module shares: the caller's environment, inputs without nulls, pages. */
import type { EnvId, Environment } from '../../core/model';
import type { GraphqlContext } from '../context';
import type { PageInfoResolvers } from '../generated/types';

export const envOf = (ctx: GraphqlContext): EnvId => ctx.principal.env.id;

/** The caller's environment as stored now (the principal may come from the auth cache). */
export const freshEnv = (ctx: GraphqlContext): Promise<Environment> =>
  ctx.services.environments.require(envOf(ctx));

/** GraphQL sends absent optional inputs as null; the core leaves them undefined. */
export type Compact<T> = { -readonly [K in keyof T]?: Exclude<T[K], null> };
export function compact<T extends object>(input: T | null | undefined): Compact<T> {
  const out: Record<string, unknown> = {};
  if (input) for (const [k, v] of Object.entries(input)) if (v !== null && v !== undefined) out[k] = v;
  return out as Compact<T>;
}

/** Page info of any page: forward-only keyset pagination. */
export const pageInfoResolvers: PageInfoResolvers = {
  hasNextPage: (p) => p.hasNextPage,
  hasPreviousPage: () => false,
  startCursor: (p) => p.edges[0]?.cursor ?? null,
  endCursor: (p) => p.endCursor ?? p.edges[p.edges.length - 1]?.cursor ?? null,
};

/** A connection resolves its page info from the page itself. */
export const connection = { pageInfo: <P>(page: P): P => page };
