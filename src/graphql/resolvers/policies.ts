/**
 * Policies: reads, and edits through the core's PolicyService. Verdicts read the policy set on
 * every evaluation, so an edit here decides the very next verdict on every door.
 */
import type { PolicyConditions, PolicyDraft } from '../../core/policies/model';
import type { PolicyDraftChange } from '../../core/policies/service';
import { InvalidParameters } from '../../core/errors';
import { pageSize } from '../../core/queries/pagination';
import type {
  MutationResolvers,
  PolicyConditionsInput,
  PolicyDraftInput,
  PolicyUpdateInput,
  QueryResolvers,
  Resolvers,
} from '../generated/types';
import { envOf } from './common';

const list = <T>(v: ReadonlyArray<T> | null | undefined): T[] | undefined => (v ? [...v] : undefined);
const num = (v: number | null | undefined): number | undefined => (v === null ? undefined : v);

function conditions(c: PolicyConditionsInput | null | undefined): PolicyConditions {
  if (!c) return {};
  const out: PolicyConditions = {
    events: list(c.events),
    riskLevels: list(c.riskLevels),
    minRisk: num(c.minRisk),
    maxRisk: num(c.maxRisk),
    signalsAny: list(c.signalsAny),
    signalsAll: list(c.signalsAll),
    countries: list(c.countries),
    deviceStates: list(c.deviceStates),
    inLists: list(c.inLists),
    notInLists: list(c.notInLists),
  };
  for (const k of Object.keys(out) as (keyof PolicyConditions)[]) if (out[k] === undefined) delete out[k];
  return out;
}

function updatePatch(input: PolicyUpdateInput): Partial<PolicyDraft> {
  const patch: Partial<PolicyDraft> = {};
  if (input.name !== null && input.name !== undefined) patch.name = input.name;
  if (input.group !== null && input.group !== undefined) patch.group = input.group;
  if (input.action !== null && input.action !== undefined) patch.action = input.action;
  if (input.conditions !== null && input.conditions !== undefined)
    patch.conditions = conditions(input.conditions);
  return patch;
}

/** A dry run's draft: exactly a `create`, or an `id` with `update` and/or `archive`. */
function draftChange(d: PolicyDraftInput, i: number): PolicyDraftChange {
  const field = `drafts[${i}]`;
  if (d.create) {
    if (d.id || d.update || d.archive)
      throw new InvalidParameters([
        { field, message: 'give either create, or id with update and/or archive' },
      ]);
    return {
      create: {
        name: d.create.name,
        group: d.create.group,
        action: d.create.action,
        conditions: conditions(d.create.conditions),
      },
    };
  }
  if (!d.id || (!d.update && !d.archive))
    throw new InvalidParameters([{ field, message: 'give either create, or id with update and/or archive' }]);
  return {
    id: d.id,
    ...(d.update ? { update: updatePatch(d.update) } : {}),
    ...(d.archive ? { archive: true } : {}),
  };
}

export const query: QueryResolvers = {
  policies: (_p, { includeArchived }, ctx) =>
    ctx.services.policies.list(envOf(ctx), includeArchived ?? false),
  policy: (_p, { id }, ctx) => ctx.loaders.policy.load(id),
  policyDryRun: (_p, { drafts, days, maxEvents }, ctx) =>
    ctx.services.dryRun.run(envOf(ctx), { drafts: drafts.map(draftChange), days, maxEvents }),
};

export const mutation: MutationResolvers = {
  createPolicy: (_p, { input }, ctx) =>
    ctx.services.policies.create(envOf(ctx), {
      name: input.name,
      group: input.group,
      action: input.action,
      conditions: conditions(input.conditions),
    }),
  updatePolicy: (_p, { id, input }, ctx) => ctx.services.policies.update(envOf(ctx), id, updatePatch(input)),
  rollbackPolicy: (_p, { id, revision }, ctx) => ctx.services.policies.rollback(envOf(ctx), id, revision),
  archivePolicy: (_p, { id }, ctx) => ctx.services.policies.archive(envOf(ctx), id),
  reorderPolicies: (_p, { group, ids }, ctx) => ctx.services.policies.reorder(envOf(ctx), group, ids),
};

export const types: Resolvers = {
  Policy: {
    revisions: (p, _a, ctx) => ctx.loaders.policyRevisions.load(p.id),
  },
  PolicyDryRun: {
    samples: (r, { first }) => r.samples.slice(0, pageSize(first, 20)),
  },
  DryRunChange: {
    event: async (c, _a, ctx) => {
      const e = await ctx.services.queries.event(envOf(ctx), c.eventId);
      if (!e) throw new Error(`dry run: event ${c.eventId} is gone`);
      return e;
    },
  },
};
