/**
 * The React Native client's queue and flush rules (Castle's mobile SDKs' limits, docs/mobile.md §3):
 * events are flushed at install, update, open, close, identify and at the flush limit, and not
 * before; the queue is bounded, persisted, and only loses events the server took (or will never
 * take); one flush at a time, in batches of at most 100.
 */
import { BASE, launch, PK, types, world, type World } from './fakes';
import {
  CASTLE_REQUEST_TOKEN_HEADER,
  RampartClient,
  type RampartConfig,
} from '../../../src/react-native/client';
import { REQUEST_TIMEOUT_MS } from '../../../src/react-native/http';

/** Lets every pending promise run (one turn of the event loop; no timer, no sleep). */
const settle = () => new Promise((r) => setImmediate(r));
const storedApp = (w: World, version: string, build = '300') =>
  w.storage.data.set('rampart.app', JSON.stringify({ version, build }));

/** A launch of a known version whose opening flush (app_opened) the server holds unanswered. */
async function launchHeld(w: World): Promise<RampartClient> {
  storedApp(w, '3.2.1', '321');
  w.server.answer('/v1/client/events', 'hold');
  const client = new RampartClient(w.platform);
  await client.configure({ publishableKey: PK, baseUrl: BASE });
  await settle();
  expect(w.server.heldCount).toBe(1);
  return client;
}

// The shared scenarios of clients/test-vectors/queue.json, which every client library runs, are
// run on this client by test/unit/client/test-vectors.spec.ts (once, for the file and each scenario).

describe('flush triggers', () => {
  it.each<[string, (w: World) => void, string[]]>([
    ['first launch ever: app_installed, then app_opened', () => undefined, ['app_installed', 'app_opened']],
    [
      'a new version: app_updated, then app_opened',
      (w) => storedApp(w, '3.1.0'),
      ['app_updated', 'app_opened'],
    ],
    ['the same version: app_opened only', (w) => storedApp(w, '3.2.1', '321'), ['app_opened']],
  ])('at launch, %s, in one request', async (_, prepare, expected) => {
    const w = world();
    prepare(w);
    const client = await launch(w);
    expect(w.server.eventPosts).toHaveLength(1);
    expect(types(w.server.events)).toEqual(expected);
    expect(client.queueSize()).toBe(0);
    client.destroy();
  });

  it('app_installed and app_updated carry the versions (previous_version on an update)', async () => {
    const w = world();
    const first = await launch(w);
    first.destroy();
    expect(w.server.events[0]).toMatchObject({
      type: 'app_installed',
      properties: { version: '3.2.1', build: '321' },
    });
    w.device = { ...w.device, app: { ...w.device.app, version: '3.3.0', build: '330' } };
    const second = await launch(w);
    expect(w.server.events[2]).toMatchObject({
      type: 'app_updated',
      properties: { version: '3.3.0', build: '330', previous_version: '3.2.1', previous_build: '321' },
    });
    second.destroy();
    // The next launch of the same version is neither.
    const third = await launch(w);
    expect(types(w.server.events.slice(4))).toEqual(['app_opened']);
    third.destroy();
  });

  it.each<
    [string, 'active' | 'background', (w: World, c: RampartClient) => Promise<unknown> | void, string[]]
  >([
    [
      'going to the background (app_closed)',
      'active',
      (w) => w.appState.emit('background'),
      ['screen:Home', 'app_closed'],
    ],
    [
      'coming to the foreground (app_opened)',
      'background',
      (w) => w.appState.emit('active'),
      ['screen:Home', 'app_opened'],
    ],
    ['identify', 'active', (_, c) => c.identify('42'), ['screen:Home', 'identify']],
    ['flush()', 'active', (_, c) => c.flush(), ['screen:Home']],
  ])('flushes on %s', async (_, state, act, expected) => {
    const w = world();
    storedApp(w, '3.2.1', '321');
    w.appState.state = state;
    const client = await launch(w);
    const before = w.server.eventPosts.length;
    await client.screen('Home');
    await client.idle();
    expect(w.server.eventPosts).toHaveLength(before);
    await act(w, client);
    await client.idle();
    expect(w.server.eventPosts).toHaveLength(before + 1);
    expect(types(w.server.eventPosts[before].body.events)).toEqual(expected);
    client.destroy();
  });

  it('flushes when the queue reaches flushLimit (20), not before', async () => {
    const w = world();
    const client = await launch(w);
    const before = w.server.eventPosts.length;
    for (let i = 1; i <= 19; i++) await client.screen(`S${i}`);
    await client.idle();
    expect(w.server.eventPosts).toHaveLength(before);
    expect(client.queueSize()).toBe(19);
    await client.screen('S20');
    await client.idle();
    expect(w.server.eventPosts).toHaveLength(before + 1);
    expect(w.server.eventPosts[before].body.events).toHaveLength(20);
    expect(client.queueSize()).toBe(0);
    client.destroy();
  });

  it('honours a custom flushLimit', async () => {
    const w = world();
    const client = await launch(w, { flushLimit: 3 });
    const before = w.server.eventPosts.length;
    await client.screen('A');
    await client.screen('B');
    await client.idle();
    expect(w.server.eventPosts).toHaveLength(before);
    await client.screen('C');
    await client.idle();
    expect(types(w.server.eventPosts[before].body.events)).toEqual(['screen:A', 'screen:B', 'screen:C']);
    client.destroy();
  });

  it('a launch in the background (a headless task) queues no open and does not flush until the app is opened', async () => {
    const w = world();
    storedApp(w, '3.2.1', '321');
    w.appState.state = 'background';
    const client = await launch(w);
    await client.screen('Headless');
    await client.idle();
    expect(w.server.eventPosts).toHaveLength(0);
    w.appState.emit('active');
    await client.idle();
    expect(types(w.server.events)).toEqual(['screen:Headless', 'app_opened']);
    client.destroy();
  });

  it('a repeated app state is no change; lifecycle tracking off queues no app events but still flushes on open and close', async () => {
    const w = world();
    const client = await launch(w, { lifecycleTrackingEnabled: false });
    expect(w.server.events).toEqual([]);
    await client.screen('Home');
    w.appState.emit('active');
    await client.idle();
    expect(w.server.eventPosts).toHaveLength(0);
    w.appState.emit('background');
    await client.idle();
    expect(types(w.server.events)).toEqual(['screen:Home']);
    client.destroy();
  });
});

describe('the queue', () => {
  it('keeps at most maxQueueLimit events, dropping the oldest first', async () => {
    const w = world();
    w.server.down = true;
    const client = await launch(w, { maxQueueLimit: 5, flushLimit: 100, lifecycleTrackingEnabled: false });
    for (let i = 1; i <= 8; i++) await client.screen(`S${i}`);
    expect(client.queueSize()).toBe(5);
    w.server.down = false;
    await client.flush();
    expect(types(w.server.events)).toEqual(['screen:S4', 'screen:S5', 'screen:S6', 'screen:S7', 'screen:S8']);
    client.destroy();
  });

  it('defaults to 1,000 queued events', async () => {
    const w = world();
    w.server.down = true;
    const client = await launch(w, { flushLimit: 5000, lifecycleTrackingEnabled: false });
    for (let i = 1; i <= 1005; i++) await client.screen(`S${i}`);
    expect(client.queueSize()).toBe(1000);
    await client.idle();
    expect(JSON.parse(w.storage.data.get('rampart.queue')!)[0]).toMatchObject({ name: 'S6' });
    client.destroy();
  });

  it('survives a restart: a new client over the same storage sends what the last one could not', async () => {
    const w = world();
    w.server.down = true;
    const first = await launch(w);
    await first.screen('Cart');
    w.appState.emit('background');
    await first.idle();
    expect(first.queueSize()).toBe(4);
    first.destroy();

    w.server.down = false;
    w.appState.state = 'active';
    w.clock.advance(60_000);
    const second = await launch(w);
    expect(types(w.server.events)).toEqual([
      'app_installed',
      'app_opened',
      'screen:Cart',
      'app_closed',
      'app_opened',
    ]);
    // Each event keeps the time it happened at.
    expect(w.server.events[0].timestamp).toBe('2026-11-25T20:00:00.000Z');
    expect(w.server.events[4].timestamp).toBe('2026-11-25T20:01:00.000Z');
    expect(second.queueSize()).toBe(0);
    second.destroy();
  });

  it.each<[string, (w: World) => void]>([
    ['no network', (w) => w.server.answer('/v1/client/events', 'network_error')],
    ['a 500', (w) => w.server.answer('/v1/client/events', { status: 500, body: { type: 'server_error' } })],
    ['a 503', (w) => w.server.answer('/v1/client/events', { status: 503 })],
  ])('keeps the events on %s and sends them on the next trigger', async (_, fail) => {
    const w = world();
    fail(w);
    const client = await launch(w);
    expect(w.server.eventPosts).toHaveLength(1);
    expect(client.queueSize()).toBe(2);
    await client.identify('42');
    expect(w.server.eventPosts).toHaveLength(2);
    expect(types(w.server.eventPosts[1].body.events)).toEqual(['app_installed', 'app_opened', 'identify']);
    expect(client.queueSize()).toBe(0);
    client.destroy();
  });

  it.each([400, 401, 403, 413, 422])(
    'drops a batch answered %i (it would never be accepted), with a debug log',
    async (status) => {
      const w = world();
      w.server.answer('/v1/client/events', {
        status,
        body: {
          type: status === 422 ? 'invalid_parameters' : 'bad_request',
          message: 'no',
          fields: [{ field: 'events.0.name', message: 'too long' }],
        },
      });
      const client = await launch(w, { debugLoggingEnabled: true });
      expect(client.queueSize()).toBe(0);
      expect(w.logs.some((l) => l.includes(`answered ${status}`) && l.includes('dropped'))).toBe(true);
      await client.identify('42');
      expect(types(w.server.eventPosts[1].body.events)).toEqual(['identify']);
      client.destroy();
    },
  );

  it('after a 429 keeps the events, sends nothing before Retry-After, then flushes by itself', async () => {
    const w = world();
    w.server.answer('/v1/client/events', {
      status: 429,
      body: { type: 'rate_limited' },
      headers: { 'Retry-After': '30' },
    });
    const client = await launch(w);
    expect(client.queueSize()).toBe(2);
    await client.identify('42');
    expect(w.server.eventPosts).toHaveLength(1);
    w.clock.advance(29_999);
    await client.idle();
    expect(w.server.eventPosts).toHaveLength(1);
    w.clock.advance(1);
    await client.idle();
    expect(w.server.eventPosts).toHaveLength(2);
    expect(types(w.server.eventPosts[1].body.events)).toEqual(['app_installed', 'app_opened', 'identify']);
    client.destroy();
  });

  it('a request that never answers fails after 30 s: the flush ends, the events stay for the next trigger', async () => {
    const w = world();
    const client = await launchHeld(w);
    w.clock.advance(REQUEST_TIMEOUT_MS);
    await client.idle();
    expect(client.queueSize()).toBe(1);
    await client.identify('42');
    expect(types(w.server.eventPosts[1].body.events)).toEqual(['app_opened', 'identify']);
    expect(client.queueSize()).toBe(0);
    client.destroy();
  });

  it('stores a burst of events in a few writes, not one per event', async () => {
    const w = world();
    w.server.down = true;
    const client = await launch(w, { flushLimit: 1000, lifecycleTrackingEnabled: false });
    const before = w.storage.writes.get('rampart.queue') ?? 0;
    await Promise.all(Array.from({ length: 200 }, (_, i) => client.screen(`S${i}`)));
    await client.idle();
    expect((w.storage.writes.get('rampart.queue') ?? 0) - before).toBeLessThanOrEqual(3);
    expect(JSON.parse(w.storage.data.get('rampart.queue')!)).toHaveLength(200);
    client.destroy();
  });

  it('runs one flush at a time: triggers during a flush join it, and what they queued goes next', async () => {
    const w = world();
    const client = await launchHeld(w);
    const flushes = [client.flush(), client.identify('42'), client.flush()];
    w.appState.emit('background');
    await settle();
    expect(w.server.eventPosts).toHaveLength(1);
    w.server.release();
    await Promise.all(flushes);
    await client.idle();
    expect(w.server.eventPosts).toHaveLength(2);
    expect(types(w.server.eventPosts[0].body.events)).toEqual(['app_opened']);
    // identify() queues once it has stored the user, after the app_closed the app state queued at once.
    expect(types(w.server.eventPosts[1].body.events)).toEqual(['app_closed', 'identify']);
    client.destroy();
  });

  it('sends at most 100 events a request, oldest first, one request after the other', async () => {
    const w = world();
    w.server.down = true;
    const client = await launch(w, { flushLimit: 1000, lifecycleTrackingEnabled: false });
    for (let i = 1; i <= 250; i++) await client.screen(`S${i}`);
    w.server.down = false;
    await client.flush();
    expect(w.server.eventPosts.map((r) => r.body.events.length)).toEqual([100, 100, 50]);
    expect(w.server.events.map((e) => e.name)).toEqual(Array.from({ length: 250 }, (_, i) => `S${i + 1}`));
    client.destroy();
  });

  it('a batch that fails halfway leaves the rest queued, in order', async () => {
    const w = world();
    w.server.down = true;
    const client = await launch(w, { flushLimit: 1000, lifecycleTrackingEnabled: false });
    for (let i = 1; i <= 150; i++) await client.screen(`S${i}`);
    w.server.down = false;
    w.server.answer('/v1/client/events', { status: 202, body: { accepted: 100 } }, 'network_error');
    await client.flush();
    expect(client.queueSize()).toBe(50);
    await client.flush();
    expect(w.server.eventPosts.at(-1)!.body.events.map((e: any) => e.name)).toEqual(
      Array.from({ length: 50 }, (_, i) => `S${i + 101}`),
    );
    client.destroy();
  });
});

describe('the user on events', () => {
  const SIG = 'ab'.repeat(32);
  const SIG2 = 'cd'.repeat(32);

  it('every event after identify carries user_id, and user_signature once secure() was called', async () => {
    const w = world();
    const client = await launch(w);
    await client.screen('Login');
    await client.identify('42', {
      plan: 'pro',
      seats: 3,
      admin: false,
      nested: { no: 1 } as unknown as string,
      long: 'x'.repeat(300),
    });
    await client.secure(SIG);
    await client.screen('Home');
    await client.flush();
    const [login, identify, home] = w.server.events.slice(2);
    expect(login).toEqual({ type: 'screen', name: 'Login', timestamp: expect.any(String) });
    expect(identify).toEqual({
      type: 'identify',
      user_id: '42',
      timestamp: expect.any(String),
      properties: { plan: 'pro', seats: 3, admin: false, long: 'x'.repeat(256) },
    });
    expect(home).toEqual({
      type: 'screen',
      name: 'Home',
      user_id: '42',
      user_signature: SIG,
      timestamp: expect.any(String),
    });
    client.destroy();
  });

  it('a signature given before identify goes with that user; identifying another user drops it', async () => {
    const w = world();
    const client = await launch(w);
    await client.secure(SIG);
    await client.identify('42');
    await client.identify('43');
    await client.secure(SIG2);
    await client.identify('43');
    const [a, b, c] = w.server.events.slice(2);
    expect(a).toMatchObject({ user_id: '42', user_signature: SIG });
    expect(b).toMatchObject({ user_id: '43' });
    expect(b.user_signature).toBeUndefined();
    expect(c).toMatchObject({ user_id: '43', user_signature: SIG2 });
    client.destroy();
  });

  it('the identified user is kept across a restart; reset() flushes, then forgets it', async () => {
    const w = world();
    const first = await launch(w);
    await first.secure(SIG);
    await first.identify('42');
    first.destroy();
    const second = await launch(w);
    expect(w.server.events.at(-1)).toMatchObject({ type: 'app_opened', user_id: '42', user_signature: SIG });
    await second.screen('Settings');
    const before = w.server.eventPosts.length;
    await second.reset();
    expect(w.server.eventPosts).toHaveLength(before + 1);
    expect(w.server.events.at(-1)).toMatchObject({
      type: 'screen',
      name: 'Settings',
      user_id: '42',
      user_signature: SIG,
    });
    await second.identify('7');
    expect(w.server.events.at(-1)).toEqual({ type: 'identify', user_id: '7', timestamp: expect.any(String) });
    await second.reset();
    await second.screen('Login');
    await second.flush();
    expect(w.server.events.at(-1)).toEqual({ type: 'screen', name: 'Login', timestamp: expect.any(String) });
    expect(w.storage.data.has('rampart.user')).toBe(false);
    second.destroy();
  });

  it.each<[string, (c: RampartClient) => Promise<unknown>]>([
    ['an empty user id', (c) => c.identify('')],
    ['a user id over 128 characters', (c) => c.identify('x'.repeat(129))],
    ['a signature that is not 64 hex digits', (c) => c.secure('not-hex')],
    ['an empty screen name', (c) => c.screen('')],
  ])('refuses %s', async (_, act) => {
    const w = world();
    const client = await launch(w);
    await expect(act(client)).rejects.toThrow(/Rampart/);
    client.destroy();
  });

  it('cuts screen names to 128 characters', async () => {
    const w = world();
    const client = await launch(w);
    await client.screen('s'.repeat(200));
    await client.flush();
    expect(w.server.events.at(-1).name).toHaveLength(128);
    client.destroy();
  });
});

describe('screen tracking', () => {
  it('is off by default: screens the platform reports are not queued', async () => {
    const w = world();
    const client = await launch(w);
    w.screens.emit('Home');
    await client.flush();
    expect(types(w.server.events)).toEqual(['app_installed', 'app_opened']);
    client.destroy();
  });

  it('when on, queues each newly shown screen once', async () => {
    const w = world();
    const client = await launch(w, { screenTrackingEnabled: true });
    for (const s of ['Home', 'Home', 'Cart', 'Home']) w.screens.emit(s);
    await client.flush();
    expect(types(w.server.events)).toEqual([
      'app_installed',
      'app_opened',
      'screen:Home',
      'screen:Cart',
      'screen:Home',
    ]);
    client.destroy();
  });
});

describe('configure and destroy', () => {
  it.each<[string, Record<string, unknown>]>([
    ['no publishable key', { baseUrl: BASE }],
    ['a secret instead of a publishable key', { publishableKey: 'sk_x', baseUrl: BASE }],
    ['no base URL', { publishableKey: PK }],
    ['a base URL that is not http(s)', { publishableKey: PK, baseUrl: 'ftp://x' }],
    ['a flush limit of 0', { publishableKey: PK, baseUrl: BASE, flushLimit: 0 }],
    ['a bad allow-list entry', { publishableKey: PK, baseUrl: BASE, baseURLAllowList: ['api.example.com'] }],
    ['a bad header name', { publishableKey: PK, baseUrl: BASE, clientIdHeaderName: 'X Client' }],
  ])('refuses %s', async (_, config) => {
    const client = new RampartClient(world().platform);
    await expect(client.configure(config as any)).rejects.toThrow(/Rampart/);
  });

  it('methods other than configure ask for it first; queueSize and clientId answer 0 and null', async () => {
    const client = new RampartClient(world().platform);
    await expect(client.identify('42')).rejects.toThrow(/configure/);
    await expect(client.createRequestToken()).rejects.toThrow(/configure/);
    expect(client.queueSize()).toBe(0);
    expect(client.clientId()).toBeNull();
    expect(client.userAgent()).toBeNull();
  });

  it('destroy() unsubscribes and stops the timers', async () => {
    const w = world();
    w.server.answer('/v1/client/events', { status: 429, headers: { 'Retry-After': '5' } });
    const client = await launch(w, { screenTrackingEnabled: true });
    expect(w.appState.listenerCount).toBe(1);
    expect(w.clock.pendingTimers).toBe(1);
    client.destroy();
    expect(w.appState.listenerCount).toBe(0);
    expect(w.clock.pendingTimers).toBe(0);
  });
});

describe("Castle's React Native API: custom events, the signed user, flushIfNeeded", () => {
  const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const jwtFor = (payload: Record<string, unknown>) =>
    `${b64({ alg: 'HS256' })}.${b64(payload)}.c2lnbmF0dXJl`;

  it('custom() and customWithProperties() queue a custom event; properties that are not strings, numbers or booleans are left out', async () => {
    const w = world();
    storedApp(w, '3.2.1', '321');
    const client = await launch(w, { debugLoggingEnabled: true });
    await client.custom('Added to cart', { sku: 'A-1', qty: 2, nested: { a: 1 }, list: [1] });
    await client.customWithProperties('Checkout', { total: 9.5 });
    await client.custom('x'.repeat(200));
    await client.flush();
    await client.idle();
    expect(w.server.events.slice(1).map(({ timestamp: _t, ...e }) => e)).toEqual([
      { type: 'custom', name: 'Added to cart', properties: { sku: 'A-1', qty: 2 } },
      { type: 'custom', name: 'Checkout', properties: { total: 9.5 } },
      { type: 'custom', name: 'x'.repeat(128) },
    ]);
    expect(w.logs.join('\n')).toContain('property nested is not a string, number or boolean');
    await expect(client.custom('')).rejects.toThrow('custom() needs a name');
    client.destroy();
  });

  it('userJwt() identifies the user the JWT names (id, else sub); only the identify carries the JWT; another identify drops it; reset forgets it', async () => {
    const w = world();
    storedApp(w, '3.2.1', '321');
    const client = await launch(w);
    const jwt = jwtFor({ sub: 'u-7', exp: 2_000_000_000 });
    await client.userJwt(jwt);
    await client.identify('u-7');
    await client.identify('someone-else');
    await client.idle();
    const sent = w.server.events.slice(1).map(({ timestamp: _t, ...e }) => e);
    expect(sent).toEqual([
      { type: 'identify', user_id: 'u-7', user_jwt: jwt },
      { type: 'identify', user_id: 'u-7', user_jwt: jwt },
      { type: 'identify', user_id: 'someone-else' },
    ]);
    await expect(client.userJwt('not-a-jwt')).rejects.toThrow('userJwt() needs a JWT');
    await expect(client.userJwt(jwtFor({ email: 'a@example.com' }))).rejects.toThrow(
      'names the user as id or sub',
    );
    client.destroy();
  });

  it('the signed user survives a restart, and reset() forgets it', async () => {
    const w = world();
    storedApp(w, '3.2.1', '321');
    const jwt = jwtFor({ id: 42 });
    const first = await launch(w);
    await first.userJwt(jwt);
    first.destroy();
    const second = await launch(w);
    await second.identify('42');
    await second.idle();
    expect(w.server.events.at(-1)).toMatchObject({ type: 'identify', user_id: '42', user_jwt: jwt });
    await second.reset();
    await second.screen('Bye');
    await second.flush();
    expect(w.server.events.at(-1)).not.toHaveProperty('user_id');
    second.destroy();
  });

  it('flushIfNeeded(url) flushes only for a URL under the allow list, and says whether it did', async () => {
    const w = world();
    storedApp(w, '3.2.1', '321');
    const client = await launch(w, { baseURLAllowList: ['https://api.example.com/v1'] });
    await client.screen('Home');
    const before = w.server.eventPosts.length;
    expect(await client.flushIfNeeded('https://elsewhere.example.com/v1')).toBe(false);
    expect(w.server.eventPosts).toHaveLength(before);
    expect(await client.flushIfNeeded('https://api.example.com/v1/login')).toBe(true);
    expect(w.server.eventPosts).toHaveLength(before + 1);
    client.destroy();
  });
});

describe("configure() takes Castle's option spellings, and warns about options that do nothing", () => {
  it('lifeCycleEventsEnabled is lifecycleTrackingEnabled', async () => {
    const w = world();
    const client = await launch(w, { lifeCycleEventsEnabled: false });
    expect(w.server.events).toEqual([]);
    expect(w.warnings).toEqual([]);
    client.destroy();
  });

  it("requestTokenHeaderName is clientIdHeaderName (Castle's header for a backend that reads it)", async () => {
    const w = world();
    const client = await launch(w, { requestTokenHeaderName: CASTLE_REQUEST_TOKEN_HEADER });
    expect(client.clientIdHeaderName()).toBe('X-Castle-Request-Token');
    expect(client.requestTokenHeaderName()).toBe('X-Castle-Request-Token');
    expect(client.baseUrl()).toBe(BASE);
    client.destroy();
  });

  it("Castle's options without a meaning here, and unknown ones, are console warnings, always (not only with debug logging)", async () => {
    const w = world();
    const client = await launch(w, {
      useCloudflareApp: true,
      apiDomain: 'shop.example',
      apiPath: '/c/',
      flushLimt: 5,
    } as unknown as Partial<RampartConfig>);
    expect(w.warnings).toEqual([
      expect.stringMatching(/option useCloudflareApp is Castle's and does nothing here: .*baseUrl/),
      expect.stringMatching(/option apiDomain is Castle's and does nothing here/),
      expect.stringMatching(/option apiPath is Castle's and does nothing here/),
      expect.stringMatching(/option flushLimt is unknown and does nothing/),
    ]);
    client.destroy();
  });

  it("Castle's older baseURLWhiteList is the allow list", async () => {
    const w = world();
    const client = await launch(w, {
      baseURLWhiteList: ['https://api.example.com/v1'],
    } as unknown as Partial<RampartConfig>);
    expect(await client.flushIfNeeded('https://api.example.com/v1/login')).toBe(true);
    expect(w.warnings).toEqual([]);
    client.destroy();
  });

  it('configureWithPublishableKey is refused with the reason; setAdvertisingIdentifier is a warning', async () => {
    const w = world();
    const client = await launch(w);
    await expect(client.configureWithPublishableKey(PK)).rejects.toThrow(
      'configure({ publishableKey, baseUrl })',
    );
    await client.setAdvertisingIdentifier('ad-id');
    expect(w.warnings).toEqual([
      'Rampart: setAdvertisingIdentifier() does nothing: Rampart collects no advertising id',
    ]);
    client.destroy();
  });

  it('an alias and our name with different values is an error', async () => {
    const w = world();
    const client = new RampartClient(w.platform);
    await expect(
      client.configure({
        publishableKey: PK,
        baseUrl: BASE,
        lifecycleTrackingEnabled: true,
        lifeCycleEventsEnabled: false,
      }),
    ).rejects.toThrow("both lifecycleTrackingEnabled and Castle's lifeCycleEventsEnabled");
  });
});
