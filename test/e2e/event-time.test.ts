/**
 * Event time on the verdict endpoints, and the import path (docs/detection.md, "Event time"):
 * a verdict takes a `timestamp` up to 365 days old as the event's time; an older one is scored as
 * happening now, named in the `stale_timestamp` signal, stored at now, and teaches the user's
 * profile nothing (its velocity evidence lands in the windows of now, where it is looked for).
 * History of any age goes in through track and log, which teach as the live events would.
 */
import { startTestApp, call, type TestApp } from '../support/app';
import { storedOf } from '../support/stored';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ grpc: false });
});
afterAll(async () => {
  await app?.close();
});

const DAY = 86_400_000;
const UA =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36';
const context = {
  ip: '81.2.69.142',
  headers: { 'User-Agent': UA, Accept: 'text/html', 'Accept-Language': 'en' },
};
let n = 0;

type Body = (user: string, timestamp: string) => Record<string, unknown>;
const endpoints: [string, Body][] = [
  [
    '/v1/risk',
    (user, timestamp) => ({
      type: '$login',
      status: '$succeeded',
      user: { id: user, email: `${user}@example.com` },
      context,
      timestamp,
    }),
  ],
  [
    '/v1/filter',
    (user, timestamp) => ({
      type: '$login',
      status: '$attempted',
      params: { email: `${user}@example.com` },
      user: { id: user },
      context,
      timestamp,
    }),
  ],
  [
    '/v1/authenticate',
    (user, timestamp) => ({
      event: '$login.succeeded',
      user_id: user,
      user_traits: { email: `${user}@example.com` },
      context,
      timestamp,
    }),
  ],
];

const storedEvents = async (user: string) => {
  await app.built.state.flush();
  return storedOf(app).eventsOfUser(app.env.id, user, 10);
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
    expect(r.body.signals.stale_timestamp).toEqual({
      score: 0,
      timestamp: sent.toISOString(),
      max_age_days: 365,
    });
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
  await policies.create(app.env.id, {
    name: 'Challenge stale verdicts',
    group: 'before',
    action: 'challenge',
    conditions: { signalsAny: ['stale_timestamp'] },
  });
  const r = await call(app, 'POST', '/v1/risk', {
    type: '$login',
    status: '$succeeded',
    user: { id: `time-policy-${++n}` },
    context,
    timestamp: new Date(Date.now() - 400 * DAY).toISOString(),
  });
  expect(r.status).toBe(201);
  expect(r.body.policy).toMatchObject({ action: 'challenge', name: 'Challenge stale verdicts' });
});

it('imports history of any age through log and track, which teach the profile at the time it happened', async () => {
  const user = `time-import-${++n}`;
  const first = new Date(Date.now() - 90 * DAY);
  const later = new Date(Date.now() - 45 * DAY);
  for (const [path, at] of [
    ['/v1/log', first],
    ['/v1/track', later],
  ] as const) {
    const r = await call(
      app,
      'POST',
      path,
      path === '/v1/log'
        ? { type: '$login', status: '$succeeded', user: { id: user }, context, timestamp: at.toISOString() }
        : { event: '$login.succeeded', user_id: user, context, timestamp: at.toISOString() },
    );
    expect(r.status).toBe(204);
  }
  await app.built.services.track.drain(false);
  const state = await app.built.services.read.users.load(app.env.id, user);
  expect(state?.profile.lastLocation?.at.toISOString()).toBe(later.toISOString());
  expect(state?.profile.lastSeenAt.toISOString()).toBe(later.toISOString());
  expect(state?.behaviour.n).toBeGreaterThan(0);
  const stored = await storedEvents(user);
  expect(stored.map((e) => e.occurredAt.toISOString()).sort()).toEqual([
    first.toISOString(),
    later.toISOString(),
  ]);
  expect(stored.every((e) => !e.signals.includes('stale_timestamp'))).toBe(true);
});

it('a login list spread over a day, which no hour shows, raises attack_wave from the day’s share of unknown accounts', async () => {
  // A fresh environment with nine days of history: 30 users logging in a few times a day (their
  // first logins the only attempts on accounts Rampart did not know).
  const { secret } = await app.newEnvironment(`slow-wave-${Date.now()}`);
  const as = { secret };
  const start = Date.now() - 10 * DAY;
  const history: Promise<unknown>[] = [];
  for (let d = 0; d < 9; d++) {
    for (let k = 0; k < 72; k++) {
      const at = new Date(start + d * DAY + k * 20 * 60_000).toISOString();
      history.push(
        call(
          app,
          'POST',
          '/v1/track',
          {
            event: '$login.succeeded',
            user_id: `settled-${k % 30}`,
            context: { ...context, ip: `81.2.69.${10 + (k % 30)}` },
            timestamp: at,
          },
          as,
        ),
      );
    }
  }
  expect((await Promise.all(history)).every((r) => (r as { status: number }).status === 204)).toBe(true);
  await app.built.services.track.drain(false);
  // Then, over the last twelve hours, two pre-auth checks an hour for addresses nobody has:
  // never 15 in an hour, never 4 in five minutes.
  const preauth = (k: number, at: number) =>
    call(
      app,
      'POST',
      '/v1/filter',
      {
        type: '$login',
        status: '$attempted',
        params: { email: `list-${k}@example.com` },
        context: { ...context, ip: `81.2.69.${100 + k}` },
        timestamp: new Date(at).toISOString(),
      },
      as,
    );
  const from = Date.now() - 12 * 3_600_000;
  const first = await preauth(0, from);
  expect(first.body.signals).not.toHaveProperty('attack_wave');
  let last = first;
  for (let k = 1; k < 24; k++) last = await preauth(k, from + k * 30 * 60_000);
  expect(last.status).toBe(201);
  expect(last.body.signals.attack_wave).toMatchObject({
    window_hours: 24,
    unknown_accounts_last_day: expect.any(Number),
    score: 2.5,
  });
  expect(last.body.signals).toHaveProperty('unknown_account');
  expect(last.body.policy.action).toBe('challenge');
});
