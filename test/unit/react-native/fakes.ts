/**
 * An in-memory `Platform` for the React Native client core: storage, secure storage, an app
 * state the test moves by hand, scripted device info, a fake clock whose timers run only when
 * the test advances it, and a fake Rampart that records every request and answers as
 * docs/mobile.md says (or as the test scripts it: failures, held answers, error bodies).
 */
import { createHmac, randomBytes } from 'node:crypto';
import type { DeviceInfo, HttpRequest, HttpResponse, Platform } from '../../../src/react-native/platform';
import { RampartClient, type RampartConfig } from '../../../src/react-native/client';
import { FakeAppState, MemoryStorage } from '../../support/react-native';

export { FakeAppState, MemoryStorage };

export const T0 = Date.parse('2026-11-25T20:00:00.000Z');
export const BASE = 'https://rampart.example';
export const PK = 'pk_test_123';

export class FakeClock {
  private timers: { id: number; at: number; f: () => void }[] = [];
  private nextId = 1;
  constructor(public time = T0) {}
  now = (): number => this.time;
  setTimeout = (f: () => void, ms: number): number => {
    const id = this.nextId++;
    this.timers.push({ id, at: this.time + ms, f });
    return id;
  };
  clearTimeout = (h: unknown): void => {
    this.timers = this.timers.filter((t) => t.id !== h);
  };
  get pendingTimers(): number {
    return this.timers.length;
  }
  /** Moves time forward, running the timers that fall due, in order. */
  advance(ms: number): void {
    const end = this.time + ms;
    for (;;) {
      const due = this.timers.filter((t) => t.at <= end).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      this.timers = this.timers.filter((t) => t !== due);
      this.time = due.at;
      due.f();
    }
    this.time = end;
  }
}

export class FakeScreens {
  private listeners = new Set<(name: string) => void>();
  subscribe = (l: (name: string) => void): (() => void) => {
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  };
  emit(name: string): void {
    for (const l of this.listeners) l(name);
  }
}

export interface Recorded {
  url: string;
  path: string;
  headers: Record<string, string>;
  body: any;
}

type Answer = { status: number; body?: unknown; headers?: Record<string, string> } | 'network_error' | 'hold';

const response = (status: number, body: unknown, headers: Record<string, string> = {}): HttpResponse => ({
  status,
  headers: { get: (name: string) => headers[name] ?? headers[name.toLowerCase()] ?? null },
  text: async () => (body === undefined ? '' : JSON.stringify(body)),
});

/** A fake Rampart: sessions it issued (with their keys), and every request it received. */
export class FakeRampart {
  readonly requests: Recorded[] = [];
  readonly sessions: { session: string; key: string; serverTime: number }[] = [];
  /** Rampart's clock minus the device's. */
  offset = 0;
  sessionExpiresIn = 86_400;
  /** Scripted answers, by path, used in order before the default answer. */
  private readonly script = new Map<string, Answer[]>();
  private readonly held: {
    resolve: (r: HttpResponse) => void;
    reject: (e: Error) => void;
    path: string;
    answer: () => HttpResponse;
  }[] = [];
  down = false;

  constructor(private readonly clock: FakeClock) {}

  /** The next answers on `path` (`/v1/client/token` or `/v1/client/events`). */
  answer(path: string, ...answers: Answer[]): this {
    this.script.set(path, [...(this.script.get(path) ?? []), ...answers]);
    return this;
  }

  fetch = (url: string, init: HttpRequest): Promise<HttpResponse> => {
    const path = url.slice(BASE.length);
    const body = JSON.parse(init.body);
    this.requests.push({ url, path, headers: init.headers, body });
    const scripted = this.script.get(path)?.shift();
    if (this.down || scripted === 'network_error')
      return Promise.reject(new TypeError('Network request failed'));
    if (scripted === 'hold')
      return new Promise((resolve, reject) =>
        this.held.push({ resolve, reject, path, answer: () => this.defaultAnswer(path, body) }),
      );
    if (scripted) return Promise.resolve(response(scripted.status, scripted.body, scripted.headers));
    return Promise.resolve(this.defaultAnswer(path, body));
  };

  private defaultAnswer(path: string, body: any): HttpResponse {
    if (path === '/v1/client/token') return response(201, this.issue());
    if (path === '/v1/client/events') return response(202, { accepted: body.events.length });
    return response(404, { type: 'route_not_found' });
  }

  /** A registration answer, as docs/mobile.md shows it. */
  issue(): Record<string, unknown> {
    const serverTime = this.clock.now() + this.offset;
    const claims = Buffer.from(
      JSON.stringify({ sid: `s${this.sessions.length + 1}`, iat: serverTime }),
    ).toString('base64url');
    const session = `rps1.${claims}.${createHmac('sha256', 'server').update(claims).digest('base64url')}`;
    const key = randomBytes(32).toString('base64url');
    this.sessions.push({ session, key, serverTime });
    return {
      token: 'rpt1.browser-kind.mac',
      expires_in: 300,
      session,
      session_key: key,
      session_expires_in: this.sessionExpiresIn,
      server_time: serverTime,
    };
  }

  /** Answers the oldest held request normally (or fails it). */
  release(fail = false): void {
    const h = this.held.shift();
    if (!h) throw new Error('no held request');
    if (fail) h.reject(new TypeError('Network request failed'));
    else h.resolve(h.answer());
  }

  get heldCount(): number {
    return this.held.length;
  }

  on(path: string): Recorded[] {
    return this.requests.filter((r) => r.path === path);
  }
  get registrations(): Recorded[] {
    return this.on('/v1/client/token');
  }
  get eventPosts(): Recorded[] {
    return this.on('/v1/client/events');
  }
  /** Every event received, in order. */
  get events(): any[] {
    return this.eventPosts.flatMap((r) => r.body.events);
  }
}

export const DEVICE: DeviceInfo = {
  platform: 'android',
  osVersion: '14',
  model: 'Pixel 8',
  manufacturer: 'Google',
  app: { id: 'com.example.shop', name: 'Shop App', version: '3.2.1', build: '321' },
  locale: 'en-GB',
  timezone: 'Europe/London',
  timezoneOffset: 0,
  screen: { width: 1080, height: 2400, scale: 2.625 },
  vendorId: 'a1b2c3d4e5f60718',
  integrity: ['rooted'],
};

export interface World {
  clock: FakeClock;
  storage: MemoryStorage;
  secure: MemoryStorage;
  appState: FakeAppState;
  screens: FakeScreens;
  server: FakeRampart;
  logs: string[];
  /** Configuration warnings (logger.warn). */
  warnings: string[];
  device: DeviceInfo;
  platform: Platform;
}

/** A device: storage and clock outlive clients built over it (a restart is a new client over the same world). */
export function world(device: Partial<DeviceInfo> = {}): World {
  const clock = new FakeClock();
  const w: World = {
    clock,
    storage: new MemoryStorage(),
    secure: new MemoryStorage(),
    appState: new FakeAppState(),
    screens: new FakeScreens(),
    server: new FakeRampart(clock),
    logs: [],
    warnings: [],
    device: { ...DEVICE, ...device },
    platform: undefined as unknown as Platform,
  };
  w.platform = {
    storage: w.storage,
    secureStorage: w.secure,
    appState: w.appState,
    screens: w.screens,
    deviceInfo: async () => w.device,
    fetch: (url, init) => w.server.fetch(url, init),
    clock,
    randomBytes: (n) => new Uint8Array(randomBytes(n)),
    logger: { debug: (m) => w.logs.push(m), warn: (m) => w.warnings.push(m) },
  };
  return w;
}

/** A configured client over `w`, settled (registration and first flush done). */
export async function launch(w: World, config: Partial<RampartConfig> = {}): Promise<RampartClient> {
  const client = new RampartClient(w.platform);
  await client.configure({ publishableKey: PK, baseUrl: BASE, ...config });
  await client.idle();
  return client;
}

/** Types of the events Rampart received. */
export const types = (events: any[]): string[] =>
  events.map((e) => (e.type === 'screen' ? `screen:${e.name}` : e.type));

/** Checks a minted token against the session it came from, independently (node:crypto). */
export function verifyToken(
  token: string,
  session: { session: string; key: string },
): { t: number; nonce: string } {
  const parts = token.split('.');
  if (parts.length !== 6 || parts[0] !== 'rpm1') throw new Error(`not an rpm1 token: ${parts.length} parts`);
  const [, claims, smac, t, nonce, mac] = parts;
  if (`rps1.${claims}.${smac}` !== session.session) throw new Error('the token carries another session');
  if (!/^[A-Za-z0-9_-]{16,32}$/.test(nonce)) throw new Error('bad nonce');
  if (!/^\d+$/.test(t)) throw new Error('bad t');
  const signed = token.slice(0, token.lastIndexOf('.'));
  const expected = createHmac('sha256', Buffer.from(session.key, 'utf8')).update(signed).digest('base64url');
  if (mac !== expected) throw new Error('bad MAC');
  return { t: Number(t), nonce };
}
