/**
 * clients/test-vectors/queue.json: when the event queue flushes and what each accepted batch
 * holds, computed by running the reference implementation (the React Native client core,
 * src/react-native/client.ts, over its in-memory platform) through each scenario. The rules are
 * the client libraries' (docs/clients.md); the server only bounds a batch (100 events).
 *
 * Each scenario is a list of steps; the library is idle between steps (every upload a step
 * started has been answered). An `expect` step holds the batches the server accepted since the
 * previous `expect`, in order, each with its events as sent without their timestamps, and the
 * queue's size then.
 */
import { createHmac } from 'node:crypto';
import { RampartClient, type RampartConfig } from '../../../src/react-native/client';
import { BASE, PK, world, type World } from '../../unit/react-native/fakes';

export const APP = { version: '3.2.1', build: '321' };

export type Step =
  | { op: 'launch'; installed: { version: string; build: string } | null; foreground: boolean }
  | { op: 'screen'; name: string; repeat?: number }
  | { op: 'custom'; name: string; properties?: Record<string, string | number | boolean> }
  | { op: 'identify'; user_id: string }
  | { op: 'user_jwt'; jwt: string }
  | { op: 'request'; url: string }
  | { op: 'reset' }
  | { op: 'background' }
  | { op: 'foreground' }
  | { op: 'flush' }
  | { op: 'server'; accepting: boolean }
  | { op: 'expect'; batches?: WireEvent[][]; queue_size?: number };

export type WireEvent = Record<string, unknown>;

export interface Scenario {
  name: string;
  options: { flushLimit?: number; maxQueueLimit?: number; baseURLAllowList?: string[] };
  steps: Step[];
}

/** `{i}` in a repeated step's name is its 1-based index. */
const expand = (name: string, i: number) => name.replace('{i}', String(i));

/** Runs a scenario on the React Native client and answers its steps with every `expect` filled in from what happened. */
export async function runQueueScenario(sc: Scenario): Promise<Step[]> {
  const w: World = world({
    app: { id: 'com.example.shop', name: 'Shop App', version: APP.version, build: APP.build },
  });
  let accepted: WireEvent[][] = [];
  const fetch = w.platform.fetch;
  w.platform.fetch = async (url, init) => {
    const res = await fetch(url, init);
    if (url.endsWith('/v1/client/events') && res.status === 202) {
      accepted.push((JSON.parse(init.body).events as WireEvent[]).map(({ timestamp: _t, ...e }) => e));
    }
    return res;
  };
  let client: RampartClient | null = null;
  const c = () => {
    if (!client) throw new Error(`${sc.name}: a step before launch`);
    return client;
  };
  const out: Step[] = [];
  try {
    for (const step of sc.steps) {
      switch (step.op) {
        case 'launch': {
          if (step.installed) w.storage.data.set('rampart.app', JSON.stringify(step.installed));
          w.appState.state = step.foreground ? 'active' : 'background';
          client = new RampartClient(w.platform);
          const config: RampartConfig = { publishableKey: PK, baseUrl: BASE, ...sc.options };
          await client.configure(config);
          break;
        }
        case 'screen':
          for (let i = 1; i <= (step.repeat ?? 1); i++) {
            await c().screen(expand(step.name, i));
            await c().idle();
          }
          break;
        case 'custom':
          await c().custom(step.name, step.properties);
          break;
        case 'identify':
          await c().identify(step.user_id);
          break;
        case 'user_jwt':
          await c().userJwt(step.jwt);
          break;
        case 'request':
          await c().wrapFetch(async (_input: unknown, _init?: unknown) => 'answered')(step.url);
          break;
        case 'reset':
          await c().reset();
          break;
        case 'background':
          w.appState.emit('background');
          break;
        case 'foreground':
          w.appState.emit('active');
          break;
        case 'flush':
          await c().flush();
          break;
        case 'server':
          w.server.down = !step.accepting;
          break;
        case 'expect':
          out.push({ op: 'expect', batches: accepted, queue_size: c().queueSize() });
          accepted = [];
          continue;
      }
      if (client) await client.idle();
      out.push(step);
    }
  } finally {
    client?.destroy();
  }
  return out;
}

const E = { op: 'expect' } as const;
const API = 'https://api.example.com/v1';
/** A signed-user JWT for user 42 (HS256 under the API secret `sk_vectors`; the client only reads its payload). */
export const USER_JWT = (() => {
  const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const signed = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64({ id: '42', email: 'user42@example.com' })}`;
  return `${signed}.${createHmac('sha256', 'sk_vectors').update(signed).digest('base64url')}`;
})();
const SAME: Step = { op: 'launch', installed: APP, foreground: true };

/** The scenarios (their `expect` steps are filled in by running them). */
export const SCENARIOS: Scenario[] = [
  {
    name: 'first launch: app_installed, then app_opened, in one batch',
    options: {},
    steps: [{ op: 'launch', installed: null, foreground: true }, E],
  },
  {
    name: 'launch of a new version: app_updated with the previous version, then app_opened',
    options: {},
    steps: [{ op: 'launch', installed: { version: '3.1.0', build: '310' }, foreground: true }, E],
  },
  { name: 'launch of the same version: app_opened', options: {}, steps: [SAME, E] },
  {
    name: 'launch in the background queues no open and flushes nothing until the app comes to the foreground',
    options: {},
    steps: [
      { op: 'launch', installed: APP, foreground: false },
      E,
      { op: 'screen', name: 'Push' },
      E,
      { op: 'foreground' },
      E,
    ],
  },
  {
    name: 'the queue flushes when it reaches the flush limit (20), not before',
    options: {},
    steps: [SAME, E, { op: 'screen', name: 'S{i}', repeat: 19 }, E, { op: 'screen', name: 'S20' }, E],
  },
  {
    name: 'a flush limit of 5',
    options: { flushLimit: 5 },
    steps: [SAME, E, { op: 'screen', name: 'S{i}', repeat: 12 }, E],
  },
  {
    name: 'going to the background queues app_closed and flushes; coming back queues app_opened and flushes',
    options: {},
    steps: [SAME, E, { op: 'screen', name: 'Home' }, E, { op: 'background' }, E, { op: 'foreground' }, E],
  },
  {
    name: 'identify flushes, and later events carry the user; reset flushes, then forgets the user',
    options: {},
    steps: [
      SAME,
      E,
      { op: 'screen', name: 'Login' },
      { op: 'identify', user_id: '42' },
      E,
      { op: 'screen', name: 'Home' },
      E,
      { op: 'reset' },
      E,
      { op: 'screen', name: 'Goodbye' },
      { op: 'flush' },
      E,
    ],
  },
  {
    name: 'custom events are queued with their name and properties, and flushed at the flush limit',
    options: { flushLimit: 3 },
    steps: [
      SAME,
      E,
      { op: 'custom', name: 'Added to cart', properties: { sku: 'A-1', qty: 2, gift: false } },
      { op: 'custom', name: 'Checkout' },
      E,
      { op: 'screen', name: 'Pay' },
      E,
    ],
  },
  {
    name: 'the signed-user form (userJwt): an identify carrying the JWT, flushed; later events carry the user it names',
    options: {},
    steps: [
      SAME,
      E,
      { op: 'user_jwt', jwt: USER_JWT },
      E,
      { op: 'screen', name: 'Home' },
      { op: 'flush' },
      E,
    ],
  },
  {
    name: 'an allow-listed request going out flushes; a request elsewhere does not',
    options: { baseURLAllowList: [API] },
    steps: [
      SAME,
      E,
      { op: 'screen', name: 'Login' },
      { op: 'request', url: 'https://cdn.example.com/logo.png' },
      E,
      { op: 'request', url: 'https://api.example.com/v10/login' },
      E,
      { op: 'request', url: `${API}/login` },
      E,
      { op: 'request', url: `${API}/login` },
      E,
    ],
  },
  {
    name: 'flush() sends what is queued',
    options: {},
    steps: [
      SAME,
      E,
      { op: 'screen', name: 'A' },
      { op: 'screen', name: 'B' },
      E,
      { op: 'flush' },
      E,
      { op: 'flush' },
      E,
    ],
  },
  {
    name: 'events stay queued while the server cannot be reached, and go at the next trigger',
    options: {},
    steps: [
      SAME,
      E,
      { op: 'server', accepting: false },
      { op: 'screen', name: 'Offline' },
      { op: 'background' },
      E,
      { op: 'server', accepting: true },
      { op: 'foreground' },
      E,
    ],
  },
  {
    name: 'at most 100 events a batch, oldest first, one batch after the other',
    options: {},
    steps: [
      SAME,
      E,
      { op: 'server', accepting: false },
      { op: 'screen', name: 'S{i}', repeat: 249 },
      E,
      { op: 'server', accepting: true },
      { op: 'flush' },
      E,
    ],
  },
  {
    name: 'the queue keeps at most maxQueueLimit events, dropping the oldest',
    options: { maxQueueLimit: 30 },
    steps: [
      SAME,
      E,
      { op: 'server', accepting: false },
      { op: 'screen', name: 'S{i}', repeat: 35 },
      E,
      { op: 'server', accepting: true },
      { op: 'flush' },
      E,
    ],
  },
  {
    name: 'the default queue limit is 1,000 events, dropping the oldest',
    options: {},
    steps: [
      { op: 'server', accepting: false },
      SAME,
      { op: 'screen', name: 'S{i}', repeat: 1005 },
      E,
      { op: 'server', accepting: true },
      { op: 'flush' },
      E,
    ],
  },
];

export async function queueVectors() {
  const scenarios = [];
  for (const sc of SCENARIOS) scenarios.push({ ...sc, steps: await runQueueScenario(sc) });
  return { app: APP, defaults: { flushLimit: 20, maxQueueLimit: 1000, eventsPerRequest: 100 }, scenarios };
}
