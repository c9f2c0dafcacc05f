/**
 * List use cases, called by every door: lists (create, read, query, update, delete), their items
 * (create one or a batch, read, query, count, comment, archive, unarchive, CSV import and
 * export), the audit entry of every change, and the compiled lists verdicts match against
 * (compiled-cache.ts). Checks are in validation.ts and queries.ts, CSV in csv.ts.
 */
import type { Actor, AuditEntry, AuditLog } from '../audit/model';
import { uuid } from '../crypto';
import { InvalidParameters, NotFound, type FieldProblem } from '../errors';
import type { EnvId } from '../model';
import type { Clock } from '../ports';
import { CompiledListCache } from './compiled-cache';
import { EXPORT_COLUMNS, csvCell, importedCell, parseCsvLine } from './csv';
import { CompiledList, type CompiledLists } from './matcher';
import { LIST_LIMITS, type ItemDraft, type List, type ListItem, type ListQuery, type ListSet, type QueryFilter } from './model';
import type { ListStore } from './ports';
import { validateItemQuery, validateListQuery } from './queries';
import { type ListCommand, buildItem, checkComment, checkExpiry, itemDetail, listDetail, MAX_REPORTED_LINES, report, validateList } from './validation';

export { actorOf, itemIdOf } from './ids';
export { EXPORT_COLUMNS, csvCell, exportedCell, importedCell, isFormulaLike, linesOf, parseCsvLine } from './csv';
export { validateItemQuery } from './queries';
export type { ListCommand } from './validation';
/** What a CSV import did: every row written, or (422) nothing and each bad line. */
export interface ImportReport {
  rows: number;
  created: number;
  updated: number;
}

const MAX_RETRIES = 5;
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

export class ListService {
  private readonly compiled: CompiledListCache;

  constructor(private readonly d: ListDeps) {
    this.compiled = new CompiledListCache(d.store, d.clock, d.cacheMs ?? 1000);
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
    this.compiled.local(env, set => set.byId.set(list.id, new CompiledList(list)));
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
    this.compiled.local(env, (c) => {
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
    this.compiled.local(env, (c) => c.byId.delete(id));
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
    await this.write(env, list, [item]);
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
    await this.write(env, list, [...items.values()]);
    await this.audit(env, actor, 'list_item.batch', { kind: 'list', id: listId, listId }, { items: items.size, created: fresh });
    return [...items.values()];
  }

  async getItem(env: EnvId, listId: string, itemId: string): Promise<ListItem> {
    return (await this.listAndItem(env, listId, itemId)).item;
  }

  private async listAndItem(env: EnvId, listId: string, itemId: string): Promise<{ list: List; item: ListItem }> {
    const list = await this.get(env, listId);
    const item = await this.d.store.getItem(env, listId, itemId);
    if (!item) throw new NotFound('no such list item');
    return { list, item };
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
    const { list, item } = await this.listAndItem(env, listId, itemId);
    const now = this.d.clock.now();
    const problems: FieldProblem[] = [];
    const comment = checkComment(patch.comment, problems, 'comment');
    const expiresAt = patch.expiresAt === undefined ? item.expiresAt : checkExpiry(patch.expiresAt, now, problems, 'expires_at');
    if (patch.comment === undefined) problems.push({ field: 'comment', message: 'is required' });
    if (problems.length) throw new InvalidParameters(problems);
    const next: ListItem = { ...item, comment, expiresAt, updatedAt: now };
    await this.write(env, list, [next]);
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
        const text = at < 0 ? undefined : cells[at];
        return text === undefined ? undefined : importedCell(text);
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
    for (let i = 0; i < all.length; i += WRITE_BATCH) await this.write(env, list, all.slice(i, i + WRITE_BATCH));
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

  /** The compiled lists a verdict matches against (compiled-cache.ts). */
  forVerdicts(env: EnvId): Promise<CompiledLists> {
    return this.compiled.forVerdicts(env);
  }

  private async setArchived(env: EnvId, actor: Actor, listId: string, itemId: string, archived: boolean): Promise<ListItem> {
    const { list, item } = await this.listAndItem(env, listId, itemId);
    const now = this.d.clock.now();
    if (!archived && item.expiresAt && item.expiresAt.getTime() <= now.getTime()) {
      throw new InvalidParameters([{ field: 'list_item_id', message: 'the item has expired: add the value again with a new expiry' }]);
    }
    const next: ListItem = { ...item, archived, archivedAt: archived ? now : null, updatedAt: now };
    if (item.archived !== archived) await this.write(env, list, [next]);
    await this.audit(env, actor, archived ? 'list_item.archive' : 'list_item.unarchive', { kind: 'list_item', id: itemId, listId }, { value: item.primaryValue });
    return next;
  }

  /** Store items, count the change in the version, and apply it here. */
  /**
   * Store items of `list`, count the change in the version, and apply it here (the next verdict
   * sees it). A list this instance has not compiled yet (made on another instance since its
   * last refresh) is added with these items: the refresh that follows brings the rest.
   */
  private async write(env: EnvId, list: List, items: readonly ListItem[]): Promise<void> {
    await this.d.store.putItems(items);
    const version = await this.d.store.bumpVersion(env);
    this.compiled.local(
      env,
      (c) => {
        let compiled = c.byId.get(list.id);
        if (!compiled) c.byId.set(list.id, (compiled = new CompiledList(list)));
        for (const i of items) compiled.apply(i);
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
        this.compiled.advanced(env, expected, set.version);
        return result;
      }
    }
    throw new Error('list set changed concurrently too many times');
  }

  private async audit(env: EnvId, actor: Actor, action: string, target: AuditEntry['target'], detail: Record<string, unknown>): Promise<void> {
    await this.d.audit.append([{ id: uuid(), envId: env, at: this.d.clock.now(), actor, action, target, detail }]);
  }
}
