/**
 * Keyset pagination: pages are read newest first by (time, id), and a cursor is that pair,
 * encoded opaquely. A cursor carries no tenant: it only positions a search that is always scoped
 * to the caller's environment, so a forged one can reveal nothing of another environment.
 */
import { InvalidParameters } from '../errors';
import type { Found, Page, SortKey } from './model';
import { MAX_PAGE_SIZE } from './model';

/** Validate a page size: 1..max, or refuse with the field named. */
export function pageSize(first: number | null | undefined, fallback: number, field = 'first', max = MAX_PAGE_SIZE): number {
  const n = first ?? fallback;
  if (!Number.isInteger(n) || n < 1 || n > max) {
    throw new InvalidParameters([{ field, message: `must be an integer from 1 to ${max}` }]);
  }
  return n;
}

export function encodeCursor(kind: string, key: SortKey): string {
  return Buffer.from(JSON.stringify([kind, key.at.getTime(), key.id]), 'utf8').toString('base64url');
}

/** Decode a cursor of `kind`; anything else is refused as `after`. */
export function decodeCursor(kind: string, cursor: string | null | undefined): SortKey | null {
  if (cursor === null || cursor === undefined || cursor === '') return null;
  const bad = () => new InvalidParameters([{ field: 'after', message: 'not a cursor of this list' }]);
  if (cursor.length > 2048) throw bad();
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw bad();
  }
  if (!Array.isArray(parsed) || parsed.length !== 3) throw bad();
  const [k, ms, id] = parsed as unknown[];
  if (k !== kind || typeof ms !== 'number' || !Number.isFinite(ms) || typeof id !== 'string') throw bad();
  return { at: new Date(ms), id };
}

/**
 * Build a page from rows read with a limit of `first + 1`: the extra row, when present, only
 * says that another page follows.
 */
export function toPage<T>(rows: readonly T[], first: number, cursorOf: (row: T) => string): Page<T> {
  const items = rows.slice(0, first);
  return { edges: items.map((node) => ({ node, cursor: cursorOf(node) })), hasNextPage: rows.length > first };
}

/**
 * The same for a search that may stop early (`stoppedAt`: the key of the last candidate it read):
 * a short page then still has a next one, which starts after that key.
 */
export function toFoundPage<T>(found: Found<T>, first: number, kind: string, cursorOf: (row: T) => string): Page<T> {
  const page = toPage(found.rows, first, cursorOf);
  if (page.hasNextPage || !found.stoppedAt) return page;
  return { ...page, hasNextPage: true, endCursor: encodeCursor(kind, found.stoppedAt) };
}

/** Page through an already ordered, bounded list by item id (for lists the stores only give by limit). */
export function pageOfList<T>(all: readonly T[], first: number, after: string | null | undefined, idOf: (row: T) => string): Page<T> {
  let start = 0;
  if (after) {
    const i = all.findIndex((x) => idOf(x) === after);
    if (i < 0) throw new InvalidParameters([{ field: 'after', message: 'not a cursor of this list' }]);
    start = i + 1;
  }
  return toPage(all.slice(start, start + first + 1), first, idOf);
}
