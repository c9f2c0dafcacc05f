/**
 * docs/decisions.md's ruling ("per-event fields are what to send, not a gate") over the whole event
 * catalog, through real HTTP on loopback against the real database. For every event on every
 * endpoint that takes it:
 *  - a complete body gets a verdict (201), or is applied and stored (track: 204);
 *  - a body without a recommended field still does, and the verdict (or the stored feedback)
 *    names the field in its `missing_fields` signal, which weighs nothing by itself;
 *  - only what makes the event impossible to process answers 422 naming the field (track: 204,
 *    and the payload goes to the debugger with that field): no user id on an event about a user,
 *    no identifier on a registration, no context, no device or user on device feedback.
 *
 * The expectations are written out here, not read from the catalog, so that a change to the
 * catalog has to change this table too; the last test checks the two cover the same events.
 */
import { EVENTS } from '../../src/core/events/catalog';
import type { Endpoint } from '../../src/core/model';
import { startTestApp, call, type TestApp } from '../support/app';
import { storedOf } from '../support/stored';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ grpc: false });
});
afterAll(async () => {
  await app?.close();
});

type VerdictEndpoint = Exclude<Endpoint, 'track'>;
/** [path removed from the complete body, field the answer names] */
type Gate = [string, string];
/** [paths removed from the complete body, recommended field named missing] */
type Recommended = [string[], string];

interface Row {
  event: string;
  endpoints: Endpoint[];
  gates?: Partial<Record<Endpoint, Gate[]>>;
  recommended?: Partial<Record<Endpoint, Recommended[]>>;
}

const VERDICT_AND_TRACK: Endpoint[] = ['risk', 'filter', 'track'];
const ALL: Endpoint[] = ['authenticate', ...VERDICT_AND_TRACK];
const DEVICE_OR_USER: Partial<Record<Endpoint, Gate[]>> = { track: [['user_id', 'device_token']] };

const TABLE: Row[] = [
  { event: '$login', endpoints: VERDICT_AND_TRACK },
  {
    event: '$login.attempted',
    endpoints: ALL,
    recommended: { authenticate: [[['properties.email', 'user_traits.email'], 'properties.email']] },
  },
  {
    event: '$login.succeeded',
    endpoints: ALL,
    gates: { authenticate: [['user_id', 'user_id']] },
    recommended: { authenticate: [[['user_traits.email', 'properties.email'], 'user_traits.email']] },
  },
  { event: '$login.failed', endpoints: VERDICT_AND_TRACK },
  { event: '$logout', endpoints: VERDICT_AND_TRACK },
  { event: '$logout.succeeded', endpoints: VERDICT_AND_TRACK },
  { event: '$registration', endpoints: VERDICT_AND_TRACK },
  {
    event: '$registration.attempted',
    endpoints: ALL,
    gates: { authenticate: [['user_traits.email|properties.email', 'user_traits.email']] },
  },
  { event: '$registration.succeeded', endpoints: VERDICT_AND_TRACK },
  { event: '$registration.failed', endpoints: VERDICT_AND_TRACK },
  { event: '$password_reset_request', endpoints: VERDICT_AND_TRACK },
  { event: '$password_reset_request.attempted', endpoints: VERDICT_AND_TRACK },
  {
    event: '$password_reset_request.succeeded',
    endpoints: ALL,
    recommended: {
      authenticate: [
        [['user_traits.email', 'user_traits.username', 'properties.email'], 'user_traits.email|username'],
        [['properties.email'], 'properties.email|username|phone'],
      ],
    },
  },
  {
    event: '$password_reset_request.failed',
    endpoints: VERDICT_AND_TRACK,
    recommended: { track: [[['properties.email'], 'properties.email|username|phone']] },
  },
  { event: '$password_reset.succeeded', endpoints: VERDICT_AND_TRACK, gates: DEVICE_OR_USER },
  { event: '$password_reset.failed', endpoints: VERDICT_AND_TRACK },
  { event: '$challenge.requested', endpoints: VERDICT_AND_TRACK, gates: DEVICE_OR_USER },
  { event: '$challenge.succeeded', endpoints: VERDICT_AND_TRACK, gates: DEVICE_OR_USER },
  { event: '$challenge.failed', endpoints: VERDICT_AND_TRACK, gates: DEVICE_OR_USER },
  { event: '$profile_update', endpoints: VERDICT_AND_TRACK },
  { event: '$profile_update.attempted', endpoints: VERDICT_AND_TRACK },
  { event: '$profile_update.succeeded', endpoints: VERDICT_AND_TRACK },
  { event: '$profile_update.failed', endpoints: VERDICT_AND_TRACK },
  { event: '$incident.mitigated', endpoints: ['track'], gates: DEVICE_OR_USER },
  { event: '$review.resolved', endpoints: ['track'] },
  { event: '$review.escalated', endpoints: ['track'], gates: DEVICE_OR_USER },
  {
    event: '$custom',
    endpoints: VERDICT_AND_TRACK,
    gates: { risk: [['name', 'name']], filter: [['name', 'name']], track: [['name', 'name']] },
  },
];

const UA =
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36';
let counter = 0;

/** A complete body for `event` on `endpoint`: a user, an e-mail, an identifier and a context of its own. */
function completeBody(endpoint: Endpoint, event: string): { body: Record<string, unknown>; user: string } {
  const n = ++counter;
  const user = `cat-${n}`;
  const email = `${user}@example.com`;
  // An address of its own per body: many accounts from one address within the hour is what the
  // engine's velocity evidence is for, and not what this test is about.
  const context = {
    ip: `81.2.69.${10 + (n % 200)}`,
    headers: { 'User-Agent': UA, Accept: 'text/html', 'Accept-Language': 'en-GB' },
  };
  const common = { event, name: 'gift_card', properties: { email, marker: user }, context };
  switch (endpoint) {
    case 'authenticate':
      return { user, body: { ...common, user_id: user, user_traits: { email, username: user } } };
    case 'risk':
      return { user, body: { ...common, user: { id: user, email } } };
    case 'filter':
      return { user, body: { ...common, user: { email }, params: { email } } };
    case 'track':
      return { user, body: { ...common, user_id: user } };
  }
}

/** A deep copy without the dotted paths (`a|b`: both). */
function without(body: Record<string, unknown>, paths: string[]): Record<string, unknown> {
  const copy = JSON.parse(JSON.stringify(body)) as Record<string, unknown>;
  for (const path of paths.flatMap((p) => p.split('|'))) {
    const parts = path.split('.');
    let cur: Record<string, unknown> | undefined = copy;
    for (const p of parts.slice(0, -1)) cur = cur?.[p] as Record<string, unknown> | undefined;
    if (cur) delete cur[parts[parts.length - 1] as string];
  }
  return copy;
}

interface Applied {
  signals: Record<string, Record<string, unknown>>;
}

/** Send a verdict body: it must get a verdict. */
async function verdict(endpoint: VerdictEndpoint, body: Record<string, unknown>): Promise<Applied> {
  const r = await call(app, 'POST', `/v1/${endpoint}`, body);
  expect({ status: r.status, body: r.body }).toMatchObject({ status: 201 });
  const action = endpoint === 'authenticate' ? r.body.action : r.body.policy.action;
  expect(['allow', 'challenge', 'deny']).toContain(action);
  expect(typeof r.body.risk).toBe('number');
  return { signals: r.body.signals };
}

/** The text by which a body's debugger entry is found (the debugger keeps the payload as sent). */
const marker = (user: string) => `"marker":"${user}"`;

/**
 * Send a track body: it must be applied and stored. (A payload refused by validation is never
 * stored as an event; the debugger may still note an event that changed nothing, such as
 * `$incident.mitigated` with no flagged device.)
 */
async function tracked(body: Record<string, unknown>, user: string): Promise<Applied> {
  expect((await call(app, 'POST', '/v1/track', body)).status).toBe(204);
  await app.built.services.track.drain(false);
  await app.built.state.flush();
  const events = await storedOf(app).eventsOfUser(app.env.id, user, 10);
  expect(events).toHaveLength(1);
  return { signals: events[0]?.signalDetails ?? {} };
}

/** Send a track body that cannot be processed: 204 all the same, and the debugger names the field. */
async function rejectedTrack(body: Record<string, unknown>, user: string): Promise<string[]> {
  expect((await call(app, 'POST', '/v1/track', body)).status).toBe(204);
  await app.built.services.track.drain(false);
  const entries = await storedOf(app).debugger(app.env.id, 1000);
  const entry = entries.find((e) => e.payload.includes(marker(user)));
  expect(entry).toBeDefined();
  return entry?.fields.map((f) => f.field) ?? [];
}

const cases = TABLE.flatMap((row) => row.endpoints.map((endpoint) => [row.event, endpoint, row] as const));

describe.each(cases)('%s on /v1/%s', (event, endpoint, row) => {
  it('a complete body is answered and names nothing missing', async () => {
    const { body, user } = completeBody(endpoint, event);
    const applied = endpoint === 'track' ? await tracked(body, user) : await verdict(endpoint, body);
    expect(applied.signals).not.toHaveProperty('missing_fields');
  });

  const recommended = row.recommended?.[endpoint] ?? [];
  if (recommended.length) {
    it.each(recommended)('without %j it is still answered, and names %s missing', async (paths, field) => {
      const { body, user } = completeBody(endpoint, event);
      const stripped = without(body, paths);
      const applied =
        endpoint === 'track' ? await tracked(stripped, user) : await verdict(endpoint, stripped);
      expect(applied.signals.missing_fields).toBeDefined();
      expect(String(applied.signals.missing_fields?.missing).split(', ')).toContain(field);
      // Less evidence, not evidence against: the signal weighs nothing.
      if (endpoint !== 'track') expect(applied.signals.missing_fields?.score).toBe(0);
    });
  }

  const gates = row.gates?.[endpoint] ?? [];
  if (gates.length) {
    it.each(gates)('without %s it cannot be processed: the answer names %s', async (path, field) => {
      const { body, user } = completeBody(endpoint, event);
      const stripped = without(body, [path]);
      if (endpoint === 'track') {
        expect(await rejectedTrack(stripped, user)).toContain(field);
      } else {
        const r = await call(app, 'POST', `/v1/${endpoint}`, stripped);
        expect(r.status).toBe(422);
        expect(r.body.type).toBe('invalid_parameters');
        expect(r.body.fields.map((f: { field: string }) => f.field)).toContain(field);
      }
    });
  }

  if (endpoint !== 'track') {
    it('without a context it cannot be processed: 422 names context', async () => {
      const r = await call(
        app,
        'POST',
        `/v1/${endpoint}`,
        without(completeBody(endpoint, event).body, ['context']),
      );
      expect(r.status).toBe(422);
      expect(r.body.fields.map((f: { field: string }) => f.field)).toContain('context');
    });
  }
});

describe('the forms Castle SDKs send without the recommended fields', () => {
  // The headers are those the rest of this environment sends: a Chrome without the language its
  // logins here always carry would be `missing_headers` (a challenge), which is not the point here.
  it('Go SDK AuthenticateSimple($login.succeeded, user-123): empty traits and properties get a verdict', async () => {
    const r = await call(app, 'POST', '/v1/authenticate', {
      event: '$login.succeeded',
      user_id: 'cat-go-user-123',
      context: {
        client_id: '',
        ip: '81.2.69.250',
        headers: { 'User-Agent': UA, Accept: 'text/html', 'Accept-Language': 'en-GB' },
      },
      properties: {},
      user_traits: {},
    });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({
      action: 'allow',
      user_id: 'cat-go-user-123',
      device_token: expect.any(String),
    });
    expect(r.body.signals.missing_fields).toEqual({ missing: 'user_traits.email', score: 0 });
  });

  it('a reset request naming no account at all is still scored', async () => {
    const r = await call(app, 'POST', '/v1/authenticate', {
      event: '$password_reset_request.succeeded',
      context: { ip: '81.2.69.251', headers: { 'User-Agent': UA } },
    });
    expect(r.status).toBe(201);
    expect(r.body.signals.missing_fields.missing).toBe(
      'user_traits.email|username, properties.email|username|phone',
    );
  });

  it('a missing field is no gate for a policy either: a policy can match missing_fields', async () => {
    const policy = await app.built.services.policies.create(app.env.id, {
      name: 'Challenge logins without an e-mail',
      group: 'event',
      action: 'challenge',
      conditions: { events: ['$login.succeeded'], signalsAny: ['missing_fields'] },
    });
    try {
      const ctx = {
        ip: '81.2.69.252',
        headers: { 'User-Agent': UA, Accept: 'text/html', 'Accept-Language': 'en-GB' },
      };
      const bare = await call(app, 'POST', '/v1/authenticate', {
        event: '$login.succeeded',
        user_id: 'cat-policy-1',
        user_traits: {},
        context: ctx,
      });
      expect(bare.body).toMatchObject({ action: 'challenge', policy: { id: policy.id } });
      const full = await call(app, 'POST', '/v1/authenticate', {
        event: '$login.succeeded',
        user_id: 'cat-policy-2',
        user_traits: { email: 'cat-policy-2@example.com' },
        context: ctx,
      });
      expect(full.body.policy.id).not.toBe(policy.id);
    } finally {
      await app.built.services.policies.archive(app.env.id, policy.id);
    }
  });
});

it('this table covers every event of the catalog, on exactly the endpoints it accepts', () => {
  const catalog = Object.fromEntries(EVENTS.map((e) => [e.name, [...e.endpoints].sort()]));
  const table = Object.fromEntries(TABLE.map((r) => [r.event, [...r.endpoints].sort()]));
  expect(table).toEqual(catalog);
});
