/**
 * Lists on the GraphQL door: reads for every credential, changes for the API secret (the limits
 * plugin refuses any mutation to an analyst key before it runs). Each resolver calls one
 * ListService use case; the core validates, so errors are the ones REST answers, with the
 * offending fields named by this door's input names (`value`, `expiresAt`, …).
 */
import { DomainError, InvalidParameters, type FieldProblem } from '../../core/errors';
import { actorOf } from '../../core/lists/service';
import type { ListItem, QueryFilter } from '../../core/lists/model';
import { decodeParts, encodeParts, pageSize } from '../../core/queries/pagination';
import type { Page } from '../../core/queries/model';
import type { GraphqlContext } from '../context';
import type { MutationResolvers, QueryResolvers, Resolvers } from '../generated/types';
import { connection, envOf } from './common';

/** The core's field names (Castle's, as REST answers them) → this door's input names. */
const FIELD_NAMES: Readonly<Record<string, string>> = {
  primary_value: 'value',
  secondary_value: 'secondaryValue',
  expires_at: 'expiresAt',
  primary_field: 'primaryField',
  secondary_field: 'secondaryField',
  list_id: 'id',
};

/** Run a use case, naming refused fields as this door's inputs do. */
async function named<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (e) {
    if (e instanceof InvalidParameters)
      throw new InvalidParameters(
        e.fields.map((f: FieldProblem) => ({ ...f, field: FIELD_NAMES[f.field] ?? f.field })),
      );
    throw e;
  }
}

/** A look-up by id answers null when the environment has no such list (as `policy(id)` does). */
async function orNull<T>(run: () => Promise<T>): Promise<T | null> {
  try {
    return await run();
  } catch (e) {
    if (e instanceof DomainError && e.kind === 'not_found') return null;
    throw e;
  }
}

const actor = (ctx: GraphqlContext) => actorOf(ctx.principal);
const iso = (d: Date | null | undefined): string | null | undefined =>
  d === undefined ? undefined : d === null ? null : d.toISOString();

/**
 * A page of items is read by position (newest first); the cursor is that position, opaque. Items
 * added while paging move later pages by as many (an item may then show twice, never be skipped
 * by a deletion: items are archived, not deleted).
 */
const CURSOR_KIND = 'li';
const encodeOffset = (n: number): string => encodeParts([CURSOR_KIND, n]);
function decodeOffset(cursor: string | null | undefined): number {
  const parts = decodeParts(
    CURSOR_KIND,
    cursor,
    (r) => r.length === 1 && Number.isInteger(r[0]) && (r[0] as number) >= 0 && (r[0] as number) <= 1_000_000,
    256,
  );
  return parts ? (parts[0] as number) : 0;
}

function itemFilters(
  filter: { value?: string | null; archived?: boolean | null } | null | undefined,
): QueryFilter[] {
  const out: QueryFilter[] = [];
  if (filter?.value !== null && filter?.value !== undefined)
    out.push({ field: 'primary_value', op: '$eq', value: filter.value });
  if (filter?.archived !== null && filter?.archived !== undefined)
    out.push({ field: 'archived', op: '$eq', value: filter.archived });
  return out;
}

export const query: QueryResolvers = {
  lists: (_p, _a, ctx) => ctx.services.lists.all(envOf(ctx)),
  list: (_p, { id }, ctx) => orNull(() => ctx.services.lists.get(envOf(ctx), id)),
};

export const mutation: MutationResolvers = {
  createList: (_p, { input }, ctx) =>
    named(() =>
      ctx.services.lists.create(envOf(ctx), actor(ctx), {
        name: input.name,
        color: input.color,
        primaryField: input.primaryField,
        ...(input.secondaryField !== undefined ? { secondaryField: input.secondaryField } : {}),
        ...(input.description !== undefined ? { description: input.description } : {}),
      }),
    ),
  updateList: (_p, { id, input }, ctx) =>
    named(() =>
      ctx.services.lists.update(envOf(ctx), actor(ctx), id, {
        ...(input.name !== undefined && input.name !== null ? { name: input.name } : {}),
        ...(input.color !== undefined && input.color !== null ? { color: input.color } : {}),
        // Absent keeps the description, null clears it.
        ...(input.description !== undefined ? { description: input.description } : {}),
      }),
    ),
  deleteList: async (_p, { id }, ctx) => {
    await named(() => ctx.services.lists.delete(envOf(ctx), actor(ctx), id));
    return id;
  },
  addListItem: (_p, { listId, input }, ctx) =>
    named(() =>
      ctx.services.lists.createItem(envOf(ctx), actor(ctx), listId, {
        primaryValue: input.value,
        secondaryValue: input.secondaryValue ?? undefined,
        comment: input.comment ?? undefined,
        expiresAt: iso(input.expiresAt) ?? undefined,
      }),
    ),
  updateListItem: async (_p, { listId, itemId, input }, ctx) => {
    const env = envOf(ctx);
    // The core's update sets the comment; one left out here keeps the item's.
    const comment =
      input.comment !== undefined
        ? input.comment
        : (await ctx.services.lists.getItem(env, listId, itemId)).comment;
    return named(() =>
      ctx.services.lists.updateItem(env, actor(ctx), listId, itemId, {
        comment,
        ...(input.expiresAt !== undefined ? { expiresAt: iso(input.expiresAt) } : {}),
      }),
    );
  },
  archiveListItem: (_p, { listId, itemId }, ctx) =>
    ctx.services.lists.archiveItem(envOf(ctx), actor(ctx), listId, itemId),
  unarchiveListItem: (_p, { listId, itemId }, ctx) =>
    named(() => ctx.services.lists.unarchiveItem(envOf(ctx), actor(ctx), listId, itemId)),
};

export const types: Resolvers = {
  List: {
    itemCount: (l, { archived }, ctx) =>
      ctx.services.lists.countItems(envOf(ctx), l.id, itemFilters({ archived })),
    items: (l, { filter, first, after }, ctx) =>
      named(() => readPage(ctx, l.id, itemFilters(filter), decodeOffset(after), pageSize(first, 50))),
    item: (l, { id }, ctx) => orNull(() => ctx.services.lists.getItem(envOf(ctx), l.id, id)),
    usedBy: (l, _a, ctx) => ctx.services.policies.usingList(envOf(ctx), l.id),
    auditEntries: (l, { first }, ctx) =>
      ctx.services.lists.auditLog(envOf(ctx), { listId: l.id, limit: pageSize(first, 20) }),
  },
  ListItem: {
    value: (i) => i.primaryValue,
    active: (i) => !i.archived && (i.expiresAt === null || i.expiresAt.getTime() > Date.now()),
  },
  AuditEntry: {
    targetId: (e) => e.target.id,
  },
  ListItemConnection: connection,
};

/**
 * The items at positions [skip, skip + size), newest first. The core reads by page number and
 * size, so a position that is not a multiple of the size (a client that changed `first` between
 * pages) takes two reads; whether more follow is counted.
 */
async function readPage(
  ctx: GraphqlContext,
  listId: string,
  filters: QueryFilter[],
  skip: number,
  size: number,
): Promise<Page<ListItem>> {
  const env = envOf(ctx);
  const read = (page: number) =>
    ctx.services.lists.queryItems(env, listId, {
      filters,
      sort: { field: 'created_at', order: 'desc' },
      page,
      resultsSize: size,
    });
  const first = Math.floor(skip / size) + 1;
  let rows = await read(first);
  const offset = skip % size;
  if (offset)
    rows = [...rows.slice(offset), ...(rows.length === size ? await read(first + 1) : [])].slice(0, size);
  const total =
    rows.length === size ? await ctx.services.lists.countItems(env, listId, filters) : skip + rows.length;
  return {
    edges: rows.map((node, i) => ({ node, cursor: encodeOffset(skip + i + 1) })),
    hasNextPage: skip + rows.length < total,
  };
}
