/**
 * Event time on the verdict endpoints, and the import path (docs/detection.md, "Event time"):
 * a verdict takes a `timestamp` up to 365 days old as the event's time; an older one is scored as
 * happening now, named in the `stale_timestamp` signal, stored at now, and teaches the user's
 * profile nothing (its velocity evidence lands in the windows of now, where it is looked for).
 * History of any age goes in through track and log, which teach as the live events would.
 */
import { startTestApp, call, type TestApp } from '../support/app';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ grpc: false });
});
afterAll(async () => {
  await app?.close();
});

const DAY = 86_400_000;
const UA = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36';
const context = { ip: '81.2.69.142', headers: { 'User-Agent': UA, Accept: 'text/html', 'Accept-Language': 'en' } };
let n = 0;

type Body = (user: string, timestamp: string) => Record<string, unknown>;
const endpoints: [string, Body][] = [
  ['/v1/risk', (user, timestamp) => ({ type: '$login', status: '$succeeded', user: { id: user, email: `${user}@example.com` }, context, timestamp })],
  ['/v1/filter', (user, timestamp) => ({ type: '$login', status: '$attempted', params: { email: `${user}@example.com` }, user: { id: user }, context, timestamp })],
  ['/v1/authenticate', (user, timestamp) => ({ event: '$login.succeeded', user_id: user, user_traits: { email: `${user}@example.com` }, context, timestamp })],
];

const storedEvents = async (user: string) => {
  await app.built.services.read.events.flush();
  return app.built.services.read.events.listForUser(app.env.id, user, 10);
};

describe.each(endpoints)('%s', (path, body) => {
  it.each([1, 45, 364])('takes a timestamp %d days old as the event time', async (days) => {
    const user = `time-recent-${++n}`;
    const sent = new Date(Date.now() - days * DAY);
    const r = await call(app, 'POST', path, body(user, sent.toISOString()));
    expect(r.status).toBe(201);
    expect(r.body.signals).not.toHaveProperty('stale_timestamp');
    const [stored] = await storedEvents(user);
    expect(stored?.occurredAt.toISOString()).toBe(sent.toISOString());
    // A successful login weeks old teaches the profile as it happened: replaying history through
    // the verdict endpoints builds the same profile as living through it.
    if (path !== '/v1/filter') {
      await app.built.services.track.drain(false);
      const state = await app.built.services.read.users.load(app.env.id, user);
      expect(state?.behaviour.n).toBeGreaterThan(0);
      expect(state?.profile.lastSeenAt.toISOString()).toBe(sent.toISOString());
    }
  });

  it('scores a timestamp 366 days old as now, names it, and teaches the profile nothing', async () => {
    const user = `time-stale-${++n}`;
    const sent = new Date(Date.now() - 366 * DAY);
    const before = Date.now();
    const r = await call(app, 'POST', path, body(user, sent.toISOString()));
    const after = Date.now();
    expect(r.status).toBe(201);
    expect(r.body.signals.stale_timestamp).toEqual({ score: 0, timestamp: sent.toISOString(), max_age_days: 365 });
    const [stored] = await storedEvents(user);
    expect(stored?.signals).toContain('stale_timestamp');
    expect(stored?.occurredAt.getTime()).toBeGreaterThanOrEqual(before);
    expect(stored?.occurredAt.getTime()).toBeLessThanOrEqual(after);
    const state = await app.built.services.read.users.load(app.env.id, user);
    // (A pre-auth filter call records no user.)
    if (path !== '/v1/filter') expect(state).not.toBeNull();
    if (state) {
      expect(state.behaviour.n).toBe(0);
      expect(state.profile.lastLocation).toBeNull();
    }
  });
});

it('a policy can act on stale_timestamp', async () => {
  const { policies } = app.built.services;
  await policies.create(app.env.id, { name: 'Challenge stale verdicts', group: 'before', action: 'challenge', conditions: { signalsAny: ['stale_timestamp'] } });
  const r = await call(app, 'POST', '/v1/risk', { type: '$login', status: '$succeeded', user: { id: `time-policy-${++n}` }, context, timestamp: new Date(Date.now() - 400 * DAY).toISOString() });
  expect(r.status).toBe(201);
  expect(r.body.policy).toMatchObject({ action: 'challenge', name: 'Challenge stale verdicts' });
});

it('imports history of any age through log and track, which teach the profile at the time it happened', async () => {
  const user = `time-import-${++n}`;
  const first = new Date(Date.now() - 90 * DAY);
  const later = new Date(Date.now() - 45 * DAY);
  for (const [path, at] of [['/v1/log', first], ['/v1/track', later]] as const) {
    const r = await call(app, 'POST', path, path === '/v1/log' ? { type: '$login', status: '$succeeded', user: { id: user }, context, timestamp: at.toISOString() } : { event: '$login.succeeded', user_id: user, context, timestamp: at.toISOString() });
    expect(r.status).toBe(204);
  }
  await app.built.services.track.drain(false);
  const state = await app.built.services.read.users.load(app.env.id, user);
  expect(state?.profile.lastLocation?.at.toISOString()).toBe(later.toISOString());
  expect(state?.profile.lastSeenAt.toISOString()).toBe(later.toISOString());
  expect(state?.behaviour.n).toBeGreaterThan(0);
  const stored = await storedEvents(user);
  expect(stored.map((e) => e.occurredAt.toISOString()).sort()).toEqual([first.toISOString(), later.toISOString()]);
  expect(stored.every((e) => !e.signals.includes('stale_timestamp'))).toBe(true);
});
