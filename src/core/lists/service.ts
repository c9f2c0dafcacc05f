/**
 * List use cases, called by every door: lists (create, read, query, update, delete), their items
 * (create one or a batch, read, query, count, comment, archive, unarchive, CSV import and
 * export), the audit entry of every change, and the compiled lists verdicts match against.
 *
 * Verdicts read lists from memory: an environment's active items are compiled once
 * (matcher.ts), reused for `cacheMs`, then refreshed in the background when the set's version
 * changed (one `_id` read; a reload of the items when it did), so a verdict never waits on the
 * database for its lists after the first. A change made through this process is applied to the
 * compiled lists at once (its next verdict sees it); one made by another instance is seen within
 * `cacheMs` plus one read and the reload.
 */
import type { Actor, AuditEntry, AuditLog } from '../audit/model';
import { sha256Hex, uuid } from '../crypto';
import { InvalidParameters, NotFound, type FieldProblem } from '../errors';
import type { EnvId, Principal } from '../model';
import type { Clock } from '../ports';
import { CompiledList, CompiledLists } from './matcher';
import {
  LIST_COLOR,
  LIST_FIELDS,
  LIST_LIMITS,
  type ItemCondition,
  type ItemDraft,
  type ItemField,
  type ItemQuery,
  type List,
  type ListItem,
  type ListQuery,
  type ListSet,
  type QueryFilter,
} from './model';
import type { ListStore } from './ports';
import { normaliseValue } from './values';

/** A new list or a change to one, as a door decoded it (values unchecked). */
export interface ListCommand {
  name?: unknown;
  color?: unknown;
  primaryField?: unknown;
  secondaryField?: unknown;
  description?: unknown;
}

/** What a CSV import did: every row written, or (422) nothing and each bad line. */
export interface ImportReport {
  rows: number;
  created: number;
  updated: number;
}

/** Who changed something through an API secret: the secret's hash prefix, never the secret. */
export const actorOf = (p: Principal): Actor => ({ type: p.kind === 'secret' ? '$api_secret' : '$analyst_key', identifier: p.credentialHash.slice(0, 12) });

/** The id of an item: derived from its list and values, so a value is in a list at most once. */
export const itemIdOf = (listId: string, primary: string, secondary: string | null): string => sha256Hex(`${listId}\u0000${primary}\u0000${secondary ?? ''}`).slice(0, 24);

const MAX_RETRIES = 5;
const MAX_REPORTED_LINES = 100;
const WRITE_BATCH = 1000;

export interface ListDeps {
  store: ListStore;
  audit: AuditLog;
  clock: Clock;
  /** How long verdicts reuse an environment's compiled lists before checking its version (default 1 s). */
  cacheMs?: number;
  /** The active policies naming a list (a list in use cannot be deleted). */
  policiesUsing?: (env: EnvId, listId: string) => Promise<string[]>;
}

interface Cached {
  compiled: CompiledLists;
  until: number;
  refreshing: Promise<void> | null;
}

export class ListService {
  private readonly cache = new Map<EnvId, Cached>();
  private readonly loading = new Map<EnvId, Promise<CompiledLists>>();
  private readonly cacheMs: number;

  constructor(private readonly d: ListDeps) {
    this.cacheMs = d.cacheMs ?? 1000;
  }

  // ---- lists ----

  /** Create a list. */
  async create(env: EnvId, actor: Actor, cmd: ListCommand): Promise<List> {
    const draft = validateList(cmd, null);
    const list = await this.mutate(env, (set, now) => {
      if (set.lists.length >= LIST_LIMITS.lists) throw new InvalidParameters([{ field: 'name', message: `an environment has at most ${LIST_LIMITS.lists} lists` }]);
      if (set.lists.some((l) => l.name === draft.name)) throw new InvalidParameters([{ field: 'name', message: 'a list of this name exists' }]);
      const l: List = { id: uuid(), envId: env, ...draft, createdAt: now, updatedAt: now };
      set.lists.push(l);
      return l;
    });
    this.local(env, set => set.byId.set(list.id, new CompiledList(list)));
    await this.audit(env, actor, 'list.create', { kind: 'list', id: list.id, listId: list.id }, listDetail(list));
    return list;
  }

  async get(env: EnvId, id: string): Promise<List> {
    const l = (await this.d.store.getSet(env))?.lists.find((x) => x.id === id);
    if (!l) throw new NotFound('no such list');
    return l;
  }

  /** Every list of the environment, oldest first. */
  async all(env: EnvId): Promise<List[]> {
    return [...((await this.d.store.getSet(env))?.lists ?? [])];
  }

  /** Lists by Castle's filters and sort, a page at a time. */
  async query(env: EnvId, q: ListQuery): Promise<List[]> {
    const { filters, sort, skip, limit } = validateListQuery(q);
    const rows = (await this.all(env)).filter((l) => filters.every((f) => f(l)));
    rows.sort(sort);
    return rows.slice(skip, skip + limit);
  }

  /** Change a list's name, colour, description or secondary field (its primary field is what it is). */
  async update(env: EnvId, actor: Actor, id: string, cmd: ListCommand): Promise<List> {
    const list = await this.mutate(env, (set, now) => {
      const l = set.lists.find((x) => x.id === id);
      if (!l) throw new NotFound('no such list');
      const next = validateList(cmd, l);
      if (next.name !== l.name && set.lists.some((x) => x.id !== id && x.name === next.name)) throw new InvalidParameters([{ field: 'name', message: 'a list of this name exists' }]);
      Object.assign(l, next, { updatedAt: now });
      return l;
    });
    this.local(env, (c) => {
      const cl = c.byId.get(id);
      if (cl) cl.list = list;
    });
    await this.audit(env, actor, 'list.update', { kind: 'list', id, listId: id }, listDetail(list));
    return list;
  }

  /** Delete a list and its items. A list an active policy names cannot be deleted (archive the policy first). */
  async delete(env: EnvId, actor: Actor, id: string): Promise<void> {
    const using = (await this.d.policiesUsing?.(env, id)) ?? [];
    if ((await this.get(env, id)) && using.length) throw new InvalidParameters([{ field: 'list_id', message: `the list is used by ${using.length === 1 ? 'policy' : 'policies'} ${using.join(', ')}` }]);
    const list = await this.mutate(env, (set) => {
      const at = set.lists.findIndex((x) => x.id === id);
      if (at < 0) throw new NotFound('no such list');
      return set.lists.splice(at, 1)[0] as List;
    });
    this.local(env, (c) => c.byId.delete(id));
    await this.d.store.deleteItems(env, id);
    await this.audit(env, actor, 'list.delete', { kind: 'list', id, listId: id }, { name: list.name });
  }

  /** The ids of the environment's lists (policies check the lists they name). */
  async ids(env: EnvId): Promise<ReadonlySet<string>> {
    return new Set((await this.all(env)).map((l) => l.id));
  }

  // ---- items ----

  /** Add a value. One already active in the list is refused; an archived one comes back with the new comment and expiry. */
  async createItem(env: EnvId, actor: Actor, listId: string, draft: ItemDraft): Promise<ListItem> {
    const list = await this.get(env, listId);
    const now = this.d.clock.now();
    const problems: FieldProblem[] = [];
    const item = buildItem(list, draft, actor, now, problems, '');
    if (!item) throw new InvalidParameters(problems);
    const existing = await this.d.store.getItem(env, listId, item.id);
    if (existing && !existing.archived) throw new InvalidParameters([{ field: 'primary_value', message: `is in this list already (item ${existing.id})` }]);
    if (!existing) await this.checkRoom(env, listId, 1);
    await this.write(env, [item]);
    await this.audit(env, actor, 'list_item.create', { kind: 'list_item', id: item.id, listId }, itemDetail(item));
    return item;
  }

  /**
   * Add or replace up to LIST_LIMITS.batch values at once (Castle's batch upsert): every item is
   * checked first, and nothing is written unless all are valid.
   */
  async createItems(env: EnvId, actor: Actor, listId: string, drafts: readonly ItemDraft[]): Promise<ListItem[]> {
    if (!Array.isArray(drafts) || drafts.length === 0 || drafts.length > LIST_LIMITS.batch) throw new InvalidParameters([{ field: 'items', message: `give 1-${LIST_LIMITS.batch} items` }]);
    const list = await this.get(env, listId);
    const now = this.d.clock.now();
    const problems: FieldProblem[] = [];
    const items = new Map<string, ListItem>();
    drafts.forEach((draft, i) => {
      const item = typeof draft === 'object' && draft !== null ? buildItem(list, draft, actor, now, problems, `items[${i}].`) : (problems.push({ field: `items[${i}]`, message: 'must be an object' }), null);
      if (item) items.set(item.id, item);
    });
    if (problems.length) throw new InvalidParameters(problems.slice(0, MAX_REPORTED_LINES));
    const fresh = await this.keepCreatedAt(env, listId, [...items.values()]);
    await this.checkRoom(env, listId, fresh);
    await this.write(env, [...items.values()]);
    await this.audit(env, actor, 'list_item.batch', { kind: 'list', id: listId, listId }, { items: items.size, created: fresh });
    return [...items.values()];
  }

  async getItem(env: EnvId, listId: string, itemId: string): Promise<ListItem> {
    await this.get(env, listId);
    const item = await this.d.store.getItem(env, listId, itemId);
    if (!item) throw new NotFound('no such list item');
    return item;
  }

  /** Items by Castle's filters and sort, a page at a time. */
  async queryItems(env: EnvId, listId: string, q: ListQuery): Promise<ListItem[]> {
    const list = await this.get(env, listId);
    return this.d.store.queryItems(env, listId, validateItemQuery(list, q));
  }

  /** How many items match Castle's filters. */
  async countItems(env: EnvId, listId: string, filters: readonly QueryFilter[] | undefined): Promise<number> {
    const list = await this.get(env, listId);
    return this.d.store.countItems(env, listId, validateItemQuery(list, { filters }).conditions);
  }

  /** Change an item's comment (and, when given, its expiry). */
  async updateItem(env: EnvId, actor: Actor, listId: string, itemId: string, patch: { comment?: unknown; expiresAt?: unknown }): Promise<ListItem> {
    const item = await this.getItem(env, listId, itemId);
    const now = this.d.clock.now();
    const problems: FieldProblem[] = [];
    const comment = checkComment(patch.comment, problems, 'comment');
    const expiresAt = patch.expiresAt === undefined ? item.expiresAt : checkExpiry(patch.expiresAt, now, problems, 'expires_at');
    if (patch.comment === undefined) problems.push({ field: 'comment', message: 'is required' });
    if (problems.length) throw new InvalidParameters(problems);
    const next: ListItem = { ...item, comment, expiresAt, updatedAt: now };
    await this.write(env, [next]);
    await this.audit(env, actor, 'list_item.update', { kind: 'list_item', id: itemId, listId }, { comment, expires_at: expiresAt?.toISOString() ?? null });
    return next;
  }

  /** Archive an item: it stops matching at once and stays readable. */
  async archiveItem(env: EnvId, actor: Actor, listId: string, itemId: string): Promise<ListItem> {
    return this.setArchived(env, actor, listId, itemId, true);
  }

  /** Unarchive an item: it matches again (until its expiry, if any). */
  async unarchiveItem(env: EnvId, actor: Actor, listId: string, itemId: string): Promise<ListItem> {
    return this.setArchived(env, actor, listId, itemId, false);
  }

  /**
   * Import rows of CSV (`lines`: the text, line by line, header first: `value` or
   * `primary_value`, and optionally `secondary_value`, `comment`, `expires_at`; other columns are
   * ignored, so an export imports back). Every line is checked before anything is written: one bad
   * line answers 422 naming each bad line (`line N`) and imports nothing. Rows are upserted by
   * value, so an import can be run again.
   */
  async importCsv(env: EnvId, actor: Actor, listId: string, lines: AsyncIterable<string>): Promise<ImportReport> {
    const list = await this.get(env, listId);
    const now = this.d.clock.now();
    const problems: FieldProblem[] = [];
    const items = new Map<string, ListItem>();
    let header: string[] | null = null;
    let lineNo = 0;
    let rows = 0;
    let more = 0;
    for await (const raw of lines) {
      lineNo++;
      const line = lineNo === 1 ? raw.replace(/^\ufeff/, '') : raw;
      if (line.trim() === '') continue;
      const cells = parseCsvLine(line);
      if (!cells) {
        report(problems, lineNo, 'is not valid CSV (a quoted field must end on its line)', () => more++);
        continue;
      }
      if (!header) {
        header = cells.map((c) => c.trim().toLowerCase());
        if (!header.includes('value') && !header.includes('primary_value')) {
          throw new InvalidParameters([{ field: 'line 1', message: 'the header must name a `value` (or `primary_value`) column' }]);
        }
        continue;
      }
      rows++;
      if (rows > LIST_LIMITS.importRows) throw new InvalidParameters([{ field: `line ${lineNo}`, message: `an import has at most ${LIST_LIMITS.importRows} rows` }]);
      const cell = (name: string): string | undefined => {
        const at = (header as string[]).indexOf(name);
        return at < 0 ? undefined : cells[at];
      };
      const expires = cell('expires_at') ?? cell('auto_archives_at');
      const draft: ItemDraft = {
        primaryValue: cell('value') ?? cell('primary_value') ?? '',
        secondaryValue: cell('secondary_value') || undefined,
        comment: cell('comment') || undefined,
        expiresAt: expires ? expires : undefined,
      };
      const lineProblems: FieldProblem[] = [];
      const item = buildItem(list, draft, actor, now, lineProblems, '');
      if (item) items.set(item.id, item);
      for (const p of lineProblems) report(problems, lineNo, `${p.field}: ${p.message}`, () => more++);
    }
    if (!header) throw new InvalidParameters([{ field: 'line 1', message: 'the CSV is empty: give a header and rows' }]);
    if (problems.length) {
      if (more) problems.push({ field: 'lines', message: `and ${more} more bad lines; nothing was imported` });
      throw new InvalidParameters(problems);
    }
    const all = [...items.values()];
    let created = 0;
    for (let i = 0; i < all.length; i += WRITE_BATCH) created += await this.keepCreatedAt(env, listId, all.slice(i, i + WRITE_BATCH));
    await this.checkRoom(env, listId, created);
    for (let i = 0; i < all.length; i += WRITE_BATCH) await this.write(env, all.slice(i, i + WRITE_BATCH));
    await this.audit(env, actor, 'list_item.import', { kind: 'list', id: listId, listId }, { rows, items: all.length, created });
    return { rows, created, updated: all.length - created };
  }

  /** The list's items as CSV (header first), a batch of rows at a time; archived items only when asked. */
  async *exportCsv(env: EnvId, listId: string, includeArchived: boolean): AsyncGenerator<string> {
    await this.get(env, listId);
    yield `${EXPORT_COLUMNS.join(',')}\n`;
    for await (const batch of this.d.store.scanItems(env, [listId], !includeArchived)) {
      yield batch
        .map((i) =>
          [i.id, i.primaryValue, i.secondaryValue ?? '', i.comment ?? '', i.expiresAt?.toISOString() ?? '', String(i.archived), i.archivedAt?.toISOString() ?? '', i.author.type, i.author.identifier, i.createdAt.toISOString()]
            .map(csvCell)
            .join(','),
        )
        .join('\n')
        .concat('\n');
    }
  }

  /** The newest audit entries of the environment (of one list or item when `targetId` is given). */
  auditLog(env: EnvId, q: { targetId?: string; limit?: number } = {}): Promise<AuditEntry[]> {
    return this.d.audit.recent(env, { ...(q.targetId ? { targetId: q.targetId } : {}), limit: Math.min(Math.max(q.limit ?? 50, 1), 500) });
  }

  // ---- verdicts ----

  /**
   * The compiled lists a verdict matches against. Only the first verdict of an environment in
   * this process waits for the read; afterwards the compiled lists are answered at once and
   * refreshed in the background once they are older than `cacheMs` and the set's version moved.
   */
  async forVerdicts(env: EnvId): Promise<CompiledLists> {
    const now = this.d.clock.now().getTime();
    const hit = this.cache.get(env);
    if (hit) {
      if (hit.until <= now && !hit.refreshing) hit.refreshing = this.refresh(env, hit);
      return hit.compiled;
    }
    let pending = this.loading.get(env);
    if (!pending) {
      pending = this.load(env).finally(() => this.loading.delete(env));
      this.loading.set(env, pending);
    }
    const compiled = await pending;
    if (!this.cache.has(env)) {
      if (this.cache.size > 10_000) this.cache.clear();
      this.cache.set(env, { compiled, until: this.d.clock.now().getTime() + this.cacheMs, refreshing: null });
    }
    return (this.cache.get(env) as Cached).compiled;
  }

  private refresh(env: EnvId, hit: Cached): Promise<void> {
    const done = (compiled: CompiledLists | null) => {
      const current = this.cache.get(env);
      if (current !== hit) return;
      // A load that began before a change of this process must not undo it (versions only grow).
      if (compiled && compiled.version >= hit.compiled.version) hit.compiled = compiled;
      hit.until = this.d.clock.now().getTime() + this.cacheMs;
      hit.refreshing = null;
    };
    return this.d.store.getSet(env).then(
      async (set) => {
        if ((set?.version ?? 0) === hit.compiled.version) return done(null);
        done(await this.load(env));
      },
      // Keep answering the lists we have; the next verdict after the delay tries again.
      () => done(null),
    ).catch(() => done(null));
  }

  /** The set first, then its items: a version read this way never claims items it lacks. */
  private async load(env: EnvId): Promise<CompiledLists> {
    const set = await this.d.store.getSet(env);
    if (!set || set.lists.length === 0) return new CompiledLists(set?.version ?? 0);
    const items = new Map<string, ListItem[]>(set.lists.map((l) => [l.id, []]));
    const now = this.d.clock.now().getTime();
    for await (const batch of this.d.store.scanItems(env, set.lists.map((l) => l.id), true)) {
      for (const i of batch) if (!i.expiresAt || i.expiresAt.getTime() > now) items.get(i.listId)?.push(i);
    }
    return new CompiledLists(set.version, set.lists.map((l) => new CompiledList(l, items.get(l.id) ?? [])));
  }

  /** Apply a change of this process to its compiled lists, if loaded (the next verdict sees it). */
  private local(env: EnvId, change: (c: CompiledLists) => void, version?: number): void {
    const hit = this.cache.get(env);
    if (!hit) return;
    change(hit.compiled);
    // Our own change made the version one more: the compiled lists are current. Otherwise another
    // instance changed something too, and the next refresh reloads.
    if (version !== undefined && version === hit.compiled.version + 1) hit.compiled.version = version;
  }

  private async setArchived(env: EnvId, actor: Actor, listId: string, itemId: string, archived: boolean): Promise<ListItem> {
    const item = await this.getItem(env, listId, itemId);
    const now = this.d.clock.now();
    if (!archived && item.expiresAt && item.expiresAt.getTime() <= now.getTime()) {
      throw new InvalidParameters([{ field: 'list_item_id', message: 'the item has expired: add the value again with a new expiry' }]);
    }
    const next: ListItem = { ...item, archived, archivedAt: archived ? now : null, updatedAt: now };
    if (item.archived !== archived) await this.write(env, [next]);
    await this.audit(env, actor, archived ? 'list_item.archive' : 'list_item.unarchive', { kind: 'list_item', id: itemId, listId }, { value: item.primaryValue });
    return next;
  }

  /** Store items, count the change in the version, and apply it here. */
  private async write(env: EnvId, items: readonly ListItem[]): Promise<void> {
    await this.d.store.putItems(items);
    const version = await this.d.store.bumpVersion(env);
    this.local(
      env,
      (c) => {
        for (const i of items) c.byId.get(i.listId)?.apply(i);
      },
      version,
    );
  }

  /** Keep the creation time of items already stored; answers how many are new. */
  private async keepCreatedAt(env: EnvId, listId: string, items: ListItem[]): Promise<number> {
    let fresh = 0;
    const known = await this.d.store.queryItems(env, listId, { conditions: [{ field: 'id', op: 'in', value: items.map((i) => i.id) }], sort: { field: 'createdAt', order: 'asc' }, skip: 0, limit: items.length });
    const byId = new Map(known.map((k) => [k.id, k]));
    for (const i of items) {
      const k = byId.get(i.id);
      if (k) i.createdAt = k.createdAt;
      else fresh++;
    }
    return fresh;
  }

  private async checkRoom(env: EnvId, listId: string, adding: number): Promise<void> {
    if (adding === 0) return;
    const stored = await this.d.store.countItems(env, listId, []);
    if (stored + adding > LIST_LIMITS.itemsPerList) {
      throw new InvalidParameters([{ field: 'items', message: `a list holds at most ${LIST_LIMITS.itemsPerList} items (archived ones included); it has ${stored}` }]);
    }
  }

  private async mutate<T>(env: EnvId, change: (set: ListSet, now: Date) => T): Promise<T> {
    for (let attempt = 0; attempt < MAX_RETRIES; attempt++) {
      const set = (await this.d.store.getSet(env)) ?? { envId: env, version: 0, lists: [] };
      const expected = set.version;
      const result = change(set, this.d.clock.now());
      set.version = expected + 1;
      if (await this.d.store.putSet(set, expected)) {
        const hit = this.cache.get(env);
        if (hit && hit.compiled.version === expected) hit.compiled.version = set.version;
        return result;
      }
    }
    throw new Error('list set changed concurrently too many times');
  }

  private async audit(env: EnvId, actor: Actor, action: string, target: AuditEntry['target'], detail: Record<string, unknown>): Promise<void> {
    await this.d.audit.append([{ id: uuid(), envId: env, at: this.d.clock.now(), actor, action, target, detail }]);
  }
}

export const EXPORT_COLUMNS = ['id', 'value', 'secondary_value', 'comment', 'expires_at', 'archived', 'archived_at', 'author_type', 'author_identifier', 'created_at'] as const;

function report(problems: FieldProblem[], line: number, message: string, overflow: () => void): void {
  if (problems.length < MAX_REPORTED_LINES) problems.push({ field: `line ${line}`, message });
  else overflow();
}

const listDetail = (l: List) => ({ name: l.name, color: l.color, description: l.description, primary_field: l.primaryField, secondary_field: l.secondaryField });
const itemDetail = (i: ListItem) => ({ value: i.primaryValue, secondary_value: i.secondaryValue, comment: i.comment, expires_at: i.expiresAt?.toISOString() ?? null, author: i.author });

/** A list's fields from a command: all of them for a new list (`existing` null), the given ones over `existing`. */
function validateList(cmd: ListCommand, existing: List | null): Omit<List, 'id' | 'envId' | 'createdAt' | 'updatedAt'> {
  const p: FieldProblem[] = [];
  const text = (v: unknown, field: string, max: number, required: boolean): string | null | undefined => {
    if (v === undefined) {
      if (required) p.push({ field, message: 'is required' });
      return undefined;
    }
    if (v === null && !required) return null;
    if (typeof v !== 'string' || (required && !v.trim()) || v.length > max) {
      p.push({ field, message: `must be a${required ? ' non-empty' : ''} string of at most ${max} characters` });
      return undefined;
    }
    return v.trim();
  };
  const name = text(cmd.name, 'name', LIST_LIMITS.name, existing === null);
  const color = text(cmd.color, 'color', 21, existing === null);
  if (typeof color === 'string' && !LIST_COLOR.test(color)) p.push({ field: 'color', message: 'must be a colour name like $red, $green or $blue' });
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

function checkComment(v: unknown, p: FieldProblem[], field: string): string | null {
  if (v === undefined || v === null) return null;
  if (typeof v !== 'string' || v.length > LIST_LIMITS.comment) {
    p.push({ field, message: `must be a string of at most ${LIST_LIMITS.comment} characters` });
    return null;
  }
  return v.trim() || null;
}

function checkExpiry(v: unknown, now: Date, p: FieldProblem[], field: string): Date | null {
  if (v === undefined || v === null || v === '') return null;
  const d = typeof v === 'string' && /^\d{4}-\d{2}-\d{2}(T[\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(v.trim()) ? new Date(v.trim()) : null;
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

function checkAuthor(v: unknown, actor: Actor, p: FieldProblem[], field: string): Actor {
  if (v === undefined || v === null) return actor;
  // Castle's author is `{type, identifier}`; a bare string is taken as the identifier.
  if (typeof v === 'string' && v.trim() && v.length <= 256) return { type: v.startsWith('$') ? v : '$other', identifier: v.startsWith('$') ? actor.identifier : v };
  if (typeof v === 'object' && !Array.isArray(v)) {
    const { type, identifier } = v as Record<string, unknown>;
    const okType = typeof type === 'string' && /^\$?[A-Za-z0-9_.-]{1,64}$/.test(type);
    const okId = typeof identifier === 'string' && identifier.trim().length > 0 && identifier.length <= 256;
    if (okType && okId) return { type, identifier: identifier.trim() };
  }
  p.push({ field, message: 'must be {type, identifier} (e.g. {"type": "$analyst_email", "identifier": "ana@example.com"})' });
  return actor;
}

/** A checked item from a draft, or null (and its problems, fields prefixed). */
function buildItem(list: List, d: ItemDraft, actor: Actor, now: Date, p: FieldProblem[], prefix: string): ListItem | null {
  const before = p.length;
  const primary = normaliseValue(list.type, d.primaryValue);
  if (!primary.ok) p.push({ field: `${prefix}primary_value`, message: d.primaryValue === undefined ? 'is required' : primary.message });
  let secondary: string | null = null;
  if (d.secondaryValue !== undefined && d.secondaryValue !== null) {
    if (!list.secondaryType) p.push({ field: `${prefix}secondary_value`, message: 'the list has no secondary field' });
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
  return { id: itemIdOf(list.id, primary.value, secondary), envId: list.envId, listId: list.id, primaryValue: primary.value, secondaryValue: secondary, comment, author, createdAt: now, updatedAt: now, expiresAt, archived: false, archivedAt: null };
}

type Op = 'eq' | 'ne' | 'gt' | 'gte' | 'lt' | 'lte' | 'in' | 'nin' | 'contains';
const OPS: readonly Op[] = ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'nin', 'contains'];

function pageOf(q: ListQuery, p: FieldProblem[]): { skip: number; limit: number } {
  const page = q.page ?? 1;
  const size = q.resultsSize ?? 50;
  if (!Number.isInteger(page) || page < 1 || page > 100_000) p.push({ field: 'page', message: 'must be an integer from 1' });
  if (!Number.isInteger(size) || size < 1 || size > LIST_LIMITS.pageSize) p.push({ field: 'results_size', message: `must be an integer from 1 to ${LIST_LIMITS.pageSize}` });
  return { skip: (Number.isInteger(page) && page >= 1 ? page - 1 : 0) * (Number.isInteger(size) && size >= 1 ? size : 50), limit: Number.isInteger(size) ? size : 50 };
}

function opOf(f: QueryFilter, i: number, p: FieldProblem[], allowed: readonly Op[]): Op | null {
  const op = typeof f.op === 'string' ? f.op.replace(/^\$/, '').toLowerCase() : '';
  if (!allowed.includes(op as Op)) {
    p.push({ field: `filters[${i}].op`, message: `must be one of ${allowed.map((o) => `$${o}`).join(', ')}` });
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

function sortOf(q: ListQuery, p: FieldProblem[], fields: readonly string[], fallback: string): { field: string; desc: boolean } {
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

function validateListQuery(q: ListQuery): { filters: ((l: List) => boolean)[]; sort: (a: List, b: List) => number; skip: number; limit: number } {
  const p: FieldProblem[] = [];
  const page = pageOf(q, p);
  const filters = filtersOf(q, p).flatMap((f, i) => {
    const get = LIST_FIELD_VALUE[f.field];
    if (!get) {
      p.push({ field: `filters[${i}].field`, message: `must be one of ${Object.keys(LIST_FIELD_VALUE).join(', ')}` });
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
    const values = many ? (Array.isArray(f.value) && f.value.length <= 1000 ? f.value.map(norm) : [undefined]) : [norm(f.value)];
    if (values.some((v) => v === undefined)) {
      p.push({ field: `filters[${i}].value`, message: many ? 'must be a list of at most 1000 strings' : dated ? 'must be an ISO 8601 time' : 'must be a string' });
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
            return v !== null && w !== null && (op === 'gt' ? v > w : op === 'gte' ? v >= w : op === 'lt' ? v < w : v <= w);
        }
      },
    ];
  });
  const sort = sortOf(q, p, ['name', 'created_at', 'updated_at'], 'created_at');
  if (p.length) throw new InvalidParameters(p);
  const get = LIST_FIELD_VALUE[sort.field] as (l: List) => string | null;
  return { filters, sort: (a, b) => (sort.desc ? -1 : 1) * ((get(a) ?? '') < (get(b) ?? '') ? -1 : (get(a) ?? '') > (get(b) ?? '') ? 1 : 0), ...page };
}

const ITEM_FIELDS: Readonly<Record<string, { field: ItemField; kind: 'text' | 'value' | 'secondary' | 'bool' | 'date' }>> = {
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
      p.push({ field: `filters[${i}].field`, message: `must be one of ${Object.keys(ITEM_FIELDS).join(', ')}` });
      return [];
    }
    const allowed: readonly Op[] = spec.kind === 'bool' ? ['eq', 'ne'] : spec.kind === 'date' ? ['eq', 'ne', 'gt', 'gte', 'lt', 'lte'] : OPS;
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
          const type = spec.kind === 'value' ? list.type : spec.kind === 'secondary' ? list.secondaryType : null;
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
      p.push({ field: `filters[${i}].value`, message: spec.kind === 'bool' ? 'must be true or false' : spec.kind === 'date' ? 'must be an ISO 8601 time' : 'must be a string' });
      return [];
    }
    return [op === 'contains' ? { field: spec.field, op, value: value as string } : { field: spec.field, op, value }];
  });
  const sort = sortOf(q, p, Object.keys(ITEM_SORT), 'created_at');
  if (p.length) throw new InvalidParameters(p);
  return { conditions, sort: { field: ITEM_SORT[sort.field] as ItemQuery['sort']['field'], order: sort.desc ? 'desc' : 'asc' }, ...page };
}

/** One line of CSV (RFC 4180 quoting; a quoted field cannot hold a line break): its cells, or null. */
export function parseCsvLine(line: string): string[] | null {
  const cells: string[] = [];
  let i = 0;
  const s = line.endsWith('\r') ? line.slice(0, -1) : line;
  for (;;) {
    if (s[i] === '"') {
      let cell = '';
      i++;
      for (;;) {
        const q = s.indexOf('"', i);
        if (q < 0) return null;
        cell += s.slice(i, q);
        if (s[q + 1] === '"') {
          cell += '"';
          i = q + 2;
        } else {
          i = q + 1;
          break;
        }
      }
      cells.push(cell);
      if (i === s.length) return cells;
      if (s[i] !== ',') return null;
      i++;
    } else {
      const c = s.indexOf(',', i);
      const cell = c < 0 ? s.slice(i) : s.slice(i, c);
      if (cell.includes('"')) return null;
      cells.push(cell);
      if (c < 0) return cells;
      i = c + 1;
    }
  }
}

/** A CSV cell, quoted when it must be; a leading formula character is escaped for spreadsheets. */
export function csvCell(v: string): string {
  const safe = /^[=+\-@\t\r]/.test(v) && !/^-?\d/.test(v) ? `'${v}` : v;
  return /[",\n\r]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
}

/** Text arriving in chunks, as lines (without their line breaks); a line longer than `maxLine` fails. */
export async function* linesOf(chunks: AsyncIterable<Uint8Array | string>, maxLine = 8192): AsyncGenerator<string> {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  let rest = '';
  for await (const chunk of chunks) {
    let text: string;
    try {
      text = typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true });
    } catch {
      throw new InvalidParameters([{ field: 'body', message: 'is not UTF-8 text' }]);
    }
    rest += text;
    let nl: number;
    while ((nl = rest.indexOf('\n')) >= 0) {
      yield rest.slice(0, nl);
      rest = rest.slice(nl + 1);
    }
    if (rest.length > maxLine) throw new InvalidParameters([{ field: 'body', message: `a line is longer than ${maxLine} characters` }]);
  }
  if (rest) yield rest;
}
