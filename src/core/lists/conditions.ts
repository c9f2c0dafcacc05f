/**
 * Item conditions and sorts evaluated on items in memory, with the meaning MongoDB gives the
 * filter the store would send (store/lists.ts): equality of strings, booleans and dates (null
 * matching a missing value), `$ne`/`$nin` matching what equality does not, ranges only between
 * values of one type, `$contains` case-blind. Where the database cannot serve a condition
 * through an index (the embedded one: only indexed fields), the store reads through an index and
 * evaluates the rest here, and a sort here orders as MongoDB does: null first, ties by id.
 */
import type { ItemCondition, ItemField, ItemQuery, ListItem } from './model';

type Scalar = string | boolean | Date | null;

/** An item's value of a queryable field. */
export function fieldOf(i: ListItem, f: ItemField): Scalar {
  switch (f) {
    case 'id':
      return i.id;
    case 'authorType':
      return i.author.type;
    case 'authorIdentifier':
      return i.author.identifier;
    default:
      return i[f] ?? null;
  }
}

const same = (a: Scalar, b: Scalar): boolean =>
  a instanceof Date && b instanceof Date ? a.getTime() === b.getTime() : a === b;

/** -1, 0 or 1 for two values of one type; null when they cannot be compared (MongoDB's ranges compare within a type). */
function order(a: Scalar, b: Scalar): number | null {
  if (a instanceof Date && b instanceof Date) return Math.sign(a.getTime() - b.getTime());
  if (typeof a === 'string' && typeof b === 'string') return a < b ? -1 : a > b ? 1 : 0;
  if (a === null && b === null) return 0;
  return null;
}

/** Whether an item meets one condition. */
export function holds(i: ListItem, c: ItemCondition): boolean {
  const v = fieldOf(i, c.field);
  switch (c.op) {
    case 'eq':
      return same(v, c.value);
    case 'ne':
      return !same(v, c.value);
    case 'in':
      return c.value.some((w) => same(v, w));
    case 'nin':
      return !c.value.some((w) => same(v, w));
    case 'contains':
      return typeof v === 'string' && v.toLowerCase().includes(c.value.toLowerCase());
    default: {
      const o = order(v, c.value);
      if (o === null) return false;
      // `{$gte: null}` matches null (equal), `{$gt: null}` nothing: as MongoDB.
      return c.op === 'gt' ? o > 0 : c.op === 'gte' ? o >= 0 : c.op === 'lt' ? o < 0 : o <= 0;
    }
  }
}

/** Whether an item meets every condition. */
export const holdsAll = (i: ListItem, conditions: readonly ItemCondition[]): boolean =>
  conditions.every((c) => holds(i, c));

const rank = (v: Scalar): number =>
  v === null ? 0 : typeof v === 'string' ? 1 : typeof v === 'boolean' ? 2 : 3;

/** A comparator in the query's order: the field (null first when ascending), then the id, both in the same direction. */
export function itemOrder(sort: ItemQuery['sort']): (a: ListItem, b: ListItem) => number {
  const dir = sort.order === 'asc' ? 1 : -1;
  return (a, b) => {
    const x = fieldOf(a, sort.field);
    const y = fieldOf(b, sort.field);
    const byType = rank(x) - rank(y);
    const byValue = byType !== 0 ? Math.sign(byType) : (order(x, y) ?? 0);
    return dir * (byValue !== 0 ? byValue : a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
  };
}
