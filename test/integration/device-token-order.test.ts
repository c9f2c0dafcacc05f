/**
 * What names a new device by its token is written after its user document (which holds the
 * device): its dashboard copy, filed under its first token, or, for a token no copy names (a
 * device created while its user's document was not at hand), the token's own document. A flush
 * whose write of the users fails, or a process that dies between the two, never leaves a token
 * naming a device its user document lacks. On the real database, in both write modes, with the
 * writes of `users` made to fail on the writer's side (the database itself is never mocked); and
 * a copy a crash lost after its user's is written again with the device's next refresh.
 */
import type { Collection, Db } from 'mongodb';
import { testDatabase, type TestDatabase } from '../support/db';
import { waitFor } from '../support/wait';
import { StateLayer } from '../../src/store/state/layer';
import {
  DEVICE_TOKENS,
  DEVICES,
  PROJECTION_REFRESH_MS,
  StateUserStore,
  USER_WRITE_ORDER,
  USERS,
} from '../../src/store/user-state';
import { idOf } from '../../src/store/ids';
import { asEnvId } from '../../src/core/model';
import { unpack } from '../../src/store/state/pack';
import type { Doc } from '../../src/store/state/delta';

const embeddedOnly = process.env.RAMPART_TEST_EMBEDDED === '1' ? describe : describe.skip;
const env = asEnvId('env-token-order');
const at = new Date('2026-11-28T10:00:00.000Z');

let database: TestDatabase;
beforeAll(async () => {
  database = await testDatabase();
});
afterAll(async () => {
  await database?.drop();
});

/**
 * The test database, except that writes to `users` fail while `broken.users` is set: the driver's
 * insertMany and bulkWrite (MongoDB's path) and the plain insert and update commands (the
 * embedded database's).
 */
function faultyWriter(
  db: Db,
  broken: { users: boolean },
  order: string[],
  held?: { collection: string; until: Promise<void> },
): Db {
  const refuse = () => Promise.reject(new Error('connection reset while writing users (test)'));
  // A write to the held collection is sent only once `until` resolves (a slow command).
  const after = (name: unknown) => (held && name === held.collection ? held.until : Promise.resolve());
  return new Proxy(db, {
    get(target, key) {
      if (key === 'command')
        return (command: { insert?: unknown; update?: unknown }, ...rest: unknown[]) => {
          const name = command.insert ?? command.update;
          if (name === USERS && broken.users) return refuse();
          return after(name).then(() => {
            if (typeof name === 'string') order.push(name);
            return (target.command as (...a: unknown[]) => Promise<unknown>).apply(target, [
              command,
              ...rest,
            ]);
          });
        };
      if (key !== 'collection') return Reflect.get(target, key, target) as unknown;
      return (name: string) => {
        const real = target.collection(name);
        return new Proxy(real, {
          get(c: Collection, k) {
            const value = Reflect.get(c, k, c) as unknown;
            if ((k !== 'insertMany' && k !== 'bulkWrite') || typeof value !== 'function') return value;
            return (...args: unknown[]) => {
              if (name === USERS && broken.users) return refuse();
              return after(name).then(() => {
                order.push(name);
                return (value as (...a: unknown[]) => Promise<unknown>).apply(c, args);
              });
            };
          },
        });
      };
    },
  });
}

const stored = async (collection: string, id: string) => {
  const doc = await database.db.collection(collection).findOne({ _id: id as never });
  return doc ? (unpack(doc as Doc) as Record<string, unknown>) : null;
};

describe.each(['deltas', 'snapshots'] as const)('%s mode', (writeMode) => {
  /**
   * A state layer writing through faultyWriter, and a user store on it: `broken.users` makes the
   * users' writes fail; `order` lists the collections written; `errors`, what the layer reported.
   */
  const writing = (brokenUsers: boolean, held?: { collection: string; until: Promise<void> }) => {
    const broken = { users: brokenUsers };
    const order: string[] = [];
    const errors: string[] = [];
    const state = new StateLayer(database.db, {
      writeMode,
      writeOrder: USER_WRITE_ORDER,
      flushIntervalMs: 60_000,
      retryBaseMs: 5,
      retryMaxMs: 20,
      writer: () => faultyWriter(database.db, broken, order, held),
      packed:
        writeMode === 'snapshots' ? { [USERS]: ['envId', 'userId'], [DEVICES]: ['envId', 'userId'] } : {},
      onError: (err) => errors.push(err instanceof Error ? err.message : String(err)),
    });
    return { broken, order, errors, state, users: new StateUserStore({ db: database.db, state }) };
  };
  const fresh = (errors: string[]) =>
    new StateUserStore({
      db: database.db,
      state: new StateLayer(database.db, { writeMode, onError: (err) => errors.push(String(err)) }),
    });
  const firstSighting = (token: string) => ({
    profile: { seenAt: at, firstSeenAt: at },
    devices: [
      { key: 'fp-1', create: { token, identity: 'fingerprint' as const, at }, seen: { at, context: null } },
    ],
  });

  (writeMode === 'snapshots' ? embeddedOnly : describe)('a new device', () => {
    it('writes its copy only after its user document, and none while the user document fails', async () => {
      const { broken, order, errors, state, users } = writing(true);
      const user = `alice-${writeMode}`;
      const token = `tok-${writeMode}`;
      await users.load(env, user);
      users.record(env, user, firstSighting(token));
      try {
        // The users' write fails: the flush fails, and the copy is not written either.
        await expect(state.flush(300)).rejects.toThrow(/could not write/);
        expect(errors.some((e) => /connection reset while writing users/.test(e))).toBe(true);
        expect(await stored(USERS, idOf(env, user))).toBeNull();
        expect(await stored(DEVICES, idOf(env, token))).toBeNull();
        expect(order).not.toContain(DEVICES);

        // The database writes again: the user document first, then the copy, which names the
        // device (no token document besides it).
        broken.users = false;
        await state.flush(10_000);
        expect(order.filter((c) => c === USERS || c === DEVICES)).toEqual([USERS, DEVICES]);
        expect(await stored(DEVICES, idOf(env, token))).toMatchObject({
          userId: user,
          fingerprintKey: 'fp-1',
        });
        expect(await stored(DEVICE_TOKENS, idOf(env, token))).toBeNull();
        expect(await stored(USERS, idOf(env, user))).toMatchObject({
          userId: user,
          d: { 'fp-1': expect.objectContaining({ tokens: [token] }) },
        });
        // A fresh process finds the device by its token.
        expect(await fresh(errors).byToken(env, token)).toMatchObject({
          token,
          userId: user,
          fingerprintKey: 'fp-1',
        });

        // A crash between the two writes (the user document written, the copy not): the token
        // names nothing until the device's next refresh writes its copy again.
        await database.db.collection(DEVICES).deleteOne({ _id: idOf(env, token) as never });
        expect(await fresh(errors).byToken(env, token)).toBeNull();
        const restarted = new StateLayer(database.db, {
          writeMode,
          writeOrder: USER_WRITE_ORDER,
          onError: (err) => errors.push(String(err)),
        });
        const again = new StateUserStore({ db: database.db, state: restarted });
        await again.load(env, user);
        const later = new Date(at.getTime() + PROJECTION_REFRESH_MS);
        again.record(env, user, {
          profile: { seenAt: later, firstSeenAt: later },
          devices: [{ key: 'fp-1', seen: { at: later, context: null } }],
        });
        await restarted.flush(10_000);
        expect(await stored(DEVICES, idOf(env, token))).toMatchObject({
          userId: user,
          fingerprintKey: 'fp-1',
        });
        expect(await fresh(errors).byToken(env, token)).toMatchObject({ token, fingerprintKey: 'fp-1' });
      } finally {
        broken.users = false;
        await state.flush(10_000).catch(() => undefined);
      }
    });

    it("writes a token's own document, after its user's, when its user was not at hand", async () => {
      const { broken, order, errors, state, users } = writing(true);
      const user = `bob-${writeMode}`;
      const token = `tok-blind-${writeMode}`;
      // Recorded without reading the user first (a degraded verdict's change): no copy can be
      // made, so the token gets a document of its own.
      users.record(env, user, firstSighting(token));
      try {
        await expect(state.flush(300)).rejects.toThrow(/could not write/);
        expect(await stored(DEVICE_TOKENS, idOf(env, token))).toBeNull();
        expect(order).not.toContain(DEVICE_TOKENS);

        broken.users = false;
        await state.flush(10_000);
        expect(order.filter((c) => c === USERS || c === DEVICE_TOKENS)).toEqual([USERS, DEVICE_TOKENS]);
        expect(await stored(DEVICE_TOKENS, idOf(env, token))).toMatchObject({ userId: user, key: 'fp-1' });
        expect(await fresh(errors).byToken(env, token)).toMatchObject({
          token,
          userId: user,
          fingerprintKey: 'fp-1',
        });
      } finally {
        broken.users = false;
        await state.flush(10_000).catch(() => undefined);
      }
    });

    it('writes its copy once its user document is written, without waiting for other collections', async () => {
      // The events' insert of the same flush is slow: the copy waits for the users only.
      let release = () => undefined as void;
      const until = new Promise<void>((resolve) => (release = resolve));
      const { order, errors, state, users } = writing(false, { collection: 'events', until });
      const user = `dave-${writeMode}`;
      const token = `tok-early-${writeMode}`;
      await users.load(env, user);
      users.record(env, user, firstSighting(token));
      state.insert('events', { _id: `event-${writeMode}`, envId: env });
      const flushed = state.flush(10_000);
      try {
        await waitFor(() => stored(DEVICES, idOf(env, token)), { what: "the device's copy" });
        expect(await stored('events', `event-${writeMode}`)).toBeNull();
        expect(order).not.toContain('events');
        expect(order.indexOf(USERS)).toBeLessThan(order.indexOf(DEVICES));
      } finally {
        release();
        await flushed.finally(() => state.close(10_000));
      }
      expect(await stored('events', `event-${writeMode}`)).toMatchObject({ envId: env });
      expect(errors).toEqual([]);
    });
  });

  describe('a device known already', () => {
    it("is found by another token given to it, through that token's own document", async () => {
      const errors: string[] = [];
      const state = new StateLayer(database.db, {
        writeMode,
        writeOrder: USER_WRITE_ORDER,
        onError: (err) => errors.push(String(err)),
      });
      const users = new StateUserStore({ db: database.db, state });
      const user = `carol-${writeMode}`;
      const first = `tok-first-${writeMode}`;
      const second = `tok-second-${writeMode}`;
      await users.load(env, user);
      users.record(env, user, firstSighting(first));
      const later = new Date(at.getTime() + 1000);
      users.record(env, user, {
        profile: { seenAt: later, firstSeenAt: later },
        devices: [
          {
            key: 'fp-1',
            create: { token: second, identity: 'fingerprint', at: later },
            seen: { at: later, context: null },
          },
        ],
      });
      await state.flush(10_000);
      expect(await stored(DEVICE_TOKENS, idOf(env, first))).toBeNull();
      expect(await stored(DEVICE_TOKENS, idOf(env, second))).toMatchObject({ userId: user, key: 'fp-1' });
      for (const token of [first, second])
        expect(await fresh(errors).byToken(env, token)).toMatchObject({
          token: first,
          fingerprintKey: 'fp-1',
        });
      expect(await fresh(errors).byToken(env, `tok-unknown-${writeMode}`)).toBeNull();
      expect(errors).toEqual([]);
    });
  });
});
