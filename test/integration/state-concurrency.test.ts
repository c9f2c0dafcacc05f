/**
 * No update is lost under concurrency, on the real (embedded) database: many clients hammering
 * one user, one IP and one device through REST, and two state layers (two Rampart instances)
 * incrementing the same documents at once. Every acknowledged event must be counted exactly once.
 */
import { randomBytes } from 'node:crypto';
import { startTestApp, call, type TestApp } from '../support/app';
import { testDatabase, type TestDatabase } from '../support/db';
import { hammer } from '../support/hammer';
import { StateLayer } from '../../src/store/state/layer';
import { delta, fieldName } from '../../src/store/state/delta';
import { epochWeight } from '../../src/core/scoring/behaviour';
import { TENTATIVE_WEIGHT } from '../../src/core/scoring/model';
import { idOf } from '../../src/store/ids';
import { unpack } from '../../src/store/state/pack';

// Hundreds of calls through the real database: on a machine whose cores are shared many times over
// that takes minutes. The bound only catches a hang.
jest.setTimeout(600_000);

const UA =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/121.0.0.0 Safari/537.36';

describe('one user, one IP, one device, many concurrent clients (REST)', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ grpc: false });
  });
  afterAll(async () => {
    await app?.close();
  });

  it('counts every acknowledged event once: velocity counter, profile, device and stored events', async () => {
    const user = `hot-${randomBytes(4).toString('hex')}`;
    const ip = '81.2.69.77';
    const context = { ip, headers: { 'User-Agent': UA, Accept: 'text/html', 'Accept-Language': 'en' } };
    const acks = { risk: 0, track: 0, allowed: 0, challenged: 0 };
    const refused: number[] = [];
    const tokens = new Set<string>();
    await hammer(600, 48, async (i) => {
      if (i % 3 === 2) {
        const r = await call(app, 'POST', '/v1/track', { event: '$login.failed', user_id: user, context });
        if (r.status === 204) acks.track++;
        else refused.push(r.status);
      } else {
        const r = await call(app, 'POST', '/v1/risk', {
          event: '$login',
          user: { id: user },
          request_token: 'one-shared-device',
          context,
        });
        if (r.status === 201) {
          acks.risk++;
          if (r.body.policy.action === 'allow') acks.allowed++;
          if (r.body.policy.action === 'challenge') acks.challenged++;
          tokens.add(r.body.device.token);
        } else refused.push(r.status);
      }
    });
    expect(refused).toEqual([]);
    await app.built.services.track.drain(false);

    // Straight from the database, not from the service's cache.
    const db = app.database.db;
    const env = app.env.id;
    // The address's sliding window (one document per hour of event time): every attempt, every
    // failure, and the one account in its distinct set. On the embedded database counter
    // documents are stored packed, and the address's window is kept in its /24's (its counts
    // named `o77_…` there): both places are read.
    type CounterDoc = { _id: string; c?: Record<string, number>; s?: Record<string, string[]> };
    const counterDocs = (await db.collection<{ _id: string }>('counters').find({ envId: env }).toArray()).map(
      (d) => ({ ...unpack(d), _id: d._id }) as CounterDoc,
    );
    const own = counterDocs.filter((d) => d._id.startsWith(idOf(env, `w:ip:${ip}:`)));
    const folded = counterDocs
      .filter((d) => d._id.startsWith(idOf(env, 'w:net:81.2.69.0/24:')))
      .map((d) => ({ c: { a: d.c?.o77_a, f: d.c?.o77_f }, s: { u: d.s?.o77_u } }));
    const ipWindows = [...own, ...folded].filter((d) => d.c?.a !== undefined);
    expect(ipWindows.length).toBeGreaterThan(0);
    expect(ipWindows.reduce((n, d) => n + (d.c?.a ?? 0), 0)).toBe(acks.risk + acks.track);
    expect(ipWindows.reduce((n, d) => n + (d.c?.f ?? 0), 0)).toBe(acks.track);
    for (const d of ipWindows) expect(d.s?.u).toEqual([user]);

    // (On the embedded database the user document is stored packed: read its stored form as is.)
    const stored = await db.collection<{ _id: string }>('users').findOne({ _id: idOf(env, user) });
    type Table = Record<string, Record<string, { c: number }>>;
    const userDoc = (stored ? unpack(stored) : null) as {
      n?: number;
      d?: Record<string, { n?: number; tokens?: string[] }>;
      p?: { n?: number; hn?: number; t?: Table; h?: Table };
    } | null;
    expect(userDoc?.n).toBe(acks.risk + acks.track);
    // The behavioural model: each allowed login taught the legitimate tables once (a challenged
    // one tentatively, as this environment reports no challenge answers), each failed login the
    // hostile record once (decayed counts, scaled back to counts at the test's time).
    const scale = epochWeight(Date.now());
    const near = (stored: number | undefined, count: number) =>
      expect(Math.abs((stored ?? 0) / scale - count)).toBeLessThan(1e-3 * Math.max(1, count));
    expect(acks.allowed).toBeGreaterThan(0);
    const taught = acks.allowed + TENTATIVE_WEIGHT * acks.challenged;
    near(userDoc?.p?.n, taught);
    near(userDoc?.p?.t?.ip?.[fieldName(ip)]?.c, taught);
    near(userDoc?.p?.hn, acks.track);
    near(userDoc?.p?.h?.ip?.[fieldName(ip)]?.c, acks.track);
    const devices = Object.values(userDoc?.d ?? {});
    expect(devices).toHaveLength(1);
    expect(devices[0]?.n).toBe(acks.risk);
    // Every token answered names that one device (a verdict answered before the user could be read
    // within its budget mints a token that becomes another name of the device).
    for (const token of tokens) {
      const d = await call(app, 'GET', `/v1/devices/${token}`);
      expect(d.status).toBe(200);
      expect(d.body.token).toBe(devices[0]?.tokens?.[0]);
    }

    expect(await db.collection('events').countDocuments({ envId: env, userId: user })).toBe(
      acks.risk + acks.track,
    );
  });
});

describe('two state layers (two instances) on one database', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await testDatabase();
  });
  afterAll(async () => {
    await database?.drop();
  });

  it("never lose each other's increments, set-adds or latest times", async () => {
    // A failed flush (two upserts of a new document racing: duplicate key) is retried; only a
    // change the database refused for good would be an error here.
    const dropped: unknown[] = [];
    const layer = () =>
      new StateLayer(database.db, {
        flushIntervalMs: 1,
        retryBaseMs: 1,
        onError: (err, what) => (what === 'flush' ? undefined : dropped.push(err)),
      });
    const a = layer();
    const b = layer();
    const ids = ['hot-1', 'hot-2', 'hot-3'];
    const perLayer = 3000;
    const latest = new Date('2026-11-23T12:00:00.000Z');
    // Interleave the two instances' changes in small bursts, each written by its own flush (both
    // instances' flushes started together), so that the two flushers' updates of the same
    // documents overlap hundreds of times.
    for (let i = 0; i < perLayer; i++) {
      for (const [n, l] of [a, b].entries()) {
        const id = ids[i % ids.length] as string;
        l.apply(
          'concurrency',
          id,
          delta()
            .inc(['n'], 1)
            .addToSet(['members'], `m${n}-${i % 50}`)
            .max(['at'], new Date(latest.getTime() - (i % 1000))),
        );
      }
      if (i % 10 === 9) await Promise.all([a.flush(), b.flush()]);
    }
    await Promise.all([a.flush(), b.flush()]);
    expect(dropped).toEqual([]);
    const docs = await database.db
      .collection<{ _id: string; n: number; members: string[]; at: Date }>('concurrency')
      .find({})
      .toArray();
    expect(docs.reduce((n, d) => n + d.n, 0)).toBe(2 * perLayer);
    for (const d of docs) {
      expect(new Set(d.members).size).toBe(d.members.length);
      expect(d.at.getTime()).toBe(latest.getTime());
    }
    expect(new Set(docs.flatMap((d) => d.members)).size).toBe(100);
  });
});
