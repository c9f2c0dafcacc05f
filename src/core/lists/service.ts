/**
 * List use cases, called by every door: lists (create, read, query, update, delete), their items
 * (create one or a batch, read, query, count, comment, archive, unarchive, CSV import and
 * export), the audit entry of every change, and the compiled lists verdicts match against
 * (compiled-cache.ts), which also count a list's items and know which it holds. Checks are in
 * validation.ts and queries.ts, CSV in csv.ts and import-csv.ts, import jobs in imports.ts.
 */
import type { Actor, AuditEntry, AuditLog } from '../audit/model';
import { uuid } from '../crypto';
import { InvalidParameters, NotFound, type FieldProblem } from '../errors';
import type { EnvId } from '../model';
import type { Clock, Scheduler, WriteQueue } from '../ports';
import { CompiledListCache } from './compiled-cache';
import { EXPORT_COLUMNS, csvCell } from './csv';
import { readCsv } from './import-csv';
import { ListImports, type ImportOptions, type ImportReport } from './imports';
import { CompiledList, type CompiledLists } from './matcher';
import {
  LIST_LIMITS,
  type ItemCondition,
  type ItemDraft,
  type List,
  type ListImport,
  type ListItem,
  type ListQuery,
  type ListSet,
  type QueryFilter,
} from './model';
import type { ListStore } from './ports';
import { validateItemQuery, validateListQuery } from './queries';
import {
  type ListCommand,
  buildItem,
  checkComment,
  checkExpiry,
  itemDetail,
  listDetail,
  MAX_REPORTED_LINES,
  validateList,
} from './validation';

export { actorOf, itemIdOf } from './ids';
export {
  EXPORT_COLUMNS,
  csvCell,
  exportedCell,
  importedCell,
  isFormulaLike,
  linesOf,
  parseCsvLine,
} from './csv';
export { validateItemQuery } from './queries';
export type { ListCommand } from './validation';
export type { ImportOptions, ImportReport } from './imports';

/** What an import answers: written already (a small one), or the job writing it. */
export type ImportOutcome =
  { report: ImportReport; job?: undefined } | { job: ListImport; report?: undefined };

const MAX_RETRIES = 5;

/** How long verdicts reuse an environment's compiled lists before checking its version. */
export const DEFAULT_LIST_CACHE_MS = 1000;

export interface ListDeps {
  store: ListStore;
  audit: AuditLog;
  clock: Clock;
  /** How long verdicts reuse an environment's compiled lists before checking its version (default 1 s). */
  cacheMs?: number;
  /** The active policies naming a list (a list in use cannot be deleted). */
  policiesUsing?: (env: EnvId, listId: string) => Promise<string[]>;
  /** Pauses and retries of import jobs (without one, an import job writes without pausing). */
  scheduler?: Scheduler;
  /** The state layer's admission: an import job waits while the verdicts' writes are behind. */
  writes?: Pick<WriteQueue, 'admit' | 'pressure'>;
  log?: { warn(obj: object, msg: string): void };
  /** CSV imports: when one is a job, its batches and pauses (imports.ts), and the rows one may have (default LIST_LIMITS.importRows). */
  imports?: ImportOptions & { maxRows?: number };
  /** Items a list holds at most (default LIST_LIMITS.itemsPerList). */
  itemsPerList?: number;
}

export class ListService {
  private readonly compiled: CompiledListCache;
  private readonly importer: ListImports;
  /** Lists deleted through this instance: a write that began before is not to compile them again. */
  private readonly deleted = new Set<string>();

  constructor(private readonly d: ListDeps) {
    this.compiled = new CompiledListCache({
      store: d.store,
      clock: d.clock,
      cacheMs: d.cacheMs ?? DEFAULT_LIST_CACHE_MS,
    });
    this.importer = new ListImports(
      {
        store: d.store,
        clock: d.clock,
        ...(d.scheduler ? { scheduler: d.scheduler } : {}),
        ...(d.writes ? { writes: d.writes } : {}),
        ...(d.log ? { log: d.log } : {}),
        listOf: async (env, listId) =>
          (await d.store.getSet(env))?.lists.find((l) => l.id === listId) ?? null,
        write: (env, list, items) => this.write(env, list, items),
        audit: (env, actor, detail, listId) =>
          this.audit(env, actor, 'list_item.import', { kind: 'list', id: listId, listId }, detail),
      },
      d.imports,
    );
  }

  // ---- lists ----

  /** Create a list. */
  async create(env: EnvId, actor: Actor, cmd: ListCommand): Promise<List> {
    const draft = validateList(cmd, null);
    const list = await this.mutate(env, (set, now) => {
      if (set.lists.length >= LIST_LIMITS.lists)
        throw new InvalidParameters([
          { field: 'name', message: `an environment has at most ${LIST_LIMITS.lists} lists` },
        ]);
      if (set.lists.some((l) => l.name === draft.name))
        throw new InvalidParameters([{ field: 'name', message: 'a list of this name exists' }]);
      const l: List = { id: uuid(), envId: env, ...draft, createdAt: now, updatedAt: now };
      set.lists.push(l);
      return l;
    });
    this.compiled.local(env, (set) => set.byId.set(list.id, new CompiledList(list)));
    await this.audit(
      env,
      actor,
      'list.create',
      { kind: 'list', id: list.id, listId: list.id },
      listDetail(list),
    );
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
      if (next.name !== l.name && set.lists.some((x) => x.id !== id && x.name === next.name))
        throw new InvalidParameters([{ field: 'name', message: 'a list of this name exists' }]);
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
    if ((await this.get(env, id)) && using.length)
      throw new InvalidParameters([
        {
          field: 'list_id',
          message: `the list is used by ${using.length === 1 ? 'policy' : 'policies'} ${using.join(', ')}`,
        },
      ]);
    // Its imports end first (after the batch under way), so that nothing of them is written after.
    await this.importer.cancel(env, id);
    const list = await this.mutate(env, (set) => {
      const at = set.lists.findIndex((x) => x.id === id);
      if (at < 0) throw new NotFound('no such list');
      return set.lists.splice(at, 1)[0] as List;
    });
    this.deleted.add(id);
    if (this.deleted.size > 10_000) this.deleted.clear();
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
    if (existing && !existing.archived)
      throw new InvalidParameters([
        { field: 'primary_value', message: `is in this list already (item ${existing.id})` },
      ]);
    if (!existing) await this.checkRoom(env, listId, 1);
    await this.write(env, list, [item]);
    await this.audit(
      env,
      actor,
      'list_item.create',
      { kind: 'list_item', id: item.id, listId },
      itemDetail(item),
    );
    return item;
  }

  /**
   * Add or replace up to LIST_LIMITS.batch values at once (Castle's batch upsert): every item is
   * checked first, and nothing is written unless all are valid.
   */
  async createItems(
    env: EnvId,
    actor: Actor,
    listId: string,
    drafts: readonly ItemDraft[],
  ): Promise<ListItem[]> {
    if (!Array.isArray(drafts) || drafts.length === 0 || drafts.length > LIST_LIMITS.batch)
      throw new InvalidParameters([{ field: 'items', message: `give 1-${LIST_LIMITS.batch} items` }]);
    const list = await this.get(env, listId);
    const now = this.d.clock.now();
    const problems: FieldProblem[] = [];
    const items = new Map<string, ListItem>();
    drafts.forEach((draft, i) => {
      const item =
        typeof draft === 'object' && draft !== null
          ? buildItem(list, draft, actor, now, problems, `items[${i}].`)
          : (problems.push({ field: `items[${i}]`, message: 'must be an object' }), null);
      if (item) items.set(item.id, item);
    });
    if (problems.length) throw new InvalidParameters(problems.slice(0, MAX_REPORTED_LINES));
    const fresh = await this.keepCreatedAt(env, listId, [...items.values()]);
    await this.checkRoom(env, listId, fresh);
    await this.write(env, list, [...items.values()]);
    await this.audit(
      env,
      actor,
      'list_item.batch',
      { kind: 'list', id: listId, listId },
      { items: items.size, created: fresh },
    );
    return [...items.values()];
  }

  async getItem(env: EnvId, listId: string, itemId: string): Promise<ListItem> {
    return (await this.listAndItem(env, listId, itemId)).item;
  }

  private async listAndItem(
    env: EnvId,
    listId: string,
    itemId: string,
  ): Promise<{ list: List; item: ListItem }> {
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

  /**
   * How many items match Castle's filters. Without filters, or filtered on `archived` alone, the
   * compiled lists answer (memory: they count every stored item of the list as they hold it);
   * otherwise the store counts, as it does when they lag behind another instance's change.
   */
  async countItems(env: EnvId, listId: string, filters: readonly QueryFilter[] | undefined): Promise<number> {
    const set = await this.d.store.getSet(env);
    const list = set?.lists.find((l) => l.id === listId);
    if (!set || !list) throw new NotFound('no such list');
    const { conditions } = validateItemQuery(list, { filters });
    const archived = archivedOnly(conditions);
    if (archived !== null) {
      const compiled = (await this.compiled.atVersion(env, set.version))?.byId.get(listId);
      if (compiled)
        return archived === 'none' ? 0 : compiled.count(archived === 'all' ? undefined : archived);
    }
    return this.d.store.countItems(env, listId, conditions);
  }

  /** Change an item's comment (and, when given, its expiry). */
  async updateItem(
    env: EnvId,
    actor: Actor,
    listId: string,
    itemId: string,
    patch: { comment?: unknown; expiresAt?: unknown },
  ): Promise<ListItem> {
    const { list, item } = await this.listAndItem(env, listId, itemId);
    const now = this.d.clock.now();
    const problems: FieldProblem[] = [];
    const comment = checkComment(patch.comment, problems, 'comment');
    const expiresAt =
      patch.expiresAt === undefined
        ? item.expiresAt
        : checkExpiry(patch.expiresAt, now, problems, 'expires_at');
    if (patch.comment === undefined) problems.push({ field: 'comment', message: 'is required' });
    if (problems.length) throw new InvalidParameters(problems);
    const next: ListItem = { ...item, comment, expiresAt, updatedAt: now };
    await this.write(env, list, [next]);
    await this.audit(
      env,
      actor,
      'list_item.update',
      { kind: 'list_item', id: itemId, listId },
      { comment, expires_at: expiresAt?.toISOString() ?? null },
    );
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
   * Import rows of CSV (`lines`: the text, line by line, header first; import-csv.ts). Every line
   * is checked before anything is written: one bad line answers 422 naming each bad line and
   * imports nothing, as does an import that would take the list past its bound. Up to
   * `syncItems` items (1,000) are then written before the answer (`report`), unless `async`; more
   * are written by a job (`job`, imports.ts) that the caller follows with `importJob`. Rows are
   * upserted by value, so the same CSV can be imported again (it finishes a failed job).
   *
   * `replace`: the list is to hold what the CSV says and nothing else: once every row is written,
   * its active items that the CSV does not name are archived (they stop matching and stay
   * readable, as with `archiveItem`); the report and the job count them (`archived`). A replacing
   * import that fails archives nothing; imported again, it finishes.
   */
  async importCsv(
    env: EnvId,
    actor: Actor,
    listId: string,
    lines: AsyncIterable<string>,
    opts: { async?: boolean; replace?: boolean } = {},
  ): Promise<ImportOutcome> {
    const list = await this.get(env, listId);
    const { rows, items } = await readCsv(
      list,
      actor,
      this.d.clock.now(),
      lines,
      this.d.imports?.maxRows ?? LIST_LIMITS.importRows,
    );
    // The list as it is now (reading the CSV may have taken a while), and its room.
    const set = await this.d.store.getSet(env);
    const now = set?.lists.find((l) => l.id === listId);
    if (!set || !now) throw new NotFound('no such list');
    const compiled = (await this.compiled.current(env, set.version)).byId.get(listId);
    const stored = compiled ? compiled.count() : await this.d.store.countItems(env, listId, []);
    const adding = compiled ? items.reduce((n, i) => (compiled.holds(i.id) ? n : n + 1), 0) : items.length;
    this.roomFor(stored, adding);
    const after = opts.replace
      ? async (job: ListImport) => {
          job.archived = await this.archiveAbsent(env, listId, new Set(items.map((i) => i.id)));
        }
      : undefined;
    if (items.length <= this.importer.syncItems && !opts.async)
      return { report: await this.importer.now(env, actor, now, rows, items, after) };
    return { job: await this.importer.start(env, actor, now, rows, items, after) };
  }

  /** Archive the list's active items whose ids are not in `keep` (a replacing import); answers how many. */
  private async archiveAbsent(env: EnvId, listId: string, keep: ReadonlySet<string>): Promise<number> {
    let archived = 0;
    for await (const batch of this.d.store.scanItems(env, [listId], true)) {
      const now = this.d.clock.now();
      const gone = batch
        .filter((i) => !keep.has(i.id))
        .map((i): ListItem => ({ ...i, archived: true, archivedAt: now, updatedAt: now }));
      if (gone.length === 0) continue;
      // The list as it is now: one deleted meanwhile is not written to.
      await this.write(env, await this.get(env, listId), gone);
      archived += gone.length;
    }
    return archived;
  }

  /** An import job of the list (NotFound when the list has none of this id). */
  async importJob(env: EnvId, listId: string, importId: string): Promise<ListImport> {
    await this.get(env, listId);
    return this.importer.get(env, listId, importId);
  }

  /** Delete import jobs that finished long ago (a sweep). */
  sweepImports(): Promise<number> {
    return this.importer.sweep();
  }

  /** Stop the import jobs running here (each recorded as interrupted after its batch) and wait for them. */
  stop(): Promise<void> {
    return this.importer.stop();
  }

  /** The list's items, a batch at a time in id order; archived items only when asked. */
  async *exportItems(env: EnvId, listId: string, includeArchived: boolean): AsyncGenerator<ListItem[]> {
    await this.get(env, listId);
    yield* this.d.store.scanItems(env, [listId], !includeArchived);
  }

  /** The list's items as CSV (header first), a batch of rows at a time; archived items only when asked. */
  async *exportCsv(env: EnvId, listId: string, includeArchived: boolean): AsyncGenerator<string> {
    await this.get(env, listId);
    yield `${EXPORT_COLUMNS.join(',')}\n`;
    for await (const batch of this.d.store.scanItems(env, [listId], !includeArchived)) {
      yield batch
        .map((i) =>
          [
            i.id,
            i.primaryValue,
            i.secondaryValue ?? '',
            i.comment ?? '',
            i.expiresAt?.toISOString() ?? '',
            String(i.archived),
            i.archivedAt?.toISOString() ?? '',
            i.author.type,
            i.author.identifier,
            i.createdAt.toISOString(),
          ]
            .map(csvCell)
            .join(','),
        )
        .join('\n')
        .concat('\n');
    }
  }

  /**
   * The newest audit entries of the environment: of one list or item when `targetId` is given,
   * of one list and every item of it with `listId`. At most 500 (default 50).
   */
  auditLog(
    env: EnvId,
    q: { targetId?: string; listId?: string; limit?: number } = {},
  ): Promise<AuditEntry[]> {
    return this.d.audit.recent(env, {
      ...(q.targetId ? { targetId: q.targetId } : {}),
      ...(q.listId ? { listId: q.listId } : {}),
      limit: Math.min(Math.max(q.limit ?? 50, 1), 500),
    });
  }

  // ---- verdicts ----

  /** The compiled lists a verdict matches against (compiled-cache.ts). */
  forVerdicts(env: EnvId): Promise<CompiledLists> {
    return this.compiled.forVerdicts(env);
  }

  private async setArchived(
    env: EnvId,
    actor: Actor,
    listId: string,
    itemId: string,
    archived: boolean,
  ): Promise<ListItem> {
    const { list, item } = await this.listAndItem(env, listId, itemId);
    const now = this.d.clock.now();
    if (!archived && item.expiresAt && item.expiresAt.getTime() <= now.getTime()) {
      throw new InvalidParameters([
        { field: 'list_item_id', message: 'the item has expired: add the value again with a new expiry' },
      ]);
    }
    const next: ListItem = { ...item, archived, archivedAt: archived ? now : null, updatedAt: now };
    if (item.archived !== archived) await this.write(env, list, [next]);
    await this.audit(
      env,
      actor,
      archived ? 'list_item.archive' : 'list_item.unarchive',
      { kind: 'list_item', id: itemId, listId },
      { value: item.primaryValue },
    );
    return next;
  }

  /**
   * Store items of `list`, count the change in the version, and apply it here (the next verdict
   * sees it). A list this instance has not compiled yet (made on another instance since its
   * last refresh) is added with these items: the refresh that follows brings the rest. A list
   * deleted here meanwhile (a write that began before the deletion) is not brought back.
   */
  private async write(env: EnvId, list: List, items: readonly ListItem[]): Promise<void> {
    try {
      await this.d.store.putItems(items);
    } catch (err) {
      // Part of the items may be stored (the database went away mid-batch): read them again.
      this.compiled.unsure(env);
      throw err;
    }
    // Applied before the version is incremented, so that a read of the version in between (a
    // count, a verdict's refresh) finds the compiled lists current rather than reading them again.
    const counted = this.compiled.pending(env, (c) => {
      let compiled = c.byId.get(list.id);
      if (!compiled && this.deleted.has(list.id)) return;
      if (!compiled) c.byId.set(list.id, (compiled = new CompiledList(list)));
      for (const i of items) compiled.apply(i);
    });
    let version: number | undefined;
    try {
      version = await this.d.store.bumpVersion(env);
    } finally {
      counted(version);
    }
  }

  /** Keep the creation time of items already stored; answers how many are new. */
  private async keepCreatedAt(env: EnvId, listId: string, items: ListItem[]): Promise<number> {
    let fresh = 0;
    const byId = new Map(
      (
        await this.d.store.getItems(
          env,
          listId,
          items.map((i) => i.id),
        )
      ).map((k) => [k.id, k]),
    );
    for (const i of items) {
      const k = byId.get(i.id);
      if (k) i.createdAt = k.createdAt;
      else fresh++;
    }
    return fresh;
  }

  /** Refuse `adding` new items past the list's bound. */
  private async checkRoom(env: EnvId, listId: string, adding: number): Promise<void> {
    if (adding === 0) return;
    const set = await this.d.store.getSet(env);
    const compiled = set ? (await this.compiled.atVersion(env, set.version))?.byId.get(listId) : undefined;
    this.roomFor(compiled ? compiled.count() : await this.d.store.countItems(env, listId, []), adding);
  }

  private roomFor(stored: number, adding: number): void {
    const most = this.d.itemsPerList ?? LIST_LIMITS.itemsPerList;
    if (stored + adding > most) {
      throw new InvalidParameters([
        {
          field: 'items',
          message: `a list holds at most ${most} items (archived ones included); it has ${stored}, and this would add ${adding}`,
        },
      ]);
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

  private async audit(
    env: EnvId,
    actor: Actor,
    action: string,
    target: AuditEntry['target'],
    detail: Record<string, unknown>,
  ): Promise<void> {
    await this.d.audit.append([
      { id: uuid(), envId: env, at: this.d.clock.now(), actor, action, target, detail },
    ]);
  }
}

/**
 * What a count filtered on `archived` alone asks for: every item (`all`), the archived ones
 * (`true`) or the others (`false`), or none (`none`: `archived` is never null); null for any
 * other filter.
 */
function archivedOnly(conditions: readonly ItemCondition[]): 'all' | 'none' | boolean | null {
  if (conditions.length === 0) return 'all';
  if (conditions.length > 1) return null;
  const c = conditions[0] as ItemCondition;
  if (c.field !== 'archived' || (c.op !== 'eq' && c.op !== 'ne')) return null;
  if (c.value === null) return c.op === 'eq' ? 'none' : 'all';
  if (typeof c.value !== 'boolean') return null;
  return c.op === 'eq' ? c.value : !c.value;
}
