/**
 * The verdict use case (VerdictService.evaluate) on in-memory fakes of every port: what it
 * answers and what it records, without a database or a timer.
 */
import type { EventCommand } from '../../../src/core/events/command';
import type { Principal } from '../../../src/core/model';
import { InvalidParameters } from '../../../src/core/errors';
import { createFakeServices, type FakeServices } from '../../support/fakes';

const UA =
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_4) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36';

/** A newer SDK's login, as any door's command carries it. */
const login = (userId: string, more: EventCommand = {}): EventCommand => ({
  event: '$login',
  status: '$succeeded',
  user: { id: userId, email: `${userId}@example.com` },
  context: { ip: '81.2.69.142', headers: { 'User-Agent': UA, 'Accept-Language': 'en-GB' } },
  requestToken: 'laptop-fingerprint-0001',
  ...more,
});

let s: FakeServices;
beforeEach(() => {
  s = createFakeServices();
});

describe('a verdict', () => {
  it("on a new user's first login allows it, and records the user, the device, the counters and the event", async () => {
    const { principal, env } = await s.environment();
    const v = await s.verdicts.evaluate(principal, 'risk', login('u1'));
    expect(v.action).toBe('allow');
    expect(v.degraded).toBe(false);
    expect(v.device?.token).toEqual(expect.any(String));
    const user = await s.users.load(env.id, 'u1');
    expect(user?.profile.email).toBe('u1@example.com');
    expect(user?.devices.map((d) => d.token)).toEqual([v.device?.token]);
    expect(s.events.all).toEqual([
      expect.objectContaining({
        userId: 'u1',
        action: 'allow',
        deviceToken: v.device?.token,
        endpoint: 'risk',
      }),
    ]);
    const counters = await s.counters.read(env.id, ['env']);
    expect(counters).toBeDefined();
  });

  it('recognises the device on the next event from it', async () => {
    const { principal } = await s.environment();
    const first = await s.verdicts.evaluate(principal, 'risk', login('u1'));
    await s.time.advance(60_000);
    const second = await s.verdicts.evaluate(principal, 'risk', login('u1'));
    expect(second.device?.token).toBe(first.device?.token);
    expect(second.device?.sightings).toBe(2);
    const other = await s.verdicts.evaluate(
      principal,
      'risk',
      login('u1', { requestToken: 'phone-fingerprint-0002' }),
    );
    expect(other.device?.token).not.toBe(first.device?.token);
  });

  it('denies a login from a reported device, and notifies the webhook once per device and hour', async () => {
    const { principal, env } = await s.environment({ webhookUrl: 'https://hooks.example/rampart' });
    const first = await s.verdicts.evaluate(principal, 'risk', login('u1'));
    await s.devices.report(env, first.device?.token ?? '');
    const v = await s.verdicts.evaluate(principal, 'risk', login('u1'));
    expect(v.action).toBe('deny');
    expect(v.device?.feedback).toBe('reported');
    await s.time.settle();
    // The report's notice covers the denial within the hour (the dedupe slot).
    expect(s.webhookStore.all.map((d) => d.trigger)).toEqual(['device_reported']);
    await s.time.advance(61 * 60_000);
    expect((await s.verdicts.evaluate(principal, 'risk', login('u1'))).action).toBe('deny');
    await s.time.settle();
    expect(s.webhookStore.all.map((d) => d.trigger)).toEqual(['device_reported', 'verdict_deny']);
  });

  it("takes a sandbox test token's action and risk; a challenge also opens a review", async () => {
    const { principal } = await s.environment({ webhookUrl: 'https://hooks.example/rampart' });
    const v = await s.verdicts.evaluate(
      principal,
      'risk',
      login('u2', { requestToken: 'test|device:chrome_on_mac|policy.action:challenge|risk:0.75' }),
    );
    expect(v.action).toBe('challenge');
    expect(v.risk).toBe(0.75);
    // Its own test policy decided it: not the environment's policy that would have (its id, revision and name go together).
    expect(v.policy).toEqual({
      id: '00000000-0000-0000-0000-000000000002',
      revision: '00000000-0000-0000-0000-000000000002',
      name: 'Sandbox test token (challenge)',
      action: 'challenge',
    });
    await s.time.settle();
    expect(s.webhookStore.all.map((d) => d.type).sort()).toEqual(['$incident.confirmed', '$review.opened']);
  });

  it('answers from what is at hand, marked degraded, when the state cannot be read in time', async () => {
    const { principal } = await s.environment();
    await s.verdicts.evaluate(principal, 'risk', login('u3'));
    s.state.unreachable = true;
    const v = await s.verdicts.evaluate(principal, 'risk', login('u3'));
    expect(v.degraded).toBe(true);
    expect(s.log.lines.filter((l) => l.level === 'warn').map((l) => l.msg)).toEqual([
      'verdict degraded: state not read within the verdict budget',
    ]);
    expect(s.events.all.at(-1)?.degraded).toBe(true);
  });

  it('still sees the attack windows held in memory when the database misses the budget: slow is never permissive', async () => {
    const { principal } = await s.environment();
    const ip = '203.0.113.77';
    const attempt = (k: number): EventCommand => ({
      event: '$login',
      status: '$failed',
      user: { email: `victim${k}@example.com` },
      context: { ip, headers: { 'User-Agent': UA, 'Accept-Language': 'en-GB' } },
    });
    for (let k = 0; k < 40; k++) await s.verdicts.evaluate(principal, 'filter', attempt(k));
    const quiet = await s.verdicts.evaluate(principal, 'filter', attempt(40));
    s.state.slow = true;
    const slow = await s.verdicts.evaluate(principal, 'filter', attempt(41));
    expect(quiet.degraded).toBe(false);
    expect(slow.degraded).toBe(true);
    expect(slow.action).not.toBe('allow');
    const velocity = Object.keys(quiet.signals).filter(
      (n) => !['new_device', 'new_isp', 'new_country'].includes(n),
    );
    expect(velocity.length).toBeGreaterThan(0);
    for (const name of velocity) expect(slow.signals).toHaveProperty(name);
    expect(s.log.lines.filter((l) => l.level === 'warn').map((l) => l.msg)).toEqual([
      'verdict degraded: state not read within the verdict budget',
    ]);
  });

  it('scores an event older than the verdict window as now, naming when it was sent', async () => {
    const { principal } = await s.environment();
    const sent = new Date(s.time.clock.now().getTime() - 400 * 86_400_000);
    const v = await s.verdicts.evaluate(principal, 'risk', login('u4', { timestamp: sent.toISOString() }));
    expect(v.signals.stale_timestamp).toEqual({ score: 0, timestamp: sent.toISOString(), max_age_days: 365 });
    expect(v.event.occurredAt).toEqual(s.time.clock.now());
  });

  it.each([
    ['no event', { ...login('u5'), event: undefined, status: undefined }, ['event']],
    ['no user', { ...login('u5'), user: undefined }, ['user']],
    [
      'a wrong-typed e-mail and IP',
      login('u5', {
        user: { id: 'u5', email: 42 },
        context: { ip: 'not-an-ip', headers: { 'User-Agent': UA } },
      }),
      ['context.ip', 'user.email'],
    ],
    ['a time as an out-of-range Date', login('u5', { timestamp: new Date(Number.NaN) }), ['timestamp']],
  ])('refuses %s, naming each field, and records nothing', async (_what, command, fields) => {
    const { principal } = await s.environment();
    const err = await s.verdicts.evaluate(principal, 'risk', command).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidParameters);
    expect((err as InvalidParameters).fields.map((f) => f.field).sort()).toEqual(fields);
    expect(s.events.all).toEqual([]);
    expect(s.state.changes).toBe(0);
  });

  it("names fields as the door's wire does (the command's names)", async () => {
    const { principal } = await s.environment();
    const command: EventCommand = {
      event: '$login.succeeded',
      userTraits: { email: 7 },
      context: { ip: '81.2.69.142' },
      names: { user_id: 'user.id', 'user_traits.email': 'user.email' },
    };
    const err = (await s.verdicts
      .evaluate(principal, 'authenticate', command)
      .catch((e: unknown) => e)) as InvalidParameters;
    expect(err.fields.map((f) => f.field).sort()).toEqual(['user.email', 'user.id']);
  });
});

describe("an app release's token habit, learned from the environment's traffic", () => {
  const ios = (build: string) => ({
    'User-Agent': `ShopApp/${build} CFNetwork/1498.700.2 Darwin/23.6.0`,
    Accept: 'application/json',
    'Accept-Language': 'en-GB',
    'Accept-Encoding': 'gzip, deflate, br',
  });
  const appLogin = (k: number, build: string, token: string | null): EventCommand => ({
    event: '$login',
    status: '$succeeded',
    user: { id: `app-${k}`, email: `app-${k}@example.com` },
    context: { ip: `81.2.${70 + (k >> 8)}.${k & 255}`, headers: ios(build) },
    ...(token ? { requestToken: token } : {}),
  });

  it('a release whose users logged in without a token before the client shipped keeps that habit; the current one does not', async () => {
    const { principal } = await s.environment();
    const run = async (k: number, build: string, token: string | null) => {
      const v = await s.verdicts.evaluate(principal, 'risk', appLogin(k, build, token));
      await s.time.advance(5 * 60_000);
      return v;
    };
    // Release 304, from before the client: its users log in without a token.
    for (let k = 0; k < 8; k++) expect((await run(k, '304', null)).action).toBe('allow');
    // Release 312 embeds the client: nearly every login from now on carries a token. 150 of them
    // make the apps' habit (FINGERPRINT_HABIT_MIN_EVENTS, 50) about 94% (FINGERPRINT_HABIT_FROM, 90%)
    // with the 8 above and the 2 below without one.
    for (let k = 8; k < 158; k++) await run(k, '312', `phone-install-${k}`);
    await s.time.settle();
    // A user still on 304, at their first login: judged as that release's traffic.
    const old = await run(1000, '304', null);
    expect(old.signals).not.toHaveProperty('missing_fingerprint');
    // The current release's headers without its token: not what its users send.
    const copied = await run(1001, '312', null);
    expect(copied.signals).toHaveProperty('missing_fingerprint');
    expect(copied.signals.missing_fingerprint).toMatchObject({ release: 'CFNetwork|ShopApp/312' });
    // A release no legitimate login ever named is judged as the app's releases as a whole.
    const claimed = await run(1002, '299', null);
    expect(claimed.signals).toHaveProperty('missing_fingerprint');
  });
});

describe('a passed challenge teaches the token habit as an allowed login does', () => {
  const ios = (build: string) => ({
    'User-Agent': `ShopApp/${build} CFNetwork/1498.700.2 Darwin/23.6.0`,
    Accept: 'application/json',
    'Accept-Language': 'en-GB',
    'Accept-Encoding': 'gzip, deflate, br',
  });
  const context = (k: number, build: string) => ({
    ip: `81.2.${70 + (k >> 8)}.${k & 255}`,
    headers: ios(build),
  });
  const appLogin = (k: number, build: string, token: string | null): EventCommand => ({
    event: '$login',
    status: '$succeeded',
    user: { id: `app-${k}`, email: `app-${k}@example.com` },
    context: context(k, build),
    ...(token ? { requestToken: token } : {}),
  });

  /**
   * One environment for the tests below, where the client has shipped: every login of release 312
   * carries a token, twice the logins the habit needs (FINGERPRINT_HABIT_MIN_EVENTS, 50). Each test
   * then takes a release of its own from before the client (a release's habit is its own), and
   * the apps' habit stays as those logins made it until a challenge is passed: the test that
   * passes them runs last.
   */
  let world: FakeServices;
  let principal: Principal;
  const run = async (k: number, build: string, token: string | null) => {
    const v = await world.verdicts.evaluate(principal, 'risk', appLogin(k, build, token));
    await world.time.advance(5 * 60_000);
    return v;
  };
  beforeAll(async () => {
    world = createFakeServices();
    ({ principal } = await world.environment());
    for (let k = 0; k < 100; k++) await run(k, '312', `phone-install-${k}`);
    await world.time.settle();
  });

  /**
   * Users of `release` (from user `from` on) log in for the first time: each one
   * `missing_fingerprint` challenges answers the challenge as `answer` says. What the sixth one's
   * login gets.
   */
  const oldReleaseAfter = async (
    release: string,
    from: number,
    answer: '$challenge.succeeded' | '$challenge.failed' | null,
  ) => {
    const first = await run(from, release, null);
    expect(first.action).toBe('challenge');
    expect(first.signals).toHaveProperty('missing_fingerprint');
    for (let k = from; k < from + 5; k++) {
      const v = k === from ? first : await run(k, release, null);
      if (v.action === 'challenge' && answer)
        await world.track.accept(principal, {
          event: answer,
          userId: `app-${k}`,
          context: context(k, release),
        });
      await world.time.advance(60_000);
    }
    await world.time.settle();
    return run(from + 5, release, null);
  };

  it.each([
    ['unanswered', '305', 2000, null],
    ['failed', '306', 3000, '$challenge.failed'],
  ] as const)('%s challenges teach it nothing', async (_what, release, from, answer) => {
    const v = await oldReleaseAfter(release, from, answer);
    expect(v.action).toBe('challenge');
    expect(v.signals.missing_fingerprint).toMatchObject({ release: `CFNetwork|ShopApp/${release}` });
  });

  it("an old release's users who pass their challenges make it that release's traffic", async () => {
    const v = await oldReleaseAfter('304', 1000, '$challenge.succeeded');
    expect(v.action).toBe('allow');
    expect(v.signals).not.toHaveProperty('missing_fingerprint');
  });
});
