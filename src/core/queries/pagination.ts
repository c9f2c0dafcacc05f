/**
 * Keyset pagination: pages are read newest first by (time, id), and a cursor is that pair,
 * encoded opaquely. A cursor carries no tenant: it only positions a search that is always scoped
 * to the caller's environment, so a forged one can reveal nothing of another environment.
 */
import { InvalidParameters } from '../errors';
import type { Found, Page, SortKey } from './model';
import { MAX_PAGE_SIZE } from './model';

/** Validate a page size: 1..max, or refuse with the field named. */
export function pageSize(
  first: number | null | undefined,
  fallback: number,
  field = 'first',
  max = MAX_PAGE_SIZE,
): number {
  const n = first ?? fallback;
  if (!Number.isInteger(n) || n < 1 || n > max) {
    throw new InvalidParameters([{ field, message: `must be an integer from 1 to ${max}` }]);
  }
  return n;
}

/** An opaque cursor: its parts (the cursor's kind first) as base64url JSON. */
export function encodeParts(parts: readonly unknown[]): string {
  return Buffer.from(JSON.stringify(parts), 'utf8').toString('base64url');
}

/**
 * The parts of a cursor of `kind` (the kind itself dropped), null for no cursor; anything that is
 * not such a cursor is refused as `after`. `valid` checks the rest of the parts.
 */
export function decodeParts(
  kind: string,
  cursor: string | null | undefined,
  valid: (rest: unknown[]) => boolean,
  maxLength = 2048,
): unknown[] | null {
  if (cursor === null || cursor === undefined || cursor === '') return null;
  const bad = () => new InvalidParameters([{ field: 'after', message: 'not a cursor of this list' }]);
  if (cursor.length > maxLength) throw bad();
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw bad();
  }
  if (!Array.isArray(parsed) || parsed[0] !== kind || !valid(parsed.slice(1))) throw bad();
  return parsed.slice(1);
}

export function encodeCursor(kind: string, key: SortKey): string {
  return encodeParts([kind, key.at.getTime(), key.id]);
}

/** Decode a cursor of `kind`; anything else is refused as `after`. */
export function decodeCursor(kind: string, cursor: string | null | undefined): SortKey | null {
  const parts = decodeParts(
    kind,
    cursor,
    (r) => r.length === 2 && typeof r[0] === 'number' && Number.isFinite(r[0]) && typeof r[1] === 'string',
  );
  return parts ? { at: new Date(parts[0] as number), id: parts[1] as string } : null;
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
export function toFoundPage<T>(
  found: Found<T>,
  first: number,
  kind: string,
  cursorOf: (row: T) => string,
): Page<T> {
  const page = toPage(found.rows, first, cursorOf);
  if (page.hasNextPage || !found.stoppedAt) return page;
  return { ...page, hasNextPage: true, endCursor: encodeCursor(kind, found.stoppedAt) };
}

/** Page through an already ordered, bounded list by item id (for lists the stores only give by limit). */
export function pageOfList<T>(
  all: readonly T[],
  first: number,
  after: string | null | undefined,
  idOf: (row: T) => string,
): Page<T> {
  let start = 0;
  if (after) {
    const i = all.findIndex((x) => idOf(x) === after);
    if (i < 0) throw new InvalidParameters([{ field: 'after', message: 'not a cursor of this list' }]);
    start = i + 1;
  }
  return toPage(all.slice(start, start + first + 1), first, idOf);
}
