/**
 * Lists (one document per environment holding its lists and a version, read with one `_id`
 * look-up), their items (one document each, `_id` `<env>:<list>:<item>`) and CSV import jobs
 * (`list_imports`, one document each, `_id` `<env>:<job>`). Every query names the environment.
 *
 * How items are read depends on the server (`indexed`):
 *  - MongoDB (and a FerretDB without Rampart's patch 0009) is given the whole filter and sort;
 *    the (envId, listId, createdAt, _id) and (envId, listId, primaryValue) indexes serve the
 *    usual pages and look-ups.
 *  - Rampart's FerretDB build serves only filters on indexed top-level strings and dates (patch
 *    0009) and `_id` look-ups (0005); anything else would read and decode every item of every
 *    list. So a query is read through the index that narrows it most (the ids asked for, the
 *    values asked for, or the list's items in creation order, page by page, as far as the page
 *    asked for needs) and the rest of its conditions are evaluated here (core/lists/conditions.ts,
 *    with MongoDB's meaning). A sort no index serves reads the list's items, never the collection.
 */
import type { Db, Filter, Sort } from 'mongodb';
import type { EnvId } from '../core/model';
import { holdsAll, itemOrder } from '../core/lists/conditions';
import type {
  ItemCondition,
  ItemField,
  ItemQuery,
  List,
  ListImport,
  ListItem,
  ListSet,
} from '../core/lists/model';
import type { ListStore } from '../core/lists/ports';
import { putVersioned, type IndexSpec } from './database';
import { escapeRegex, idOf } from './ids';
import { UPSERT_COMMENT } from './state/layer';
import type { StoreDeps } from './deps';

interface SetDoc {
  _id: string;
  version: number;
  lists?: Omit<List, 'envId'>[];
}
interface ItemDoc extends Omit<ListItem, 'id'> {
  _id: string;
  itemId: string;
}
interface ImportDoc extends Omit<ListImport, 'id'> {
  _id: string;
  importId: string;
}

export const LIST_SETS = 'list_sets';
export const LIST_ITEMS = 'list_items';
export const LIST_IMPORTS = 'list_imports';

export const listIndexes: IndexSpec[] = [
  {
    collection: LIST_ITEMS,
    indexes: [
      // Scans of a list (exports, compiled lists, whole-list reads) in keyset pages.
      { key: { envId: 1, listId: 1, _id: 1 }, name: 'env_list' },
      // Pages newest (or oldest) first: Castle's default sort, the console and GraphQL.
      { key: { envId: 1, listId: 1, createdAt: 1, _id: 1 }, name: 'env_list_created' },
      // A value looked up in a list (`primary_value` `$eq`/`$in`).
      { key: { envId: 1, listId: 1, primaryValue: 1 }, name: 'env_list_value' },
    ],
    servedOnEmbedded: ['env_list', 'env_list_created', 'env_list_value'],
  },
];

const FIELD: Readonly<Record<ItemField, string>> = {
  id: 'itemId',
  primaryValue: 'primaryValue',
  secondaryValue: 'secondaryValue',
  comment: 'comment',
  archived: 'archived',
  authorType: 'author.type',
  authorIdentifier: 'author.identifier',
  createdAt: 'createdAt',
  updatedAt: 'updatedAt',
  expiresAt: 'expiresAt',
  archivedAt: 'archivedAt',
};

/** Items one keyset page of a scan reads. */
const SCAN_PAGE = 1000;
/** Most ids (or values) one `$in` look-up names: what patch 0005 (and 0009) push down. */
const MAX_IN = 1000;

const fromDoc = ({ _id, itemId, ...d }: ItemDoc): ListItem => ({
  id: itemId,
  ...d,
  secondaryValue: d.secondaryValue ?? null,
  comment: d.comment ?? null,
  expiresAt: d.expiresAt ?? null,
  archivedAt: d.archivedAt ?? null,
});
const toDoc = ({ id, ...i }: ListItem): ItemDoc => ({ _id: idOf(i.envId, i.listId, id), ...i, itemId: id });

export interface ListStoreDeps extends StoreDeps {
  /** Rampart's FerretDB build (patch 0009): read through its indexes, evaluate the rest here. */
  indexed?: boolean;
  /** The server replaces documents in an insert marked UPSERT_COMMENT (patch 0003): items are written that way. */
  upsertInsert?: boolean;
}

export class MongoListStore implements ListStore {
  private readonly db: Db;
  private readonly o: Omit<ListStoreDeps, 'db'>;
  constructor({ db, ...o }: ListStoreDeps) {
    this.db = db;
    this.o = o;
  }
  private get sets() {
    return this.db.collection<SetDoc>(LIST_SETS);
  }
  private get items() {
    return this.db.collection<ItemDoc>(LIST_ITEMS);
  }
  private get imports() {
    return this.db.collection<ImportDoc>(LIST_IMPORTS);
  }

  async getSet(env: EnvId): Promise<ListSet | null> {
    const d = await this.sets.findOne({ _id: env });
    if (!d) return null;
    return { envId: env, version: d.version, lists: (d.lists ?? []).map((l) => ({ ...l, envId: env })) };
  }

  async putSet(set: ListSet, expectedVersion: number): Promise<boolean> {
    const doc: SetDoc = {
      _id: set.envId,
      version: set.version,
      lists: set.lists.map(({ envId: _env, ...l }) => l),
    };
    return putVersioned(this.sets, doc, expectedVersion);
  }

  async bumpVersion(env: EnvId): Promise<number> {
    const d = await this.sets.findOneAndUpdate(
      { _id: env },
      { $inc: { version: 1 } },
      { upsert: true, returnDocument: 'after' },
    );
    return d?.version ?? 0;
  }

  async getItem(env: EnvId, listId: string, itemId: string): Promise<ListItem | null> {
    const d = await this.items.findOne({ _id: idOf(env, listId, itemId) });
    return d && d.envId === env && d.listId === listId ? fromDoc(d) : null;
  }

  async getItems(env: EnvId, listId: string, itemIds: readonly string[]): Promise<ListItem[]> {
    const out: ListItem[] = [];
    for (let i = 0; i < itemIds.length; i += MAX_IN) {
      const ids = itemIds.slice(i, i + MAX_IN).map((id) => idOf(env, listId, id));
      for (const d of await this.items.find({ _id: { $in: ids } }).toArray())
        if (d.envId === env && d.listId === listId) out.push(fromDoc(d));
    }
    return out;
  }

  async putItems(items: readonly ListItem[]): Promise<void> {
    if (items.length === 0) return;
    if (this.o.upsertInsert) {
      await this.items.insertMany(items.map(toDoc), { ordered: false, comment: UPSERT_COMMENT });
      return;
    }
    await this.items.bulkWrite(
      items.map((i) => {
        const { _id, ...replacement } = toDoc(i);
        return { replaceOne: { filter: { _id }, replacement, upsert: true } };
      }),
      { ordered: false },
    );
  }

  async queryItems(env: EnvId, listId: string, q: ItemQuery): Promise<ListItem[]> {
    if (!this.o.indexed) {
      const dir = q.sort.order === 'asc' ? 1 : -1;
      const sort: Sort = { [FIELD[q.sort.field]]: dir, _id: dir };
      const docs = await this.items
        .find(this.filter(env, listId, q.conditions))
        .sort(sort)
        .skip(q.skip)
        .limit(q.limit)
        .toArray();
      return docs.map(fromDoc);
    }
    const order = itemOrder(q.sort);
    const narrowed = await this.narrowed(env, listId, q.conditions);
    if (narrowed) return narrowed.sort(order).slice(q.skip, q.skip + q.limit);
    if (q.sort.field === 'createdAt') {
      // The list's items in the order asked for, as far as this page needs.
      const out: ListItem[] = [];
      for await (const batch of this.pages(env, listId, 'createdAt', q.sort.order, q.skip + q.limit)) {
        for (const i of batch) if (holdsAll(i, q.conditions)) out.push(i);
        if (out.length >= q.skip + q.limit) break;
      }
      return out.slice(q.skip, q.skip + q.limit);
    }
    const all: ListItem[] = [];
    for await (const batch of this.pages(env, listId, null, 'asc', SCAN_PAGE))
      for (const i of batch) if (holdsAll(i, q.conditions)) all.push(i);
    return all.sort(order).slice(q.skip, q.skip + q.limit);
  }

  async countItems(env: EnvId, listId: string, conditions: readonly ItemCondition[]): Promise<number> {
    if (!this.o.indexed) return this.items.countDocuments(this.filter(env, listId, conditions));
    const narrowed = await this.narrowed(env, listId, conditions);
    if (narrowed) return narrowed.length;
    let n = 0;
    for await (const batch of this.pages(env, listId, null, 'asc', SCAN_PAGE))
      for (const i of batch) if (holdsAll(i, conditions)) n++;
    return n;
  }

  async *scanItems(env: EnvId, listIds: readonly string[], activeOnly: boolean): AsyncIterable<ListItem[]> {
    for (const listId of listIds) {
      for await (const batch of this.pages(env, listId, null, 'asc', SCAN_PAGE)) {
        const kept = activeOnly ? batch.filter((i) => !i.archived) : batch;
        if (kept.length) yield kept;
      }
    }
  }

  async deleteItems(env: EnvId, listId: string): Promise<void> {
    await this.items.deleteMany({ envId: env, listId });
  }

  async putImport(job: ListImport): Promise<void> {
    const { id, ...rest } = job;
    await this.imports.replaceOne({ _id: idOf(job.envId, id) }, { ...rest, importId: id }, { upsert: true });
  }

  async getImport(env: EnvId, id: string): Promise<ListImport | null> {
    const d = await this.imports.findOne({ _id: idOf(env, id) });
    if (!d || d.envId !== env) return null;
    const { _id, importId, ...rest } = d;
    return { id: importId, ...rest };
  }

  async sweepImports(before: Date): Promise<number> {
    // A small collection (one document per import), read whole on either server.
    const old = await this.imports
      .find({ finishedAt: { $lt: before } }, { projection: { _id: 1 } })
      .toArray();
    let deleted = 0;
    for (let i = 0; i < old.length; i += MAX_IN)
      deleted += (await this.imports.deleteMany({ _id: { $in: old.slice(i, i + MAX_IN).map((d) => d._id) } }))
        .deletedCount;
    return deleted;
  }

  /**
   * (Indexed reads.) The items meeting the conditions when one of them names the ids or the values
   * asked for: read through `_id` or the value index, the rest checked here. Null otherwise.
   */
  private async narrowed(
    env: EnvId,
    listId: string,
    conditions: readonly ItemCondition[],
  ): Promise<ListItem[] | null> {
    const strings = (c: ItemCondition): string[] | null => {
      const values = c.op === 'eq' ? [c.value] : c.op === 'in' ? [...c.value] : null;
      return values && values.every((v): v is string => typeof v === 'string') ? values : null;
    };
    const ids = conditions.find((c) => c.field === 'id' && strings(c));
    if (ids)
      return (await this.getItems(env, listId, [...new Set(strings(ids))])).filter((i) =>
        holdsAll(i, conditions),
      );
    const values = conditions.find((c) => c.field === 'primaryValue' && strings(c));
    if (!values) return null;
    const wanted = [...new Set(strings(values))];
    if (wanted.length === 0) return [];
    const docs = await this.items
      .find({ envId: env, listId, primaryValue: wanted.length === 1 ? wanted[0] : { $in: wanted } })
      .toArray();
    return docs.map(fromDoc).filter((i) => holdsAll(i, conditions));
  }

  /**
   * (Indexed reads.) The list's items a page at a time: in `field`'s order through its index
   * (createdAt), or in `_id` order (null), each page one bounded keyset read; the first page is
   * `first` long, later ones grow to SCAN_PAGE.
   */
  private async *pages(
    env: EnvId,
    listId: string,
    field: 'createdAt' | null,
    order: 'asc' | 'desc',
    first: number,
  ): AsyncGenerator<ListItem[]> {
    const dir = order === 'asc' ? 1 : -1;
    const op = order === 'asc' ? '$gt' : '$lt';
    let size = Math.max(1, Math.min(first, SCAN_PAGE));
    let after: ItemDoc | null = null;
    for (;;) {
      let filter: Filter<ItemDoc> = { envId: env, listId };
      if (after && field)
        filter = {
          ...filter,
          $or: [{ [field]: { [op]: after[field] } }, { [field]: after[field], _id: { [op]: after._id } }],
        } as Filter<ItemDoc>;
      else if (after) filter = { ...filter, _id: { [op]: after._id } };
      const sort: Sort = field ? { [field]: dir, _id: dir } : { _id: dir };
      const docs = await this.items.find(filter).sort(sort).limit(size).toArray();
      if (docs.length === 0) return;
      after = docs[docs.length - 1] as ItemDoc;
      yield docs.map(fromDoc);
      if (docs.length < size) return;
      size = Math.min(size * 2, SCAN_PAGE);
    }
  }

  /** (Server reads.) The whole filter: one document where every field is named once, `$and` for the rest. */
  private filter(env: EnvId, listId: string, conditions: readonly ItemCondition[]): Filter<ItemDoc> {
    const doc: Record<string, unknown> = { envId: env, listId };
    const and: Record<string, unknown>[] = [];
    for (const c of conditions) {
      const f = FIELD[c.field];
      let expr: unknown;
      switch (c.op) {
        case 'eq':
          expr = c.value;
          break;
        case 'in':
        case 'nin':
          expr = { [`$${c.op}`]: [...c.value] };
          break;
        case 'contains':
          expr = { $regex: escapeRegex(c.value), $options: 'i' };
          break;
        default:
          expr = { [`$${c.op}`]: c.value };
      }
      if (f in doc) and.push({ [f]: expr });
      else doc[f] = expr;
    }
    if (and.length) doc.$and = and;
    return doc as Filter<ItemDoc>;
  }
}
