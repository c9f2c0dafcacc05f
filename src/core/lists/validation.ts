/**
 * Lists' and items' checks: a list's fields from a command, an item from a draft (its value
 * normalised for the list's type, its comment, expiry and author), each problem named by field,
 * and what the audit entry of a change records.
 */
import type { Actor } from '../audit/model';
import { InvalidParameters, type FieldProblem } from '../errors';
import { LIST_COLOR, LIST_FIELDS, LIST_LIMITS, type ItemDraft, type List, type ListItem } from './model';
import { normaliseValue } from './values';
import { itemIdOf } from './ids';

/** A new list or a change to one, as a door decoded it (values unchecked). */
export interface ListCommand {
  name?: unknown;
  color?: unknown;
  primaryField?: unknown;
  secondaryField?: unknown;
  description?: unknown;
}

/** Bad lines an import names at most (the rest are counted). */
export const MAX_REPORTED_LINES = 100;

export function report(problems: FieldProblem[], line: number, message: string, overflow: () => void): void {
  if (problems.length < MAX_REPORTED_LINES) problems.push({ field: `line ${line}`, message });
  else overflow();
}

export const listDetail = (l: List) => ({
  name: l.name,
  color: l.color,
  description: l.description,
  primary_field: l.primaryField,
  secondary_field: l.secondaryField,
});
export const itemDetail = (i: ListItem) => ({
  value: i.primaryValue,
  secondary_value: i.secondaryValue,
  comment: i.comment,
  expires_at: i.expiresAt?.toISOString() ?? null,
  author: i.author,
});

/** A list's fields from a command: all of them for a new list (`existing` null), the given ones over `existing`. */
export function validateList(
  cmd: ListCommand,
  existing: List | null,
): Omit<List, 'id' | 'envId' | 'createdAt' | 'updatedAt'> {
  const p: FieldProblem[] = [];
  const text = (v: unknown, field: string, max: number, required: boolean): string | null | undefined => {
    if (v === undefined) {
      if (required) p.push({ field, message: 'is required' });
      return undefined;
    }
    if (v === null && !required) return null;
    if (typeof v !== 'string' || (required && !v.trim()) || v.length > max) {
      p.push({
        field,
        message: `must be a${required ? ' non-empty' : ''} string of at most ${max} characters`,
      });
      return undefined;
    }
    return v.trim();
  };
  const name = text(cmd.name, 'name', LIST_LIMITS.name, existing === null);
  const color = text(cmd.color, 'color', 21, existing === null);
  if (typeof color === 'string' && !LIST_COLOR.test(color))
    p.push({ field: 'color', message: 'must be a colour name like $red, $green or $blue' });
  const description = text(cmd.description, 'description', LIST_LIMITS.description, false);
  const fieldOf = (v: unknown, field: string): string | null | undefined => {
    if (v === undefined) return undefined;
    if (v === null && field === 'secondary_field') return null;
    if (typeof v !== 'string' || !Object.prototype.hasOwnProperty.call(LIST_FIELDS, v)) {
      p.push({ field, message: `must be one of ${Object.keys(LIST_FIELDS).join(', ')}` });
      return undefined;
    }
    return v;
  };
  let primaryField: string | null | undefined;
  if (existing === null) {
    primaryField = fieldOf(cmd.primaryField, 'primary_field');
    if (cmd.primaryField === undefined) p.push({ field: 'primary_field', message: 'is required' });
  } else if (cmd.primaryField !== undefined && cmd.primaryField !== existing.primaryField) {
    p.push({ field: 'primary_field', message: 'cannot change: create another list' });
  }
  const secondaryField = fieldOf(cmd.secondaryField, 'secondary_field');
  if (existing && secondaryField !== undefined && secondaryField !== existing.secondaryField) {
    p.push({ field: 'secondary_field', message: 'cannot change: create another list' });
  }
  if (p.length) throw new InvalidParameters(p);
  const primary = (primaryField ?? existing?.primaryField) as string;
  const secondary = secondaryField === undefined ? (existing?.secondaryField ?? null) : secondaryField;
  return {
    name: name ?? (existing as List).name,
    color: color ?? (existing as List).color,
    description: description === undefined ? (existing?.description ?? null) : description,
    primaryField: primary,
    type: LIST_FIELDS[primary] as List['type'],
    secondaryField: secondary,
    secondaryType: secondary ? (LIST_FIELDS[secondary] as List['type']) : null,
  };
}

export function checkComment(v: unknown, p: FieldProblem[], field: string): string | null {
  if (v === undefined || v === null) return null;
  if (typeof v !== 'string' || v.length > LIST_LIMITS.comment) {
    p.push({ field, message: `must be a string of at most ${LIST_LIMITS.comment} characters` });
    return null;
  }
  return v.trim() || null;
}

export function checkExpiry(v: unknown, now: Date, p: FieldProblem[], field: string): Date | null {
  if (v === undefined || v === null || v === '') return null;
  const d =
    typeof v === 'string' && /^\d{4}-\d{2}-\d{2}(T[\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(v.trim())
      ? new Date(v.trim())
      : null;
  if (!d || Number.isNaN(d.getTime())) {
    p.push({ field, message: 'must be an ISO 8601 time (2030-01-31T00:00:00Z)' });
    return null;
  }
  if (d.getTime() <= now.getTime()) {
    p.push({ field, message: 'must be in the future' });
    return null;
  }
  return d;
}

export function checkAuthor(v: unknown, actor: Actor, p: FieldProblem[], field: string): Actor {
  if (v === undefined || v === null) return actor;
  // Castle's author is `{type, identifier}`; a bare string is taken as the identifier.
  if (typeof v === 'string' && v.trim() && v.length <= 256)
    return { type: v.startsWith('$') ? v : '$other', identifier: v.startsWith('$') ? actor.identifier : v };
  if (typeof v === 'object' && !Array.isArray(v)) {
    const { type, identifier } = v as Record<string, unknown>;
    const okType = typeof type === 'string' && /^\$?[A-Za-z0-9_.-]{1,64}$/.test(type);
    const okId = typeof identifier === 'string' && identifier.trim().length > 0 && identifier.length <= 256;
    if (okType && okId) return { type, identifier: identifier.trim() };
  }
  p.push({
    field,
    message: 'must be {type, identifier} (e.g. {"type": "$analyst_email", "identifier": "ana@example.com"})',
  });
  return actor;
}

/** A checked item from a draft, or null (and its problems, fields prefixed). */
export function buildItem(
  list: List,
  d: ItemDraft,
  actor: Actor,
  now: Date,
  p: FieldProblem[],
  prefix: string,
): ListItem | null {
  const before = p.length;
  const primary = normaliseValue(list.type, d.primaryValue);
  if (!primary.ok)
    p.push({
      field: `${prefix}primary_value`,
      message: d.primaryValue === undefined ? 'is required' : primary.message,
    });
  let secondary: string | null = null;
  if (d.secondaryValue !== undefined && d.secondaryValue !== null) {
    if (!list.secondaryType)
      p.push({ field: `${prefix}secondary_value`, message: 'the list has no secondary field' });
    else {
      const s = normaliseValue(list.secondaryType, d.secondaryValue);
      if (s.ok) secondary = s.value;
      else p.push({ field: `${prefix}secondary_value`, message: s.message });
    }
  }
  const comment = checkComment(d.comment, p, `${prefix}comment`);
  const expiresAt = checkExpiry(d.expiresAt, now, p, `${prefix}expires_at`);
  const author = checkAuthor(d.author, actor, p, `${prefix}author`);
  if (p.length > before || !primary.ok) return null;
  return {
    id: itemIdOf(list.id, primary.value, secondary),
    envId: list.envId,
    listId: list.id,
    primaryValue: primary.value,
    secondaryValue: secondary,
    comment,
    author,
    createdAt: now,
    updatedAt: now,
    expiresAt,
    archived: false,
    archivedAt: null,
  };
}
