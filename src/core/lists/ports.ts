/** Storage of lists and their items (store/lists.ts on MongoDB). Every method is scoped by environment. */
import type { EnvId } from '../model';
import type { ItemCondition, ItemQuery, ListImport, ListItem, ListSet } from './model';

export interface ListStore {
  /** The environment's lists and their version (null: none yet). */
  getSet(env: EnvId): Promise<ListSet | null>;
  /** Replace the set if its version is still `expectedVersion` (0: create). */
  putSet(set: ListSet, expectedVersion: number): Promise<boolean>;
  /** Count an item change in the set's version; answers the new version. */
  bumpVersion(env: EnvId): Promise<number>;
  getItem(env: EnvId, listId: string, itemId: string): Promise<ListItem | null>;
  /** The items of the list with these ids (at most 1,000; missing ones absent), in no order. */
  getItems(env: EnvId, listId: string, itemIds: readonly string[]): Promise<ListItem[]>;
  /** Write items whole (insert or replace, by id). */
  putItems(items: readonly ListItem[]): Promise<void>;
  queryItems(env: EnvId, listId: string, q: ItemQuery): Promise<ListItem[]>;
  countItems(env: EnvId, listId: string, conditions: readonly ItemCondition[]): Promise<number>;
  /** Every item of the lists named (unarchived only when `activeOnly`), in id order, a batch at a time. */
  scanItems(env: EnvId, listIds: readonly string[], activeOnly: boolean): AsyncIterable<ListItem[]>;
  deleteItems(env: EnvId, listId: string): Promise<void>;
  /** Write an import job whole (insert or replace, by id). */
  putImport(job: ListImport): Promise<void>;
  getImport(env: EnvId, id: string): Promise<ListImport | null>;
  /** Delete import jobs (all tenants) that finished before `before`; answers how many. */
  sweepImports(before: Date): Promise<number>;
}
