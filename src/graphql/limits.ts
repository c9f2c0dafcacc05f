/**
 * Limits that keep one query from costing the service more than a dashboard page should: a
 * token cap when parsing, then, once the operation is known, a depth limit and a complexity
 * limit where a list field's cost is multiplied by the page size it asks for; introspection,
 * answered from the schema in memory, has a depth limit and a bound on the fields it answers. Also refuses
 * mutations to read-only analyst keys before anything executes. Page sizes themselves are capped
 * by the core (MAX_PAGE_SIZE).
 */
import type { ApolloServerPlugin } from '@apollo/server';
import { getComplexity, simpleEstimator, type ComplexityEstimator } from 'graphql-query-complexity';
import {
  getArgumentValues,
  getNamedType,
  getVariableValues,
  isObjectType,
  Kind,
  SchemaMetaFieldDef,
  TypeMetaFieldDef,
  type FragmentDefinitionNode,
  type GraphQLField,
  type GraphQLObjectType,
  type GraphQLResolveInfo,
  type GraphQLSchema,
  type SelectionSetNode,
} from 'graphql';
import { BadRequest, Forbidden } from '../core/errors';
import { MAX_PAGE_SIZE } from '../core/queries/model';
import type { GraphqlContext } from './context';
import { requestError } from './errors';

export const LIMITS = {
  /** Most lexical tokens in a query document. */
  maxTokens: 5000,
  /** Most nested fields of the API from the root to a leaf (introspection fields not counted). */
  maxDepth: 10,
  /**
   * Most nested fields with introspection's counted. graphql-js's full introspection query (what
   * GraphiQL, codegen and Apollo's tools send) is 15 deep: arguments' types nine wrappers deep.
   */
  maxIntrospectionDepth: 20,
  /**
   * Most fields introspection may answer in one operation (each field of each object counted once,
   * aliases and repeats apart). The full introspection query of this schema answers about 7,300.
   */
  maxIntrospectionFields: 20_000,
  /** Most estimated cost of one operation. */
  maxComplexity: 5000,
  /** Most field selections the estimate walks (fragments expanded) before giving up as too complex. */
  maxNodes: 20_000,
};

/** Fields that cost more than a plain read. */
const FIELD_COST: Readonly<Record<string, number>> = {
  'Analytics.total': 10,
  'Analytics.actions': 10,
  'Analytics.signals': 10,
  'Analytics.top': 10,
  'Analytics.timeSeries': 50,
  'User.riskSummary': 5,
  // A count of a list's items (up to 100,000) is one indexed count, dearer than a read by id.
  'List.itemCount': 2,
  'Mutation.sendTestWebhook': 20,
  'Mutation.requestPrivacyExport': 20,
  'Mutation.purgeUser': 20,
};

/** Expected sizes of lists that take no `first` (their children cost this many times). */
const LIST_SIZE: Readonly<Record<string, number>> = {
  'Query.policies': 20,
  'Query.lists': 20,
  'Policy.revisions': 10,
  'WebhookDelivery.attempts': 10,
  'Mutation.reorderPolicies': 20,
  'PolicyDryRun.before': 3,
  'PolicyDryRun.after': 3,
  'PolicyDryRun.transitions': 6,
};

/**
 * How much of the event collection one analysis may read, from its filter: an analysis of one
 * user, device or address reads few events (their indexes lead), one of the whole environment
 * reads every event of its time range, and one with no range reads all of them (counted as
 * MAX_SCAN_DAYS). An analysis field costs its own price times the days it may scan, so that two
 * hundred aliased `total`s over all time cost what they would run, and are refused.
 */
export const MAX_SCAN_DAYS = 30;
const DAY_MS = 86_400_000;
const instant = (v: unknown): number | null => {
  const t = v instanceof Date ? v.getTime() : typeof v === 'string' ? Date.parse(v) : NaN;
  return Number.isNaN(t) ? null : t;
};
export function scanDays(filter: unknown, now = Date.now()): number {
  const f = (filter && typeof filter === 'object' ? filter : {}) as Record<string, unknown>;
  if (f.userId != null || f.deviceToken != null || f.ip != null || f.email != null) return 1;
  const from = instant(f.from);
  if (from === null) return MAX_SCAN_DAYS;
  const to = instant(f.to) ?? now;
  return Math.min(MAX_SCAN_DAYS, Math.max(1, Math.ceil((to - from) / DAY_MS)));
}

/** What a policy dry run costs per day it reads (at 30 days: 1,500, well under the limit, but not many at once). */
const DRY_RUN_COST_PER_DAY = 50;
const dryRunDays = (v: unknown): number =>
  typeof v === 'number' && Number.isFinite(v) ? Math.min(MAX_SCAN_DAYS, Math.max(1, Math.ceil(v))) : 7;

/** Cost of a field: its own, plus its children times the page size it asks for (an analysis: times the days it may scan). */
const pageEstimator: ComplexityEstimator = ({ type, field, args, childComplexity }) => {
  const name = `${type.name}.${field.name}`;
  if (name === 'Query.analytics') return 1 + childComplexity * scanDays(args.filter);
  // A dry run reads (and decides again) up to its days of verdicts, like an analysis of them.
  if (name === 'Query.policyDryRun')
    return 1 + DRY_RUN_COST_PER_DAY * dryRunDays(args.days) + childComplexity;
  const own = FIELD_COST[name] ?? 1;
  // Inside an analysis the database work is the scan, whatever the number of entries or buckets
  // returned (ranked and bucketed in memory): no page multiplier there.
  if (type.name === 'Analytics' || type.name === 'TimeSeries') return own + childComplexity;
  const first =
    typeof args.first === 'number' ? Math.min(Math.max(args.first, 1), MAX_PAGE_SIZE) : LIST_SIZE[name];
  return own + childComplexity * (first ?? 1);
};

interface Depth {
  /** Nested fields of the API (introspection fields not counted). */
  api: number;
  /** Nested fields, introspection's counted. */
  all: number;
}

/**
 * Depth of a selection set: nested fields, fragments inlined, counted with and without
 * introspection. Each fragment's depth is computed once, so nested fragment spreads cost linear
 * time.
 */
function depthOf(
  set: SelectionSetNode | undefined,
  fragments: ReadonlyMap<string, FragmentDefinitionNode>,
  memo = new Map<string, Depth>(),
): Depth {
  const max: Depth = { api: 0, all: 0 };
  if (!set) return max;
  for (const sel of set.selections) {
    let d: Depth;
    if (sel.kind === Kind.FIELD) {
      const child = depthOf(sel.selectionSet, fragments, memo);
      d = { api: sel.name.value.startsWith('__') ? 0 : 1 + child.api, all: 1 + child.all };
    } else if (sel.kind === Kind.INLINE_FRAGMENT) {
      d = depthOf(sel.selectionSet, fragments, memo);
    } else {
      const name = sel.name.value;
      const known = memo.get(name);
      if (known !== undefined) d = known;
      else {
        // Validation has already refused cycles; the provisional 0 only makes this safe regardless.
        memo.set(name, { api: 0, all: 0 });
        d = depthOf(fragments.get(name)?.selectionSet, fragments, memo);
        memo.set(name, d);
      }
    }
    max.api = Math.max(max.api, d.api);
    max.all = Math.max(max.all, d.all);
  }
  return max;
}

class TooMuchIntrospection extends Error {}

/**
 * How many fields the introspection in an operation answers (`__schema`, `__type` and what is
 * selected under them), found by walking the selection over the schema itself with graphql-js's
 * own introspection resolvers, as execution would, and stopping once past `cap`
 * (TooMuchIntrospection). Every fragment is taken, and every field even when `@skip`ped: an
 * upper bound. Fields of the API are not walked: the complexity estimate prices them.
 */
function introspectionFields(
  schema: GraphQLSchema,
  root: SelectionSetNode,
  fragments: ReadonlyMap<string, FragmentDefinitionNode>,
  variables: Record<string, unknown>,
  cap: number,
): number {
  const info = { schema } as unknown as GraphQLResolveInfo;
  let count = 0;
  const take = (n: number) => {
    count += n;
    if (count > cap) throw new TooMuchIntrospection();
  };
  const args = (def: GraphQLField<unknown, unknown>, node: Parameters<typeof getArgumentValues>[1]) => {
    try {
      return getArgumentValues(def, node, variables);
    } catch {
      return {};
    }
  };
  const walk = (set: SelectionSetNode, type: GraphQLObjectType | null, value: unknown): void => {
    for (const sel of set.selections) {
      if (sel.kind !== Kind.FIELD) {
        const fragment = sel.kind === Kind.INLINE_FRAGMENT ? sel : fragments.get(sel.name.value);
        if (fragment) walk(fragment.selectionSet, type, value);
        continue;
      }
      const name = sel.name.value;
      if (name === '__typename') {
        if (type) take(1);
        continue;
      }
      // At the root (type null) only the meta-fields lead into introspection.
      const def: GraphQLField<unknown, unknown> | undefined = type
        ? type.getFields()[name]
        : name === '__schema'
          ? SchemaMetaFieldDef
          : name === '__type'
            ? TypeMetaFieldDef
            : undefined;
      if (!def) continue;
      take(1);
      // A leaf is one field whatever it answers: only what has a selection is resolved.
      if (!sel.selectionSet) continue;
      const result: unknown = def.resolve
        ? def.resolve(value, args(def, sel), undefined, info)
        : (value as Record<string, unknown> | null)?.[name];
      const named = getNamedType(def.type);
      if (result == null || !isObjectType(named)) continue;
      for (const item of Array.isArray(result) ? result : [result])
        if (item != null) walk(sel.selectionSet, named, item);
    }
  };
  walk(root, null, null);
  return count;
}

function limitError(name: string, max: number, actual: number | null, message: string) {
  return requestError(new BadRequest(message), { limit: { name, max, actual } });
}

export function limitsPlugin(): ApolloServerPlugin<GraphqlContext> {
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ operation, document, request, schema, contextValue }) {
          if (!operation) return;
          // The schema has no subscriptions: say so, rather than fail in execution (a 500).
          if (operation.operation === 'subscription')
            throw requestError(
              new BadRequest('subscriptions are not supported: the API has queries and mutations'),
            );
          if (operation.operation === 'mutation') {
            try {
              contextValue.services.access.assertCanWrite(contextValue.principal);
            } catch (err) {
              throw requestError(err as Forbidden);
            }
          }
          const fragments = new Map<string, FragmentDefinitionNode>();
          for (const def of document.definitions)
            if (def.kind === Kind.FRAGMENT_DEFINITION) fragments.set(def.name.value, def);
          const depth = depthOf(operation.selectionSet, fragments);
          if (depth.api > LIMITS.maxDepth) {
            throw limitError(
              'depth',
              LIMITS.maxDepth,
              depth.api,
              `query is too deep: depth ${depth.api} exceeds the limit of ${LIMITS.maxDepth}`,
            );
          }
          if (depth.all > LIMITS.maxIntrospectionDepth) {
            throw limitError(
              'introspectionDepth',
              LIMITS.maxIntrospectionDepth,
              depth.all,
              `query is too deep: depth ${depth.all}, introspection fields counted, exceeds the limit of ${LIMITS.maxIntrospectionDepth}`,
            );
          }
          // Invalid variables: execution reports them (BAD_USER_INPUT) before resolving anything.
          const variables = getVariableValues(
            schema,
            operation.variableDefinitions ?? [],
            request.variables ?? {},
          );
          if (variables.errors) return;
          try {
            introspectionFields(
              schema,
              operation.selectionSet,
              fragments,
              variables.coerced,
              LIMITS.maxIntrospectionFields,
            );
          } catch (err) {
            if (!(err instanceof TooMuchIntrospection)) throw err;
            throw limitError(
              'introspectionFields',
              LIMITS.maxIntrospectionFields,
              null,
              `query is too complex: its introspection answers more than ${LIMITS.maxIntrospectionFields} fields; select fewer types, or nest less`,
            );
          }
          let cost: number;
          try {
            cost = getComplexity({
              schema,
              query: document,
              operationName: request.operationName ?? undefined,
              variables: request.variables ?? {},
              estimators: [pageEstimator, simpleEstimator({ defaultComplexity: 1 })],
              maxQueryNodes: LIMITS.maxNodes,
            });
          } catch {
            throw limitError(
              'nodes',
              LIMITS.maxNodes,
              null,
              `query is too complex: it expands to more than ${LIMITS.maxNodes} field selections`,
            );
          }
          if (cost > LIMITS.maxComplexity) {
            throw limitError(
              'complexity',
              LIMITS.maxComplexity,
              cost,
              `query is too complex: estimated cost ${cost} exceeds the limit of ${LIMITS.maxComplexity}; ask for smaller pages or fewer fields`,
            );
          }
        },
      };
    },
  };
}
