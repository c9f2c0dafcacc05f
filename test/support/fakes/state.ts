/**
 * The state layer in memory: the cache and write-behind queue the repositories of users, devices
 * and counters sit on (src/store/state/layer.ts), with the same delta semantics (applyDelta) and
 * nothing behind it. The real repositories (StateUserStore, StateCounterStore) run on it, so a
 * unit test sees exactly what a verdict would record, without a database.
 */
import { Unavailable } from '../../../src/core/errors';
import type { CounterStore, UserStateStore, WriteQueue } from '../../../src/core/ports';
import { applyDelta, clone, type Delta, type Doc, type OpEntry } from '../../../src/store/state/delta';
import type { StateLayer } from '../../../src/store/state/layer';
import { DEVICES, deviceFromDoc, StateUserStore, type DeviceDoc } from '../../../src/store/user-state';
import type { Device } from '../../../src/core/model';
import { StateCounterStore } from '../../../src/store/counters';
import type { Db } from 'mongodb';
import type { FakeTime } from './time';

interface Entry {
  value: Doc | null;
  version: number;
  memo?: { version: number; view: unknown };
}

export interface FakeStateLayer extends WriteQueue {
  /** While true, reads with a deadline answer "not in time" (undefined) and others fail Unavailable. */
  unreachable: boolean;
  /**
   * While true, reads with a deadline answer "not in time" (undefined), as a database behind its
   * budget does; what this process wrote stays in memory (`cached`), as the real layer's cache.
   */
  slow: boolean;
  /**
   * While set, nothing counts as written: durable() waits (until `writesDone()`), and admission
   * refuses with this reason (`refusing`).
   */
  writesHeld: boolean;
  refusing: string | null;
  /** Everything queued so far is written: durable() callers waiting are answered. */
  writesDone(): void;
  /** Changes applied so far (each one a delta or a whole document). */
  readonly changes: number;
  read(collection: string, id: string, deadline?: number): Promise<Doc | null | undefined>;
  readMany(collection: string, ids: readonly string[]): Promise<Map<string, Doc | null>>;
  readAll(collection: string, ids: readonly string[], deadline?: number): Promise<(Doc | null)[] | undefined>;
  cached(collection: string, id: string): Doc | null | undefined;
  peek(collection: string, id: string): Doc | null | undefined;
  view<T>(collection: string, id: string, make: (doc: Doc | null) => T): T | undefined;
  version(collection: string, id: string): number | undefined;
  apply(collection: string, id: string, d: Delta | readonly OpEntry[]): void;
  /** Never in place: the fake takes every change as a delta, as the layer does on MongoDB. */
  edit(collection: string, id: string): Doc | undefined;
  put(collection: string, id: string, doc: Doc): void;
  /** A stored document, as a copy (null: none). */
  document(collection: string, id: string): Doc | null;
  /** Every stored document of a collection, as copies (what a query of the collection reads). */
  documents(collection: string): Doc[];
}

/** `time`: durable() keeps its deadline on this fake time (without it, it waits until written). */
export function createFakeStateLayer(time?: FakeTime): FakeStateLayer {
  // By collection, then id (a key made of both would be a new string to hash at every look-up).
  const collections = new Map<string, Map<string, Entry>>();
  const find = (collection: string, id: string): Entry | undefined => collections.get(collection)?.get(id);
  const entry = (collection: string, id: string): Entry => {
    let c = collections.get(collection);
    if (!c) collections.set(collection, (c = new Map()));
    let e = c.get(id);
    if (!e) c.set(id, (e = { value: null, version: 0 }));
    return e;
  };
  let changes = 0;
  let waiting: (() => void)[] = [];
  const layer: FakeStateLayer = {
    unreachable: false,
    slow: false,
    writesHeld: false,
    refusing: null,
    writesDone() {
      layer.writesHeld = false;
      const answered = waiting;
      waiting = [];
      for (const w of answered) w();
    },
    get changes() {
      return changes;
    },
    get pressure() {
      return layer.refusing ? 'full' : 'ok';
    },
    async admit() {
      if (layer.refusing) throw new Unavailable(layer.refusing);
    },
    check() {
      if (layer.refusing) throw new Unavailable(layer.refusing);
    },
    durable(deadline) {
      if (!layer.writesHeld) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        let cancel = () => undefined as void;
        const written = () => {
          cancel();
          resolve();
        };
        waiting.push(written);
        if (deadline === undefined || !time) return;
        cancel = time.scheduler.after(deadline - time.clock.now().getTime(), () => {
          waiting = waiting.filter((w) => w !== written);
          reject(new Unavailable('the changes were not written by the deadline'));
        });
      });
    },
    async flush() {},
    async read(collection, id, deadline) {
      if (layer.slow && deadline !== undefined) return undefined;
      if (layer.unreachable) {
        if (deadline !== undefined) return undefined;
        throw new Unavailable('the fake database is unreachable');
      }
      return entry(collection, id).value;
    },
    async readMany(collection, ids) {
      if (layer.unreachable) throw new Unavailable('the fake database is unreachable');
      return new Map(ids.map((id) => [id, entry(collection, id).value]));
    },
    async readAll(collection, ids, deadline) {
      if (layer.slow && deadline !== undefined) return undefined;
      if (layer.unreachable) {
        if (deadline !== undefined) return undefined;
        throw new Unavailable('the fake database is unreachable');
      }
      return ids.map((id) => entry(collection, id).value);
    },
    cached: (collection, id) =>
      layer.unreachable ? undefined : layer.slow ? find(collection, id)?.value : entry(collection, id).value,
    peek: (collection, id) => find(collection, id)?.value,
    view(collection, id, make) {
      const e = find(collection, id);
      if (!e) return undefined;
      if (e.memo && e.memo.version === e.version) return e.memo.view as ReturnType<typeof make>;
      const view = make(e.value);
      e.memo = { version: e.version, view };
      return view;
    },
    version: (collection, id) => find(collection, id)?.version,
    apply(collection, id, d) {
      const ops = 'ops' in d ? d.ops : d;
      if (ops.length === 0) return;
      const e = entry(collection, id);
      e.value = applyDelta(e.value, ops);
      e.version++;
      changes++;
    },
    edit: () => undefined,
    // A whole document replaces what is stored, as `replacement(doc)` applied would: a copy of it.
    put(collection, id, doc) {
      const e = entry(collection, id);
      e.value = clone(doc);
      e.version++;
      changes++;
    },
    document: (collection, id) => clone(find(collection, id)?.value ?? null),
    documents: (collection) =>
      [...(collections.get(collection)?.values() ?? [])]
        .filter((e) => e.value !== null)
        .map((e) => clone(e.value as Doc)),
  };
  return layer;
}

/** No database behind the repositories: what would reach one (sweeps, purges) fails loudly. */
const noDatabase = new Proxy(
  {},
  {
    get: () => {
      throw new Error('a unit test reached for the database');
    },
  },
) as Db;

/** The users-and-devices repository on a fake state layer. */
export function createFakeUserStateStore(state: FakeStateLayer): UserStateStore {
  return new StateUserStore({ db: noDatabase, state: state as unknown as StateLayer });
}

/** The devices' dashboard copy on a fake state layer (what the read fakes search). */
export function fakeDeviceCopies(state: FakeStateLayer): Device[] {
  return state.documents(DEVICES).map((d) => deviceFromDoc({ _id: '', ...d } as unknown as DeviceDoc));
}

/** The counters repository on a fake state layer. */
export function createFakeCounterStore(state: FakeStateLayer, now: () => Date): CounterStore {
  return new StateCounterStore({ db: noDatabase, state: state as unknown as StateLayer, now });
}
