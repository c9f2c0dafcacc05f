/**
 * CSV imports as jobs (ListService.importCsv, core/lists/imports.ts) on in-memory fakes and fake
 * time: a large import is a job whose progress shows batch by batch; it waits while the verdicts'
 * writes are behind; it rides out a database that is briefly unavailable and reports how far it
 * got when it is not; the same CSV again finishes it without rewriting what is there; a job whose
 * instance stopped is reported as interrupted; deleting the list ends its import.
 */
import { Unavailable } from '../../../src/core/errors';
import { linesOf } from '../../../src/core/lists/csv';
import type { ListImport } from '../../../src/core/lists/model';
import type { ListStore } from '../../../src/core/lists/ports';
import { itemIdOf, ListService, type ImportOptions } from '../../../src/core/lists/service';
import type { EnvId } from '../../../src/core/model';
import type { WriteQueue } from '../../../src/core/ports';
import { createFakeAuditLog, createFakeListStore } from '../../support/fakes/stores';
import { createFakeTime } from '../../support/fakes/time';

const env = 'env-1' as EnvId;
const actor = { type: '$api_secret', identifier: 'abcdef012345' };
const csvOf = (n: number, from = 0, comment = 'ring') =>
  `value,comment\n${Array.from({ length: n }, (_, i) => `10.0.${((from + i) >> 8) & 255}.${(from + i) & 255},${comment}`).join('\n')}\n`;
const lines = (text: string) =>
  linesOf(
    (async function* () {
      yield text;
    })(),
  );

function setup(
  o: {
    imports?: ImportOptions & { maxRows?: number };
    store?: ListStore;
    writes?: Pick<WriteQueue, 'admit' | 'pressure'>;
    itemsPerList?: number;
  } = {},
) {
  const time = createFakeTime();
  const base = createFakeListStore();
  const store = o.store ?? base;
  const audit = createFakeAuditLog();
  const lists = new ListService({
    store,
    audit,
    clock: time.clock,
    scheduler: time.scheduler,
    ...(o.writes ? { writes: o.writes } : {}),
    ...(o.itemsPerList ? { itemsPerList: o.itemsPerList } : {}),
    imports: { syncItems: 100, batch: 50, ...o.imports },
  });
  return { time, base, store, audit, lists };
}

/** Advance fake time until the job ends (each batch is followed by a pause on the scheduler). */
async function finish(
  s: ReturnType<typeof setup>,
  listId: string,
  id: string,
  observe?: (j: ListImport) => void,
  stepMs = 1,
): Promise<ListImport> {
  for (let i = 0; i < 100_000; i++) {
    const j = await s.lists.importJob(env, listId, id);
    observe?.(j);
    if (j.state === 'succeeded' || j.state === 'failed') return j;
    await s.time.advance(stepMs);
  }
  throw new Error('the import never ended');
}

describe('CSV imports', () => {
  it('a small import is written before the answer; a large one is a job whose progress shows batch by batch', async () => {
    const s = setup();
    const list = await s.lists.create(env, actor, { name: 'Ring', color: '$red', primaryField: 'ip' });
    const small = await s.lists.importCsv(env, actor, list.id, lines(csvOf(100)));
    expect(small).toEqual({ report: { rows: 100, created: 100, updated: 0 } });
    // The first 100 again, with another comment: rewritten (updated, not unchanged).
    const started = await s.lists.importCsv(env, actor, list.id, lines(csvOf(400, 0, 'ring confirmed')));
    expect(started.job).toMatchObject({ state: 'running', rows: 400, items: 400, written: 0 });
    const seen: number[] = [];
    const done = await finish(s, list.id, started.job?.id as string, (j) => seen.push(j.written));
    expect(done).toMatchObject({
      state: 'succeeded',
      rows: 400,
      items: 400,
      written: 400,
      created: 300,
      updated: 100,
      unchanged: 0,
      error: null,
    });
    // Batches of 50, each followed by a pause: every step of the way was seen.
    expect([...new Set(seen)]).toEqual([0, 50, 100, 150, 200, 250, 300, 350, 400]);
    expect(seen).toEqual([...seen].sort((a, b) => a - b));
    expect(await s.lists.countItems(env, list.id, undefined)).toBe(400);
    expect(await s.lists.countItems(env, list.id, [{ field: 'archived', op: '$eq', value: false }])).toBe(
      400,
    );
    expect(s.audit.entries.filter((e) => e.action === 'list_item.import').map((e) => e.detail)).toEqual([
      expect.objectContaining({ state: 'succeeded', rows: 100, created: 100 }),
      expect.objectContaining({
        state: 'succeeded',
        rows: 400,
        created: 300,
        updated: 100,
        import_id: started.job?.id,
      }),
    ]);
    // `async` makes a job of a small import too.
    const asked = await s.lists.importCsv(env, actor, list.id, lines(csvOf(3)), { async: true });
    expect((await finish(s, list.id, asked.job?.id as string)).state).toBe('succeeded');
  });

  it('bad input is refused before anything is written, naming each bad line', async () => {
    const s = setup({ imports: { maxRows: 500 } });
    const list = await s.lists.create(env, actor, { name: 'Ring', color: '$red', primaryField: 'ip' });
    const refused = async (text: string) => {
      const e = await s.lists.importCsv(env, actor, list.id, lines(text)).then(
        () => null,
        (err: unknown) => err as { kind: string; fields: { field: string; message: string }[] },
      );
      expect(e?.kind).toBe('invalid_parameters');
      return e?.fields ?? [];
    };
    expect(await refused(`${csvOf(200)}not-an-ip,x\n"unterminated,y\n10.9.9.9,ok,\n`)).toEqual([
      { field: 'line 202', message: expect.stringContaining('primary_value') },
      { field: 'line 203', message: expect.stringContaining('not valid CSV') },
    ]);
    expect(await refused(csvOf(501))).toEqual([
      { field: 'line 502', message: expect.stringContaining('at most 500 rows') },
    ]);
    expect(await refused('comment\nx\n')).toEqual([
      { field: 'line 1', message: expect.stringContaining('`value`') },
    ]);
    expect(await refused('value,expires_at\n10.0.0.1,yesterday\n10.0.0.2,2001-01-01T00:00:00Z\n')).toEqual([
      { field: 'line 2', message: expect.stringContaining('expires_at') },
      { field: 'line 3', message: expect.stringContaining('in the future') },
    ]);
    expect(await refused(`value\n${'1'.repeat(600)}\n10.0.0.1\u0000\n`)).toHaveLength(2);
    expect(await s.lists.countItems(env, list.id, undefined)).toBe(0);
    expect(s.base.items.size).toBe(0);
    expect(s.base.imports.size).toBe(0);
  });

  it('an import that would take the list past its bound is refused whole', async () => {
    const s = setup({ itemsPerList: 2000 });
    const list = await s.lists.create(env, actor, { name: 'Ring', color: '$red', primaryField: 'user.id' });
    // The list is full but one (written straight to the store, as another instance would have):
    // an import of one of its items and two new ones is refused, of one and one new passes.
    const at = s.time.clock.now();
    for (let i = 0; i < 1999; i++) {
      const id = itemIdOf(list.id, `u${i}`, null);
      s.base.items.set(`${env}\u0000${list.id}\u0000${id}`, {
        id,
        envId: env,
        listId: list.id,
        primaryValue: `u${i}`,
        secondaryValue: null,
        comment: null,
        author: actor,
        createdAt: at,
        updatedAt: at,
        expiresAt: null,
        archived: i % 2 === 0,
        archivedAt: i % 2 === 0 ? at : null,
      });
    }
    await s.store.bumpVersion(env);
    const e = await s.lists
      .importCsv(env, actor, list.id, lines('value\nu1\nnew-1\nnew-2\n'))
      .catch((err: unknown) => err as { fields: { message: string }[] });
    expect(e).toMatchObject({
      fields: [
        {
          message: expect.stringContaining(
            'at most 2000 items (archived ones included); it has 1999, and this would add 2',
          ),
        },
      ],
    });
    expect(await s.lists.importCsv(env, actor, list.id, lines('value\nu1\nnew-1\n'))).toEqual({
      report: { rows: 2, created: 1, updated: 1 },
    });
    expect(await s.lists.countItems(env, list.id, undefined)).toBe(2000);
    expect(await s.lists.countItems(env, list.id, [{ field: 'archived', op: '$eq', value: true }])).toBe(
      1000,
    );
  });

  it('waits while the verdicts’ writes are behind, and goes on once they caught up', async () => {
    let pressure: WriteQueue['pressure'] = 'ok';
    const writes = {
      get pressure() {
        return pressure;
      },
      admit: () => Promise.resolve(),
    };
    const s = setup({ writes });
    const list = await s.lists.create(env, actor, { name: 'Ring', color: '$red', primaryField: 'ip' });
    pressure = 'behind';
    const { job } = await s.lists.importCsv(env, actor, list.id, lines(csvOf(200)));
    await s.time.advance(60_000);
    expect(await s.lists.importJob(env, list.id, job?.id as string)).toMatchObject({
      state: 'running',
      written: 0,
    });
    expect(s.base.items.size).toBe(0);
    pressure = 'ok';
    expect(await finish(s, list.id, job?.id as string)).toMatchObject({ state: 'succeeded', written: 200 });
  });

  it('rides out a database briefly unavailable; past retryForMs it fails saying how far it got, and the same CSV finishes it', async () => {
    const base = createFakeListStore();
    let down = false;
    let puts = 0;
    const store: ListStore = {
      ...base,
      async putItems(items) {
        puts++;
        if (down) throw new Unavailable('the database is unreachable');
        return base.putItems(items);
      },
    };
    const s = setup({ store, imports: { retryForMs: 2_000 } });
    const list = await s.lists.create(env, actor, { name: 'Ring', color: '$red', primaryField: 'ip' });
    const { job } = await s.lists.importCsv(env, actor, list.id, lines(csvOf(500)));
    const id = job?.id as string;
    // Down for 1.5 s after the second batch: the job waits and goes on.
    while ((await s.lists.importJob(env, list.id, id)).written < 100) await s.time.advance(5);
    down = true;
    await s.time.advance(1500);
    expect((await s.lists.importJob(env, list.id, id)).state).toBe('running');
    down = false;
    expect(await finish(s, list.id, id)).toMatchObject({ state: 'succeeded', written: 500, created: 500 });
    expect(base.items.size).toBe(500);

    // Down for longer than retryForMs: failed, with what was written.
    const more = (await s.lists.importCsv(env, actor, list.id, lines(csvOf(500, 500)))).job?.id as string;
    while ((await s.lists.importJob(env, list.id, more)).written < 150) await s.time.advance(5);
    down = true;
    const failed = await finish(s, list.id, more, undefined, 50);
    expect(failed.state).toBe('failed');
    expect(failed.written).toBeGreaterThanOrEqual(150);
    expect(failed.written).toBeLessThan(500);
    expect(failed.error).toContain(`${failed.written} of 500 items were written`);
    expect(base.items.size).toBe(500 + failed.written);
    expect(await s.lists.countItems(env, list.id, undefined)).toBe(500 + failed.written);
    // The database is back: the same CSV again finishes it, rewriting none of what was written.
    down = false;
    const before = puts;
    const again = await finish(
      s,
      list.id,
      (await s.lists.importCsv(env, actor, list.id, lines(csvOf(500, 500)))).job?.id as string,
    );
    expect(again).toMatchObject({
      state: 'succeeded',
      written: 500,
      created: 500 - failed.written,
      updated: failed.written,
      unchanged: failed.written,
    });
    // A job stops between batches (of 50): only the batches not written before are written now.
    expect(failed.written % 50).toBe(0);
    expect(puts - before).toBe((500 - failed.written) / 50);
    expect(await s.lists.countItems(env, list.id, undefined)).toBe(1000);
  });

  it('a replacing import archives what the CSV does not name once every row is written; one that fails archives nothing', async () => {
    const base = createFakeListStore();
    let down = false;
    const store: ListStore = {
      ...base,
      async putItems(items) {
        if (down) throw new Unavailable('the database is unreachable');
        return base.putItems(items);
      },
    };
    const s = setup({ store, imports: { retryForMs: 2_000 } });
    const list = await s.lists.create(env, actor, { name: 'Ring', color: '$red', primaryField: 'ip' });
    const active = () => s.lists.countItems(env, list.id, [{ field: 'archived', op: '$eq', value: false }]);
    await s.lists.importCsv(env, actor, list.id, lines(csvOf(100)));

    // At once: 10 kept, 20 new, 90 archived (and readable, archived, with the time of it).
    const small = await s.lists.importCsv(env, actor, list.id, lines(csvOf(30, 90)), { replace: true });
    expect(small).toEqual({ report: { rows: 30, created: 20, updated: 10, archived: 90 } });
    expect(await active()).toBe(30);
    const gone = await s.lists.getItem(env, list.id, itemIdOf(list.id, '10.0.0.5', null));
    expect(gone).toMatchObject({ archived: true, archivedAt: s.time.clock.now() });
    const audit = (await s.lists.auditLog(env, { listId: list.id })).find(
      (e) => e.action === 'list_item.import',
    );
    expect(audit?.detail).toMatchObject({ rows: 30, created: 20, updated: 10, archived: 90 });

    // A job that fails writes some rows and archives nothing.
    const failing = (await s.lists.importCsv(env, actor, list.id, lines(csvOf(300, 1000)), { replace: true }))
      .job?.id as string;
    while ((await s.lists.importJob(env, list.id, failing)).written < 100) await s.time.advance(5);
    down = true;
    const failed = await finish(s, list.id, failing, undefined, 50);
    expect(failed.state).toBe('failed');
    expect(failed.archived).toBeUndefined();
    expect(await active()).toBe(30 + failed.written);

    // Again, the database back: it finishes, and archives the 30 it does not name.
    down = false;
    const again = await finish(
      s,
      list.id,
      (await s.lists.importCsv(env, actor, list.id, lines(csvOf(300, 1000)), { replace: true })).job
        ?.id as string,
    );
    expect(again).toMatchObject({ state: 'succeeded', written: 300, archived: 30 });
    expect(await active()).toBe(300);
    expect(await s.lists.countItems(env, list.id, undefined)).toBe(100 + 20 + 300);
  });

  it('one import of a list at a time: the next is queued behind it', async () => {
    const s = setup();
    const list = await s.lists.create(env, actor, { name: 'Ring', color: '$red', primaryField: 'ip' });
    const a = (await s.lists.importCsv(env, actor, list.id, lines(csvOf(300)))).job?.id as string;
    const second = await s.lists.importCsv(env, actor, list.id, lines(csvOf(300, 200)));
    expect(second.job?.state).toBe('queued');
    const b = second.job?.id as string;
    await s.time.advance(10);
    expect((await s.lists.importJob(env, list.id, a)).state).toBe('running');
    expect(await s.lists.importJob(env, list.id, b)).toMatchObject({ state: 'queued', written: 0 });
    expect(await finish(s, list.id, a)).toMatchObject({ state: 'succeeded', created: 300 });
    expect(await finish(s, list.id, b)).toMatchObject({
      state: 'succeeded',
      created: 200,
      updated: 100,
      unchanged: 100,
    });
  });

  it('holds at most maxJobs jobs at once: the next is refused (429) until one ends', async () => {
    const s = setup({ imports: { maxJobs: 2 } });
    const list = await s.lists.create(env, actor, { name: 'Ring', color: '$red', primaryField: 'ip' });
    const a = (await s.lists.importCsv(env, actor, list.id, lines(csvOf(300)))).job?.id as string;
    await s.lists.importCsv(env, actor, list.id, lines(csvOf(300, 300)));
    await expect(s.lists.importCsv(env, actor, list.id, lines(csvOf(300, 600)))).rejects.toMatchObject({
      kind: 'rate_limited',
      retryAfterSeconds: 15,
    });
    // A small import is written at once, whatever the jobs.
    expect((await s.lists.importCsv(env, actor, list.id, lines(csvOf(10, 900)))).report).toMatchObject({
      created: 10,
    });
    await finish(s, list.id, a);
    expect((await s.lists.importCsv(env, actor, list.id, lines(csvOf(300, 600)))).job?.state).toBe('queued');
  });

  it('stopping the service ends a job as interrupted; a job whose instance went silent is reported failed', async () => {
    const s = setup();
    const list = await s.lists.create(env, actor, { name: 'Ring', color: '$red', primaryField: 'ip' });
    const id = (await s.lists.importCsv(env, actor, list.id, lines(csvOf(400)))).job?.id as string;
    while ((await s.lists.importJob(env, list.id, id)).written < 100) await s.time.advance(5);
    await s.lists.stop();
    const stopped = await s.lists.importJob(env, list.id, id);
    expect(stopped).toMatchObject({
      state: 'failed',
      error: expect.stringContaining('interrupted: the service stopped'),
    });
    expect(stopped.error).toContain(`${stopped.written} of 400 items were written`);
    await expect(s.lists.importCsv(env, actor, list.id, lines(csvOf(400)))).rejects.toMatchObject({
      kind: 'unavailable',
    });

    // Another instance reads a job left running by an instance that died.
    const other = new ListService({
      store: s.store,
      audit: s.audit,
      clock: s.time.clock,
      scheduler: s.time.scheduler,
    });
    const left: ListImport = {
      ...stopped,
      id: 'left-behind',
      state: 'running',
      error: null,
      finishedAt: null,
      updatedAt: s.time.clock.now(),
    };
    await s.store.putImport(left);
    await s.time.advance(30_000);
    expect((await other.importJob(env, list.id, 'left-behind')).state).toBe('running');
    await s.time.advance(31_000);
    expect(await other.importJob(env, list.id, 'left-behind')).toMatchObject({
      state: 'failed',
      error: expect.stringContaining('interrupted'),
    });
    expect((await s.store.getImport(env, 'left-behind'))?.state).toBe('failed');
  });

  it('deleting the list ends its import; a job is found only under its own list and environment', async () => {
    const s = setup();
    const list = await s.lists.create(env, actor, { name: 'Ring', color: '$red', primaryField: 'ip' });
    const other = await s.lists.create(env, actor, { name: 'Other', color: '$red', primaryField: 'ip' });
    const id = (await s.lists.importCsv(env, actor, list.id, lines(csvOf(400)))).job?.id as string;
    await expect(s.lists.importJob(env, other.id, id)).rejects.toMatchObject({ kind: 'not_found' });
    await expect(s.lists.importJob('env-2' as EnvId, list.id, id)).rejects.toMatchObject({
      kind: 'not_found',
    });
    await expect(s.lists.importJob(env, list.id, 'nope')).rejects.toMatchObject({ kind: 'not_found' });
    while ((await s.lists.importJob(env, list.id, id)).written < 100) await s.time.advance(5);
    await s.lists.delete(env, actor, list.id);
    const job = await s.store.getImport(env, id);
    expect(job).toMatchObject({ state: 'failed', error: expect.stringContaining('the list was deleted') });
    expect([...s.base.items.values()].filter((i) => i.listId === list.id)).toEqual([]);
  });

  it('counts stay in memory while an import writes: a version moved by its own batch is not taken for another instance’s change', async () => {
    const base = createFakeListStore();
    let storeCounts = 0;
    let hold: (() => void) | null = null;
    const store: ListStore = {
      ...base,
      async countItems(...args) {
        storeCounts++;
        return base.countItems(...args);
      },
      // The version is incremented in the database at once; the answer comes back later.
      async bumpVersion(env) {
        const v = await base.bumpVersion(env);
        if (hold === null) await new Promise<void>((resolve) => (hold = resolve));
        return v;
      },
    };
    const s = setup({ store });
    const list = await s.lists.create(env, actor, { name: 'Ring', color: '$red', primaryField: 'ip' });
    expect(await s.lists.countItems(env, list.id, undefined)).toBe(0);
    const writing = s.lists.createItems(env, actor, list.id, [
      { primaryValue: '10.0.0.1' },
      { primaryValue: '10.0.0.2' },
    ]);
    await s.time.settle();
    expect(hold).not.toBeNull();
    // Between the increment and its answer: the count is the compiled lists', with the batch in it.
    expect(await s.lists.countItems(env, list.id, undefined)).toBe(2);
    expect(await s.lists.countItems(env, list.id, [{ field: 'archived', op: '$eq', value: false }])).toBe(2);
    (hold as unknown as () => void)();
    await writing;
    expect(await s.lists.countItems(env, list.id, undefined)).toBe(2);
    expect(storeCounts).toBe(0);
  });

  it('sweeps jobs finished more than keepMs ago', async () => {
    const s = setup({ imports: { keepMs: 86_400_000 } });
    const list = await s.lists.create(env, actor, { name: 'Ring', color: '$red', primaryField: 'ip' });
    const id = (await s.lists.importCsv(env, actor, list.id, lines(csvOf(200)))).job?.id as string;
    await finish(s, list.id, id);
    expect(await s.lists.sweepImports()).toBe(0);
    await s.time.advance(86_400_001);
    expect(await s.lists.sweepImports()).toBe(1);
    await expect(s.lists.importJob(env, list.id, id)).rejects.toMatchObject({ kind: 'not_found' });
  });
});
