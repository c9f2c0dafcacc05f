/**
 * Lists (one document per environment holding its lists and a version, read with one `_id`
 * look-up) and their items (one document each, `_id` `<env>:<list>:<item>`, read through the
 * (envId, listId, _id) index). Every query names the environment.
 */
import type { Db, Filter } from 'mongodb';
import type { EnvId } from '../core/model';
import type { ItemCondition, ItemField, ItemQuery, List, ListItem, ListSet } from '../core/lists/model';
import type { ListStore } from '../core/lists/ports';
import { putVersioned, type IndexSpec } from './database';
import { escapeRegex, idOf } from './ids';

interface SetDoc {
  _id: string;
  version: number;
  lists?: Omit<List, 'envId'>[];
}
interface ItemDoc extends Omit<ListItem, 'id'> {
  _id: string;
  itemId: string;
}

export const LIST_SETS = 'list_sets';
export const LIST_ITEMS = 'list_items';

export const listIndexes: IndexSpec[] = [
  { collection: LIST_ITEMS, indexes: [{ key: { envId: 1, listId: 1, _id: 1 }, name: 'env_list' }], servedOnEmbedded: ['env_list'] },
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

const fromDoc = ({ _id, itemId, ...d }: ItemDoc): ListItem => ({ id: itemId, ...d, secondaryValue: d.secondaryValue ?? null, comment: d.comment ?? null, expiresAt: d.expiresAt ?? null, archivedAt: d.archivedAt ?? null });

export class MongoListStore implements ListStore {
  constructor(private readonly db: Db) {}
  private get sets() {
    return this.db.collection<SetDoc>(LIST_SETS);
  }
  private get items() {
    return this.db.collection<ItemDoc>(LIST_ITEMS);
  }

  async getSet(env: EnvId): Promise<ListSet | null> {
    const d = await this.sets.findOne({ _id: env });
    if (!d) return null;
    return { envId: env, version: d.version, lists: (d.lists ?? []).map((l) => ({ ...l, envId: env })) };
  }

  async putSet(set: ListSet, expectedVersion: number): Promise<boolean> {
    const doc: SetDoc = { _id: set.envId, version: set.version, lists: set.lists.map(({ envId: _env, ...l }) => l) };
    return putVersioned(this.sets, doc, expectedVersion);
  }

  async bumpVersion(env: EnvId): Promise<number> {
    const d = await this.sets.findOneAndUpdate({ _id: env }, { $inc: { version: 1 } }, { upsert: true, returnDocument: 'after' });
    return d?.version ?? 0;
  }

  async getItem(env: EnvId, listId: string, itemId: string): Promise<ListItem | null> {
    const d = await this.items.findOne({ _id: idOf(env, listId, itemId) });
    return d && d.envId === env && d.listId === listId ? fromDoc(d) : null;
  }

  async putItems(items: readonly ListItem[]): Promise<void> {
    if (items.length === 0) return;
    await this.items.bulkWrite(
      items.map(({ id, ...i }) => ({ replaceOne: { filter: { _id: idOf(i.envId, i.listId, id) }, replacement: { ...i, itemId: id }, upsert: true } })),
      { ordered: false },
    );
  }

  async queryItems(env: EnvId, listId: string, q: ItemQuery): Promise<ListItem[]> {
    const docs = await this.items
      .find(this.filter(env, listId, q.conditions))
      .sort({ [FIELD[q.sort.field]]: q.sort.order === 'asc' ? 1 : -1, _id: 1 })
      .skip(q.skip)
      .limit(q.limit)
      .toArray();
    return docs.map(fromDoc);
  }

  countItems(env: EnvId, listId: string, conditions: readonly ItemCondition[]): Promise<number> {
    return this.items.countDocuments(this.filter(env, listId, conditions));
  }

  async *scanItems(env: EnvId, listIds: readonly string[], activeOnly: boolean): AsyncIterable<ListItem[]> {
    for (const listId of listIds) {
      // Keyset pages on the index: each page one bounded read, never a cursor held open for minutes.
      let after: string | null = null;
      for (;;) {
        const filter: Filter<ItemDoc> = { envId: env, listId, ...(after ? { _id: { $gt: after } } : {}) };
        const docs = await this.items.find(filter).sort({ envId: 1, listId: 1, _id: 1 }).limit(5000).toArray();
        if (docs.length === 0) break;
        after = (docs[docs.length - 1] as ItemDoc)._id;
        const batch = docs.filter((d) => !activeOnly || !d.archived).map(fromDoc);
        if (batch.length) yield batch;
        if (docs.length < 5000) break;
      }
    }
  }

  async deleteItems(env: EnvId, listId: string): Promise<void> {
    await this.items.deleteMany({ envId: env, listId });
  }

  private filter(env: EnvId, listId: string, conditions: readonly ItemCondition[]): Filter<ItemDoc> {
    const and: Filter<ItemDoc>[] = [{ envId: env, listId }];
    for (const c of conditions) {
      const f = FIELD[c.field];
      switch (c.op) {
        case 'eq':
          and.push({ [f]: c.value });
          break;
        case 'ne':
          and.push({ [f]: { $ne: c.value } });
          break;
        case 'in':
          and.push({ [f]: { $in: [...c.value] } });
          break;
        case 'nin':
          and.push({ [f]: { $nin: [...c.value] } });
          break;
        case 'contains':
          and.push({ [f]: { $regex: escapeRegex(c.value), $options: 'i' } });
          break;
        default:
          and.push({ [f]: { [`$${c.op}`]: c.value } });
      }
    }
    return and.length === 1 ? (and[0] as Filter<ItemDoc>) : { $and: and };
  }
}
