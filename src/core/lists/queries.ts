/**
 * Castle's query language for lists and items (`filters` with `field`, `op`, `value`; `sort`;
 * `page` and `results_size`), checked and turned into what the store runs: a predicate over
 * lists, or item conditions with each value in the form items are stored in.
 */
import { InvalidParameters, type FieldProblem } from '../errors';
import {
  LIST_LIMITS,
  type ItemCondition,
  type ItemField,
  type ItemQuery,
  type List,
  type ListQuery,
  type QueryFilter,
} from './model';
import { normaliseValue } from './values';

type Op = 'eq' | 'ne' | 'gt' | 'gte' | 'lt' | 'lte' | 'in' | 'nin' | 'contains';
const OPS: readonly Op[] = ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'nin', 'contains'];

function pageOf(q: ListQuery, p: FieldProblem[]): { skip: number; limit: number } {
  const page = q.page ?? 1;
  const size = q.resultsSize ?? 50;
  if (!Number.isInteger(page) || page < 1 || page > 100_000)
    p.push({ field: 'page', message: 'must be an integer from 1' });
  if (!Number.isInteger(size) || size < 1 || size > LIST_LIMITS.pageSize)
    p.push({ field: 'results_size', message: `must be an integer from 1 to ${LIST_LIMITS.pageSize}` });
  return {
    skip:
      (Number.isInteger(page) && page >= 1 ? page - 1 : 0) *
      (Number.isInteger(size) && size >= 1 ? size : 50),
    limit: Number.isInteger(size) ? size : 50,
  };
}

function opOf(f: QueryFilter, i: number, p: FieldProblem[], allowed: readonly Op[]): Op | null {
  const op = typeof f.op === 'string' ? f.op.replace(/^\$/, '').toLowerCase() : '';
  if (!allowed.includes(op as Op)) {
    p.push({
      field: `filters[${i}].op`,
      message: `must be one of ${allowed.map((o) => `$${o}`).join(', ')}`,
    });
    return null;
  }
  return op as Op;
}

function filtersOf(q: ListQuery, p: FieldProblem[]): readonly QueryFilter[] {
  if (q.filters === undefined || q.filters === null) return [];
  if (!Array.isArray(q.filters) || q.filters.length > 20) {
    p.push({ field: 'filters', message: 'must be a list of at most 20 {field, op, value}' });
    return [];
  }
  return q.filters.filter((f, i) => {
    if (typeof f !== 'object' || f === null || typeof f.field !== 'string') {
      p.push({ field: `filters[${i}]`, message: 'must be {field, op, value}' });
      return false;
    }
    return true;
  });
}

function sortOf(
  q: ListQuery,
  p: FieldProblem[],
  fields: readonly string[],
  fallback: string,
): { field: string; desc: boolean } {
  const s = q.sort;
  if (s === undefined || s === null) return { field: fallback, desc: false };
  if (typeof s !== 'object' || typeof s.field !== 'string' || !fields.includes(s.field)) {
    p.push({ field: 'sort.field', message: `must be one of ${fields.join(', ')}` });
    return { field: fallback, desc: false };
  }
  const order = typeof s.order === 'string' ? s.order.toLowerCase() : '';
  if (order !== 'asc' && order !== 'desc') p.push({ field: 'sort.order', message: 'must be asc or desc' });
  return { field: s.field, desc: order === 'desc' };
}

const LIST_FIELD_VALUE: Readonly<Record<string, (l: List) => string | null>> = {
  id: (l) => l.id,
  name: (l) => l.name,
  color: (l) => l.color,
  description: (l) => l.description,
  primary_field: (l) => l.primaryField,
  secondary_field: (l) => l.secondaryField,
  created_at: (l) => l.createdAt.toISOString(),
  updated_at: (l) => l.updatedAt.toISOString(),
};

export function validateListQuery(q: ListQuery): {
  filters: ((l: List) => boolean)[];
  sort: (a: List, b: List) => number;
  skip: number;
  limit: number;
} {
  const p: FieldProblem[] = [];
  const page = pageOf(q, p);
  const filters = filtersOf(q, p).flatMap((f, i) => {
    const get = LIST_FIELD_VALUE[f.field];
    if (!get) {
      p.push({
        field: `filters[${i}].field`,
        message: `must be one of ${Object.keys(LIST_FIELD_VALUE).join(', ')}`,
      });
      return [];
    }
    const op = opOf(f, i, p, OPS);
    if (!op) return [];
    const dated = f.field.endsWith('_at');
    const norm = (v: unknown): string | null | undefined => {
      if (v === null) return null;
      if (typeof v !== 'string' && typeof v !== 'number' && typeof v !== 'boolean') return undefined;
      if (dated) {
        const d = new Date(String(v));
        return Number.isNaN(d.getTime()) ? undefined : d.toISOString();
      }
      return String(v);
    };
    const many = op === 'in' || op === 'nin';
    const values = many
      ? Array.isArray(f.value) && f.value.length <= 1000
        ? f.value.map(norm)
        : [undefined]
      : [norm(f.value)];
    if (values.some((v) => v === undefined)) {
      p.push({
        field: `filters[${i}].value`,
        message: many
          ? 'must be a list of at most 1000 strings'
          : dated
            ? 'must be an ISO 8601 time'
            : 'must be a string',
      });
      return [];
    }
    const want = values as (string | null)[];
    const w = want[0] ?? null;
    return [
      (l: List): boolean => {
        const v = get(l);
        switch (op) {
          case 'eq':
            return v === w;
          case 'ne':
            return v !== w;
          case 'in':
            return want.includes(v);
          case 'nin':
            return !want.includes(v);
          case 'contains':
            return v !== null && w !== null && v.toLowerCase().includes(w.toLowerCase());
          default:
            return (
              v !== null &&
              w !== null &&
              (op === 'gt' ? v > w : op === 'gte' ? v >= w : op === 'lt' ? v < w : v <= w)
            );
        }
      },
    ];
  });
  const sort = sortOf(q, p, ['name', 'created_at', 'updated_at'], 'created_at');
  if (p.length) throw new InvalidParameters(p);
  const get = LIST_FIELD_VALUE[sort.field] as (l: List) => string | null;
  return {
    filters,
    sort: (a, b) =>
      (sort.desc ? -1 : 1) * ((get(a) ?? '') < (get(b) ?? '') ? -1 : (get(a) ?? '') > (get(b) ?? '') ? 1 : 0),
    ...page,
  };
}

const ITEM_FIELDS: Readonly<
  Record<string, { field: ItemField; kind: 'text' | 'value' | 'secondary' | 'bool' | 'date' }>
> = {
  id: { field: 'id', kind: 'text' },
  primary_value: { field: 'primaryValue', kind: 'value' },
  secondary_value: { field: 'secondaryValue', kind: 'secondary' },
  comment: { field: 'comment', kind: 'text' },
  archived: { field: 'archived', kind: 'bool' },
  'author.type': { field: 'authorType', kind: 'text' },
  'author.identifier': { field: 'authorIdentifier', kind: 'text' },
  created_at: { field: 'createdAt', kind: 'date' },
  updated_at: { field: 'updatedAt', kind: 'date' },
  expires_at: { field: 'expiresAt', kind: 'date' },
  auto_archives_at: { field: 'expiresAt', kind: 'date' },
  archived_at: { field: 'archivedAt', kind: 'date' },
};
const ITEM_SORT: Readonly<Record<string, ItemQuery['sort']['field']>> = {
  created_at: 'createdAt',
  updated_at: 'updatedAt',
  primary_value: 'primaryValue',
  expires_at: 'expiresAt',
  auto_archives_at: 'expiresAt',
  archived_at: 'archivedAt',
};

/** Castle's item filters and sort as the store's conditions, each value in the form items are stored in. */
export function validateItemQuery(list: List, q: ListQuery): ItemQuery {
  const p: FieldProblem[] = [];
  const page = pageOf(q, p);
  const conditions = filtersOf(q, p).flatMap((f, i): ItemCondition[] => {
    const spec = ITEM_FIELDS[f.field];
    if (!spec) {
      p.push({
        field: `filters[${i}].field`,
        message: `must be one of ${Object.keys(ITEM_FIELDS).join(', ')}`,
      });
      return [];
    }
    const allowed: readonly Op[] =
      spec.kind === 'bool'
        ? ['eq', 'ne']
        : spec.kind === 'date'
          ? ['eq', 'ne', 'gt', 'gte', 'lt', 'lte']
          : OPS;
    const op = opOf(f, i, p, allowed);
    if (!op) return [];
    const one = (v: unknown): string | boolean | Date | null | undefined => {
      if (v === null) return null;
      switch (spec.kind) {
        case 'bool':
          return v === true || v === 'true' ? true : v === false || v === 'false' ? false : undefined;
        case 'date': {
          if (typeof v !== 'string') return undefined;
          const d = new Date(v);
          return Number.isNaN(d.getTime()) ? undefined : d;
        }
        default: {
          if (typeof v !== 'string' && typeof v !== 'number') return undefined;
          const s = String(v);
          if (s.length > LIST_LIMITS.value) return undefined;
          // A value compared for equality is compared as items are stored (1.2.3.4/32 is 1.2.3.4).
          const type =
            spec.kind === 'value' ? list.type : spec.kind === 'secondary' ? list.secondaryType : null;
          if (type && op !== 'contains') {
            const n = normaliseValue(type, s);
            return n.ok ? n.value : s;
          }
          return s;
        }
      }
    };
    if (op === 'in' || op === 'nin') {
      const values = Array.isArray(f.value) && f.value.length <= 1000 ? f.value.map(one) : [undefined];
      if (values.some((v) => v === undefined || v instanceof Date)) {
        p.push({ field: `filters[${i}].value`, message: 'must be a list of at most 1000 values' });
        return [];
      }
      return [{ field: spec.field, op, value: values as (string | boolean | null)[] }];
    }
    const value = one(f.value);
    if (value === undefined || (op === 'contains' && typeof value !== 'string')) {
      p.push({
        field: `filters[${i}].value`,
        message:
          spec.kind === 'bool'
            ? 'must be true or false'
            : spec.kind === 'date'
              ? 'must be an ISO 8601 time'
              : 'must be a string',
      });
      return [];
    }
    return [
      op === 'contains'
        ? { field: spec.field, op, value: value as string }
        : { field: spec.field, op, value },
    ];
  });
  const sort = sortOf(q, p, Object.keys(ITEM_SORT), 'created_at');
  if (p.length) throw new InvalidParameters(p);
  return {
    conditions,
    sort: { field: ITEM_SORT[sort.field] as ItemQuery['sort']['field'], order: sort.desc ? 'desc' : 'asc' },
    ...page,
  };
}
