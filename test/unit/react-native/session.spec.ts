/**
 * The React Native client's session and request tokens (docs/mobile.md §1-2): the registration
 * body field by field against the documented table, the clock offset, the token's format and
 * MAC checked independently with node:crypto, re-registration, and what is (not) sent about the
 * device: the vendor id hashed, the raw one only with forwarding on, no secret in the logs.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { BASE, launch, PK, verifyToken, world } from './fakes';
import { RampartClient, TOKEN_WAIT_MS } from '../../../src/react-native/client';
import { SDK_VERSION } from '../../../src/react-native/version';
import { mintToken } from '../../../src/react-native/session';
import { readVectors } from '../../support/test-vectors';

const HOUR = 3_600_000;

/** docs/mobile.md's table for the `mobile` object, written out here from the document (strict: no unknown members). */
const text = (max: number) => z.string().max(max);
const mobileSchema = z
  .object({
    platform: z.enum(['android', 'ios']),
    osVersion: text(32),
    model: text(64),
    manufacturer: text(64).optional(),
    app: z
      .object({
        id: z.string().regex(/^[A-Za-z0-9._-]{1,150}$/),
        version: text(32),
        build: text(32).optional(),
      })
      .strict(),
    sdk: text(64).optional(),
    locale: text(35).optional(),
    timezone: text(64).optional(),
    timezoneOffset: z.number().int().min(-900).max(900).optional(),
    screen: z
      .object({
        width: z.number().min(0).max(100_000),
        height: z.number().min(0).max(100_000),
        scale: z.number().min(0).max(10),
      })
      .strict()
      .optional(),
    installId: z.string().regex(/^[A-Za-z0-9_-]{16,64}$/),
    vendorId: z
      .string()
      .regex(/^[0-9a-f]{64}$/)
      .optional(),
    deviceId: text(64).nullable().optional(),
    userAgent: text(512).optional(),
    integrity: z
      .array(
        z.enum([
          'emulator',
          'rooted',
          'jailbroken',
          'debugger',
          'hooking_framework',
          'app_tampered',
          'mock_location',
        ]),
      )
      .optional(),
    attestation: z
      .object({ kind: z.enum(['play_integrity', 'app_attest']), token: z.string().min(1).max(16_384) })
      .strict()
      .optional(),
  })
  .strict();
const registrationSchema = z.object({ publishable_key: z.string(), mobile: mobileSchema }).strict();

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

describe('session registration', () => {
  it('posts the documented body, field by field, with nothing else', async () => {
    const w = world();
    const client = await launch(w);
    expect(w.server.registrations).toHaveLength(1);
    const r = w.server.registrations[0];
    expect(r.url).toBe(`${BASE}/v1/client/token`);
    expect(r.headers).toEqual({ 'Content-Type': 'application/json' });
    registrationSchema.parse(r.body);
    const installId = w.secure.data.get('rampart.install_id');
    expect(r.body).toEqual({
      publishable_key: PK,
      mobile: {
        platform: 'android',
        osVersion: '14',
        model: 'Pixel 8',
        manufacturer: 'Google',
        app: { id: 'com.example.shop', version: '3.2.1', build: '321' },
        sdk: `rampart-react-native/${SDK_VERSION}`,
        locale: 'en-GB',
        timezone: 'Europe/London',
        timezoneOffset: 0,
        screen: { width: 1080, height: 2400, scale: 2.625 },
        installId,
        vendorId: sha256('com.example.shop:a1b2c3d4e5f60718'),
        userAgent: `ShopApp/3.2.1 (321; Pixel 8; Android 14) rampart-react-native/${SDK_VERSION}`,
        integrity: ['rooted'],
      },
    });
    expect(installId).toMatch(/^[A-Za-z0-9_-]{22,}$/);
    expect(client.userAgent()).toBe(r.body.mobile.userAgent);
    client.destroy();
  });

  it('keeps to the documented bounds whatever the device reports', async () => {
    const w = world({
      osVersion: '1'.repeat(40),
      model: 'M'.repeat(100),
      manufacturer: 'F'.repeat(100),
      app: {
        id: 'com.example.shop',
        name: 'Shöp (Beta) / Ünïcode',
        version: 'v'.repeat(40),
        build: 'b'.repeat(40),
      },
      locale: 'x'.repeat(40),
      timezoneOffset: 1200,
      screen: { width: 1080, height: 2400, scale: 20 },
      vendorId: null,
      integrity: ['emulator', 'emulator', 'frida' as never, 'debugger'],
    });
    const client = await launch(w);
    const m = registrationSchema.parse(w.server.registrations[0].body).mobile;
    expect(m.timezoneOffset).toBeUndefined();
    expect(m.screen).toBeUndefined();
    expect(m.vendorId).toBeUndefined();
    expect(m.integrity).toEqual(['emulator', 'debugger']);
    expect(m.userAgent).toMatch(/^[\x20-\x7e]+$/);
    expect(m.userAgent).toBe(
      `ShpBetancode/${'v'.repeat(32)} (${'b'.repeat(32)}; ${'M'.repeat(64)}; Android ${'1'.repeat(32)}) rampart-react-native/${SDK_VERSION}`,
    );
    client.destroy();
  });

  it('carries the attestation the platform provides', async () => {
    const w = world({ platform: 'ios', model: 'iPhone15,3', manufacturer: 'Apple', osVersion: '17.5' });
    w.platform.attestation = async () => ({ kind: 'app_attest', token: 'att-token' });
    const client = await launch(w);
    const m = registrationSchema.parse(w.server.registrations[0].body).mobile;
    expect(m.attestation).toEqual({ kind: 'app_attest', token: 'att-token' });
    expect(m.userAgent).toBe(`ShopApp/3.2.1 (321; iPhone15,3; iOS 17.5) rampart-react-native/${SDK_VERSION}`);
    client.destroy();
  });

  it('device-ID forwarding is off by default (no deviceId); when on, the raw vendor id is sent as deviceId', async () => {
    const off = world();
    (await launch(off)).destroy();
    expect(off.server.registrations[0].body.mobile).not.toHaveProperty('deviceId');
    expect(JSON.stringify(off.server.requests)).not.toContain('a1b2c3d4e5f60718');
    const on = world();
    (await launch(on, { deviceIDAutoForwardingEnabled: true })).destroy();
    expect(on.server.registrations[0].body.mobile).toMatchObject({
      deviceId: 'a1b2c3d4e5f60718',
      vendorId: sha256('com.example.shop:a1b2c3d4e5f60718'),
    });
  });

  it('makes the install id once and keeps it in secure storage, not in the app storage', async () => {
    const w = world();
    (await launch(w)).destroy();
    const id = w.secure.data.get('rampart.install_id');
    w.secure.data.delete('rampart.session');
    (await launch(w)).destroy();
    expect(w.server.registrations.map((r) => r.body.mobile.installId)).toEqual([id, id]);
    expect([...w.storage.data.values()].join()).not.toContain(id);
  });

  it('reuses a stored session across a restart, and keeps its key out of the app storage', async () => {
    const w = world();
    (await launch(w)).destroy();
    w.clock.advance(10 * 60_000);
    const second = await launch(w);
    expect(w.server.registrations).toHaveLength(1);
    expect(verifyToken(second.clientId()!, w.server.sessions[0])).toBeTruthy();
    expect([...w.storage.data.values()].join()).not.toContain(w.server.sessions[0].key);
    second.destroy();
  });

  it('a failed registration is tried again at the next flush; events wait for it', async () => {
    const w = world();
    w.server.answer('/v1/client/token', 'network_error');
    const client = await launch(w);
    expect(w.server.eventPosts).toHaveLength(0);
    expect(client.queueSize()).toBe(2);
    await client.identify('42');
    expect(w.server.registrations).toHaveLength(2);
    expect(w.server.events.map((e) => e.type)).toEqual(['app_installed', 'app_opened', 'identify']);
    client.destroy();
  });
});

describe('clock offset', () => {
  it("stamps tokens and events in Rampart's time, including events queued before the first session", async () => {
    const w = world();
    w.server.offset = 5 * 60_000 + 123;
    w.server.answer('/v1/client/token', 'network_error');
    const client = await launch(w);
    w.clock.advance(1000);
    await client.identify('42');
    const [installed, opened, identify] = w.server.events;
    expect(installed.timestamp).toBe(new Date(w.clock.time - 1000 + w.server.offset).toISOString());
    expect(opened.timestamp).toBe(installed.timestamp);
    expect(identify.timestamp).toBe(new Date(w.clock.time + w.server.offset).toISOString());
    w.clock.advance(2000);
    const { t } = verifyToken(client.clientId()!, w.server.sessions[0]);
    expect(t).toBe(w.clock.time + w.server.offset);
    client.destroy();
  });
});

describe('request tokens', () => {
  it.each<[string, any]>(readVectors('tokens.json').rpm1.mint.map((m: any) => [m.name, m]))(
    'mints the shared vector %s byte for byte',
    (_name, m) => {
      expect(mintToken(m.session, m.session_key, m.device_time + m.offset, m.nonce)).toBe(m.token);
    },
  );

  it('mints from the device clock plus the offset and a nonce of 16 random bytes, as the vector does', async () => {
    const m = readVectors('tokens.json').rpm1.mint[0];
    const w = world();
    w.platform.randomBytes = (n) => Uint8Array.from({ length: n }, (_, i) => i);
    w.clock.time = m.device_time;
    const client = await launch(w);
    const keeper = (client as any).sessions;
    expect(
      keeper.mintFrom({
        session: m.session,
        key: m.session_key,
        registeredAt: m.t,
        expiresAt: m.t + 86_400_000,
        offset: m.offset,
      }),
    ).toBe(m.token);
    client.destroy();
  });

  it('mints rpm1.<session claims>.<session mac>.<t>.<nonce>.<mac>, the MAC keyed by the session key', async () => {
    const w = world();
    const client = await launch(w);
    const token = client.clientId()!;
    const { t } = verifyToken(token, w.server.sessions[0]);
    expect(t).toBe(w.clock.time);
    // A token with its MAC computed under another key fails the independent check.
    expect(() => verifyToken(token, { ...w.server.sessions[0], key: 'another-key' })).toThrow('bad MAC');
    // As does one whose signed part was altered.
    const altered = token.replace(`.${t}.`, `.${t + 1}.`);
    expect(() => verifyToken(altered, w.server.sessions[0])).toThrow('bad MAC');
    client.destroy();
  });

  it('a new nonce every token', async () => {
    const w = world();
    const client = await launch(w);
    const nonces = new Set(
      Array.from({ length: 50 }, () => verifyToken(client.clientId()!, w.server.sessions[0]).nonce),
    );
    expect(nonces.size).toBe(50);
    client.destroy();
  });

  it('clientId() is null until a session exists; createRequestToken() registers one first', async () => {
    const w = world();
    w.server.answer('/v1/client/token', 'hold');
    const client = new RampartClient(w.platform);
    await client.configure({ publishableKey: PK, baseUrl: BASE });
    expect(client.clientId()).toBeNull();
    const pending = client.createRequestToken();
    await new Promise((r) => setImmediate(r));
    expect(w.server.registrations).toHaveLength(1);
    w.server.release();
    verifyToken(await pending, w.server.sessions[0]);
    verifyToken(client.clientId()!, w.server.sessions[0]);
    await client.idle();
    client.destroy();
  });

  it('createRequestToken() rejects when no session can be registered', async () => {
    const w = world();
    w.server.answer(
      '/v1/client/token',
      { status: 401, body: { type: 'unauthorized', message: 'unknown publishable key' } },
      { status: 401, body: { type: 'unauthorized' } },
    );
    const client = await launch(w);
    await expect(client.createRequestToken()).rejects.toThrow(/401/);
    client.destroy();
  });
});

describe('re-registration', () => {
  it('after 422 invalid_request_token on events: registers again and resends once', async () => {
    const w = world();
    w.server.answer('/v1/client/events', {
      status: 422,
      body: { type: 'invalid_request_token', message: 'expired' },
    });
    const client = await launch(w);
    expect(w.server.registrations).toHaveLength(2);
    const [refused, resent] = w.server.eventPosts;
    expect(refused.body.session).toBe(w.server.sessions[0].session);
    expect(resent.body.session).toBe(w.server.sessions[1].session);
    expect(resent.body.events).toEqual(refused.body.events);
    expect(client.queueSize()).toBe(0);
    verifyToken(client.clientId()!, w.server.sessions[1]);
    client.destroy();
  });

  it('when the new session is refused too, keeps the events and stops (no loop)', async () => {
    const w = world();
    const refused = { status: 422, body: { type: 'invalid_request_token' } };
    w.server.answer('/v1/client/events', refused, refused);
    const client = await launch(w);
    expect(w.server.registrations).toHaveLength(2);
    expect(w.server.eventPosts).toHaveLength(2);
    expect(client.queueSize()).toBe(2);
    client.destroy();
  });

  it.each<[string, number, number]>([
    ['59 minutes old: kept', 59 * 60_000, 1],
    ['61 minutes old: replaced', 61 * 60_000, 2],
  ])('at an open, a session %s', async (_, age, registrations) => {
    const w = world();
    const client = await launch(w);
    w.appState.emit('background');
    await client.idle();
    w.clock.advance(age);
    w.appState.emit('active');
    await client.idle();
    expect(w.server.registrations).toHaveLength(registrations);
    verifyToken(client.clientId()!, w.server.sessions[registrations - 1]);
    client.destroy();
  });

  it('a stored session older than an hour is replaced at launch', async () => {
    const w = world();
    (await launch(w)).destroy();
    w.clock.advance(HOUR + 1);
    (await launch(w)).destroy();
    expect(w.server.registrations).toHaveLength(2);
  });

  it('an expired session mints nothing; clientId() registers a new one in the background', async () => {
    const w = world();
    w.server.sessionExpiresIn = (2 * HOUR) / 1000;
    const client = await launch(w);
    w.clock.advance(2 * HOUR - 4 * 60_000);
    // Less than a token's five minutes left: none is minted from it.
    expect(client.clientId()).toBeNull();
    await client.idle();
    expect(w.server.registrations).toHaveLength(2);
    verifyToken(client.clientId()!, w.server.sessions[1]);
    client.destroy();
  });
});

describe('debug logging', () => {
  async function busyDay(debugLoggingEnabled: boolean) {
    const w = world();
    w.server.answer(
      '/v1/client/events',
      { status: 422, body: { type: 'invalid_request_token' } },
      'network_error',
      { status: 400, body: { type: 'bad_request' } },
    );
    const client = await launch(w, { debugLoggingEnabled, baseURLAllowList: ['https://api.example.com'] });
    const tokens = [client.clientId()!, await client.createRequestToken()];
    await client.secure('ab'.repeat(32));
    await client.identify('42');
    await client.identify('43');
    const seen: Record<string, string>[] = [];
    await client.wrapFetch(async (_url: string, init?: { headers?: unknown }) =>
      seen.push(init!.headers as Record<string, string>),
    )('https://api.example.com/login');
    tokens.push(seen[0]['X-Service-Client-Id']);
    w.appState.emit('background');
    await client.idle();
    client.destroy();
    return { w, tokens };
  }

  it('is off by default: nothing is logged', async () => {
    const { w } = await busyDay(false);
    expect(w.logs).toEqual([]);
  });

  it('when on, logs through the platform logger, never the session key, the session or a token', async () => {
    const { w, tokens } = await busyDay(true);
    expect(w.logs.length).toBeGreaterThan(5);
    const all = w.logs.join('\n');
    for (const s of w.server.sessions) {
      expect(all).not.toContain(s.key);
      expect(all).not.toContain(s.session);
      expect(all).not.toContain(s.session.split('.')[1]);
    }
    for (const t of tokens) expect(all).not.toContain(t.split('.').at(-1));
    expect(all).not.toContain('ab'.repeat(32));
  });
});

describe('the request-token wait', () => {
  it('a request waits at most TOKEN_WAIT_MS for a first session, then goes without the header', async () => {
    const w = world();
    w.server.answer('/v1/client/token', 'hold');
    const client = new RampartClient(w.platform);
    await client.configure({
      publishableKey: PK,
      baseUrl: BASE,
      baseURLAllowList: ['https://api.example.com'],
    });
    const sent: unknown[] = [];
    const api = client.wrapFetch(async (_url: string, init?: { headers?: unknown }) =>
      sent.push(init?.headers),
    );
    const pending = api('https://api.example.com/login');
    await new Promise((r) => setImmediate(r));
    expect(sent).toHaveLength(0);
    w.clock.advance(TOKEN_WAIT_MS);
    await pending;
    expect(sent).toEqual([undefined]);
    w.server.release();
    await client.idle();
    client.destroy();
  });
});
