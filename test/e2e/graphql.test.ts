/**
 * The GraphQL door over real HTTP on loopback, against a real database: every query and
 * mutation, authentication and read-only analyst keys, tenant isolation through every field, the
 * limits, policy edits reaching the next REST and gRPC verdicts, and the round-trip count of a
 * dashboard page (no N+1).
 */
import http from 'node:http';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import {
  buildClientSchema,
  buildSchema,
  getIntrospectionQuery,
  parse,
  validate,
  type IntrospectionQuery,
} from 'graphql';
import type { AddressInfo } from 'node:net';
import type { CommandStartedEvent } from 'mongodb';
import { startTestApp, call, basic, type TestApp } from '../support/app';
import { waitFor } from '../support/wait';
import { createRampartClient } from '../../src/client';
import { typeDefs } from '../../src/graphql/generated/typedefs';
import { buildRestServer } from '../../src/rest/server';
import { registerGraphql } from '../../src/graphql/server';
import { createLogger } from '../../src/app/logger';
import type { EnvironmentService } from '../../src/core/environments';
import {
  BadRequest,
  DeadlineExceeded,
  Forbidden,
  InvalidParameters,
  InvalidRequestToken,
  NotFound,
  PayloadTooLarge,
  RateLimited,
  Unauthorized,
  Unavailable,
  type ErrorKind,
} from '../../src/core/errors';

let app: TestApp;
let recording: CommandStartedEvent[] | null = null;
let hook: {
  server: http.Server;
  url: string;
  received: { headers: http.IncomingHttpHeaders; body: string }[];
};

beforeAll(async () => {
  // Dashboard reads take turns (one at a time, each resting as long as it ran): on a busy machine
  // two hundred of them in one query wait longer than the default 10 s for their turn.
  app = await startTestApp({
    monitorCommands: (e) => recording?.push(e),
    webhooks: { pollMs: 200, backoffBaseMs: 50 },
    analystWaitMs: 600_000,
  });
  const received: { headers: http.IncomingHttpHeaders; body: string }[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      received.push({ headers: req.headers, body });
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  hook = { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, received };
});
afterAll(async () => {
  await app?.close();
  await new Promise((resolve) => hook?.server.close(resolve));
});

interface GqlResult {
  status: number;
  body: { data?: any; errors?: { message: string; path?: string[]; extensions?: Record<string, any> }[] };
}

/** POST a GraphQL operation with the sandbox secret (or another credential, or none). */
async function gql(
  query: string,
  variables: Record<string, unknown> = {},
  opts: { secret?: string | null; raw?: string; headers?: Record<string, string> } = {},
): Promise<GqlResult> {
  const headers: Record<string, string> = { 'content-type': 'application/json', ...opts.headers };
  const secret = opts.secret === undefined ? app.secret : opts.secret;
  if (secret !== null) headers.authorization = basic(secret);
  const res = await fetch(`${app.baseUrl}/graphql`, {
    method: 'POST',
    headers,
    body: opts.raw ?? JSON.stringify({ query, variables }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : {} };
}

/** The data of a successful operation; fails the test with the errors otherwise. */
async function data(query: string, variables: Record<string, unknown> = {}, secret?: string): Promise<any> {
  const r = await gql(query, variables, { secret });
  if (r.body.errors?.length) throw new Error(`GraphQL errors: ${JSON.stringify(r.body.errors)}`);
  expect(r.status).toBe(200);
  return r.body.data;
}

const codes = (r: GqlResult) => (r.body.errors ?? []).map((e) => e.extensions?.code);

const UA =
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36';
const ctx = (ip: string) => ({
  ip,
  headers: { 'User-Agent': UA, Accept: 'text/html', 'Accept-Language': 'en-GB' },
});
const IP_SHARED = '81.2.69.142';

async function risk(
  secret: string,
  userId: string,
  token: string,
  opts: { ip?: string; event?: string; email?: string } = {},
) {
  const r = await call({ baseUrl: app.baseUrl, secret }, 'POST', '/v1/risk', {
    event: opts.event ?? '$login',
    user: { id: userId, email: opts.email ?? `${userId}@example.com` },
    request_token: token,
    context: ctx(opts.ip ?? IP_SHARED),
  });
  expect(r.status).toBe(201);
  return r.body as {
    risk: number;
    policy: { id: string; revision: string; name: string; action: string };
    signals: Record<string, unknown>;
    device: { token: string };
  };
}

/** Wait until every accepted event is written (verdict events are batched, track is queued). */
async function settle(): Promise<void> {
  await app.built.services.track.drain(false);
  await app.built.state.flush();
}

/** What `read()` answers once `ok` holds of it; fails after `ms`, naming `what`. */
async function eventually<T>(
  read: () => Promise<T>,
  ok: (v: T) => boolean,
  what: string,
  ms = 5000,
): Promise<T> {
  let last: T | undefined;
  await waitFor(async () => ok((last = await read())), { what, timeoutMs: ms, intervalMs: 50 });
  return last as T;
}

// Data of the sandbox environment (A), seeded once.
const A = { alice: 'gq-alice', bob: 'gq-bob', carol: 'gq-carol', purge: 'gq-purge' };
const seeded: { aliceDevices: string[]; bobDevice: string; carolDevice: string } = {
  aliceDevices: [],
  bobDevice: '',
  carolDevice: '',
};

beforeAll(async () => {
  seeded.aliceDevices.push((await risk(app.secret, A.alice, 'fp-gq-alice-1')).device.token);
  seeded.aliceDevices.push((await risk(app.secret, A.alice, 'fp-gq-alice-2')).device.token);
  await risk(app.secret, A.alice, 'fp-gq-alice-1');
  seeded.bobDevice = (await risk(app.secret, A.bob, 'fp-gq-bob-1')).device.token;
  seeded.carolDevice = (await risk(app.secret, A.carol, 'fp-gq-carol-1', { ip: '8.8.8.8' })).device.token;
  await risk(app.secret, A.purge, 'fp-gq-purge-1');
  await call(app, 'POST', '/v1/track', { event: '$login.failed', user_id: A.bob, context: ctx(IP_SHARED) });
  await call(app, 'POST', '/v1/track', { event: 42, user_id: 'gq-malformed' });
  await settle();
});

describe('authentication', () => {
  it('refuses a request without credentials with 401 UNAUTHENTICATED', async () => {
    const r = await gql('{ environment { id } }', {}, { secret: null });
    expect(r.status).toBe(401);
    expect(codes(r)).toEqual(['UNAUTHENTICATED']);
    expect(r.body.data).toBeUndefined();
  });

  it('refuses a wrong secret with 401, and a disabled environment with 403 FORBIDDEN', async () => {
    const wrong = await gql('{ environment { id } }', {}, { secret: 'sk_wrong' });
    expect(wrong.status).toBe(401);
    expect(codes(wrong)).toEqual(['UNAUTHENTICATED']);
    const off = await app.newEnvironment('gq-disabled');
    await app.built.services.environments.setEnabled(off.env.id, false);
    const r = await gql('{ environment { id } }', {}, { secret: off.secret });
    expect(r.status).toBe(403);
    expect(codes(r)).toEqual(['FORBIDDEN']);
    // The rule that refused, as REST's 403 body and gRPC's `rampart-reason` trailer name it.
    expect(r.body.errors?.[0]?.extensions?.reason).toBe('environment_disabled');
    expect(wrong.body.errors?.[0]?.extensions).not.toHaveProperty('reason');
  });

  it('accepts the API secret as Bearer too, and tells the viewer what it may do', async () => {
    const r = await gql(
      '{ viewer { credentialKind canMutate environment { name sandbox enabled publishableKey createdAt } } }',
      {},
      { secret: null, headers: { authorization: `Bearer ${app.secret}` } },
    );
    expect(r.status).toBe(200);
    expect(r.body.data.viewer).toMatchObject({
      credentialKind: 'SECRET',
      canMutate: true,
      environment: { name: 'sandbox', sandbox: true, enabled: true },
    });
    expect(r.body.data.viewer.environment.publishableKey).toMatch(/^pk_/);
  });

  it('answers a body that is not JSON with 400 BAD_REQUEST, and refuses batches and GET', async () => {
    const bad = await gql('', {}, { raw: '{"query": ' });
    expect(bad.status).toBe(400);
    expect(codes(bad)).toEqual(['BAD_REQUEST']);
    const batch = await gql(
      '',
      {},
      { raw: JSON.stringify([{ query: '{ viewer { canMutate } }' }, { query: '{ viewer { canMutate } }' }]) },
    );
    expect(batch.status).toBe(400);
    const get = await fetch(
      `${app.baseUrl}/graphql?query=${encodeURIComponent('{ viewer { canMutate } }')}`,
      { headers: { authorization: basic(app.secret) } },
    );
    expect(get.status).toBe(404);
  });

  it('serves no landing page', async () => {
    const res = await fetch(`${app.baseUrl}/graphql`, {
      method: 'POST',
      headers: { accept: 'text/html', authorization: basic(app.secret) },
    });
    expect(res.headers.get('content-type') ?? '').not.toContain('text/html');
  });
});

describe('analyst keys', () => {
  let analyst: string;
  beforeAll(async () => {
    analyst = (await app.built.services.environments.addCredential(app.env.id, 'analyst', 'gq analyst'))
      .secret;
  });

  it('can query', async () => {
    const d = await data(
      '{ viewer { credentialKind canMutate } policies { id } user(id: "gq-alice") { id } }',
      {},
      analyst,
    );
    expect(d.viewer).toEqual({ credentialKind: 'ANALYST', canMutate: false });
    expect(d.policies.length).toBeGreaterThan(0);
    expect(d.user.id).toBe(A.alice);
  });

  it('cannot call any mutation: 403 FORBIDDEN before anything runs', async () => {
    const before = await data(
      '{ policies(includeArchived: true) { id revision } environment { webhookUrl } device(token: "' +
        seeded.bobDevice +
        '") { reviewState } }',
    );
    const mutations = [
      'mutation { createPolicy(input: { name: "x", group: EVENT, action: DENY }) { id } }',
      `mutation { updatePolicy(id: "${before.policies[0].id}", input: { name: "renamed" }) { id } }`,
      `mutation { archivePolicy(id: "${before.policies[0].id}") { id } }`,
      'mutation { reorderPolicies(group: EVENT, ids: []) { id } }',
      `mutation { approveDevice(token: "${seeded.bobDevice}") { token } }`,
      `mutation { reportDevice(token: "${seeded.bobDevice}") { token } }`,
      'mutation { setWebhookUrl(url: "https://example.com/hook") { id } }',
      'mutation { sendTestWebhook { id } }',
      `mutation { requestPrivacyExport(userId: "${A.bob}") { id } }`,
      `mutation { purgeUser(userId: "${A.bob}") { total } }`,
      `mutation { rollbackPolicy(id: "${before.policies[0].id}", revision: "${before.policies[0].revision}") { id } }`,
    ];
    for (const m of mutations) {
      const r = await gql(m, {}, { secret: analyst });
      expect(r.status).toBe(403);
      expect(codes(r)).toEqual(['FORBIDDEN']);
      expect(r.body.errors?.[0]?.message).toMatch(/read-only/);
      expect(r.body.errors?.[0]?.extensions?.reason).toBe('read_only_key');
      expect(r.body.data).toBeUndefined();
    }
    expect(
      await data(
        '{ policies(includeArchived: true) { id revision } environment { webhookUrl } device(token: "' +
          seeded.bobDevice +
          '") { reviewState } }',
      ),
    ).toEqual(before);
  });

  it('is refused by the REST API', async () => {
    const r = await call({ baseUrl: app.baseUrl, secret: analyst }, 'GET', `/v1/devices/${seeded.bobDevice}`);
    expect(r.status).toBe(401);
  });
});

describe('queries', () => {
  it('environment', async () => {
    const d = await data(
      '{ environment { id name enabled sandbox publishableKey webhookUrl privacyEmail createdAt } }',
    );
    expect(d.environment).toMatchObject({ id: app.env.id, name: 'sandbox', enabled: true, sandbox: true });
    expect(new Date(d.environment.createdAt).toISOString()).toBe(d.environment.createdAt);
  });

  it("user(id): profile, devices, events and risk summary (review a user's devices)", async () => {
    const d = await data(
      `query Review($id: ID!) {
        user(id: $id) {
          id email countries lastSeenAt lastLocation { country at } traits
          devices { token reviewState risk lastSeenAt type identity ip location { countryCode country city } userAgent { browser os raw } properties
                    events(first: 2) { id name action } }
          events(first: 2) { edges { cursor node { id name action deviceToken } } pageInfo { hasNextPage endCursor } }
          riskSummary { deviceCount approvedDevices reportedDevices unreviewedDevices highestDeviceRisk level eventCount actions { action count } topSignals { signal count } }
        }
      }`,
      { id: A.alice },
    );
    const u = d.user;
    expect(u).toMatchObject({ id: A.alice, email: `${A.alice}@example.com` });
    expect(u.devices.map((x: { token: string }) => x.token).sort()).toEqual([...seeded.aliceDevices].sort());
    for (const dev of u.devices) {
      expect(dev).toMatchObject({
        reviewState: 'UNREVIEWED',
        type: 'DESKTOP',
        identity: 'FINGERPRINT',
        ip: IP_SHARED,
      });
      expect(dev.userAgent.browser).toBe('Chrome');
      expect(dev.events.length).toBeGreaterThan(0);
    }
    expect(u.events.edges).toHaveLength(2);
    expect(u.events.pageInfo).toEqual({ hasNextPage: true, endCursor: u.events.edges[1].cursor });
    const next = await data(
      'query($id: ID!, $after: String) { user(id: $id) { events(first: 2, after: $after) { edges { node { id } } pageInfo { hasNextPage } } } }',
      { id: A.alice, after: u.events.pageInfo.endCursor },
    );
    expect(next.user.events.edges).toHaveLength(1);
    expect(next.user.events.pageInfo.hasNextPage).toBe(false);
    expect(u.riskSummary).toMatchObject({
      deviceCount: 2,
      unreviewedDevices: 2,
      approvedDevices: 0,
      reportedDevices: 0,
      eventCount: 3,
    });
    expect(u.riskSummary.actions.reduce((n: number, a: { count: number }) => n + a.count, 0)).toBe(3);
    expect(u.riskSummary.topSignals.map((s: { signal: string }) => s.signal)).toContain('new_device');
    expect(await data('{ user(id: "nobody-here") { id } }')).toEqual({ user: null });
  });

  it('device(token), and devices(filter) with cursor pagination', async () => {
    const one = await data(
      `{ device(token: "${seeded.bobDevice}") { token userId user { id email } createdAt risk lastEventRisk approvedAt escalatedAt mitigatedAt removedAt } }`,
    );
    expect(one.device).toMatchObject({
      token: seeded.bobDevice,
      userId: A.bob,
      user: { id: A.bob, email: `${A.bob}@example.com` },
      approvedAt: null,
    });
    expect(await data('{ device(token: "no-such-device") { token } }')).toEqual({ device: null });

    const byUser = await data(`{ devices(filter: { userId: "${A.alice}" }) { edges { node { token } } } }`);
    expect(byUser.devices.edges).toHaveLength(2);
    const all: string[] = [];
    let after: string | null = null;
    for (let i = 0; i < 10; i++) {
      const page: any = await data(
        'query($after: String) { devices(first: 2, after: $after) { edges { cursor node { token lastSeenAt } } pageInfo { hasNextPage endCursor hasPreviousPage startCursor } } }',
        { after },
      );
      all.push(...page.devices.edges.map((e: { node: { token: string } }) => e.node.token));
      if (!page.devices.pageInfo.hasNextPage) break;
      after = page.devices.pageInfo.endCursor;
    }
    expect(new Set(all).size).toBe(all.length);
    expect(all).toEqual(
      expect.arrayContaining([...seeded.aliceDevices, seeded.bobDevice, seeded.carolDevice]),
    );
    const country = (await data(`{ device(token: "${seeded.carolDevice}") { location { countryCode } } }`))
      .device.location?.countryCode;
    if (country) {
      const byCountry = await data(
        `{ devices(filter: { country: "${country}" }) { edges { node { token } } } }`,
      );
      expect(byCountry.devices.edges.map((e: { node: { token: string } }) => e.node.token)).toContain(
        seeded.carolDevice,
      );
    }
    const unreviewed = await data(
      '{ devices(filter: { reviewState: UNREVIEWED, minRisk: 0, maxRisk: 100, lastSeenFrom: "2000-01-01T00:00:00Z" }, first: 100) { edges { node { token } } } }',
    );
    expect(unreviewed.devices.edges.length).toBeGreaterThanOrEqual(5);
    const future = await data(
      '{ devices(filter: { lastSeenFrom: "2999-01-01T00:00:00Z" }) { edges { node { token } } pageInfo { hasNextPage startCursor endCursor } } }',
    );
    expect(future.devices).toEqual({
      edges: [],
      pageInfo: { hasNextPage: false, startCursor: null, endCursor: null },
    });
  });

  it('events(filter) by name, action, signal, user, device, IP, ASN, country and time, with pagination', async () => {
    const all = await data(
      '{ events(first: 100) { edges { node { id name endpoint userId deviceToken ip country asn action risk riskLevel signals { name details } occurredAt receivedAt userAgent headers userTraits properties email } } } }',
    );
    const nodes = all.events.edges.map((e: { node: any }) => e.node);
    expect(nodes.length).toBeGreaterThanOrEqual(7);
    const carol = nodes.find((n: any) => n.userId === A.carol);
    expect(carol).toMatchObject({
      name: '$login',
      endpoint: 'RISK',
      ip: '8.8.8.8',
      deviceToken: seeded.carolDevice,
    });
    expect(carol.headers['user-agent']).toBe(UA);
    const tracked = nodes.find((n: any) => n.name === '$login.failed');
    expect(tracked).toMatchObject({
      endpoint: 'TRACK',
      action: null,
      risk: null,
      riskLevel: null,
      userId: A.bob,
    });

    const ids = async (filter: Record<string, unknown>) =>
      (
        await data('query($f: EventFilter) { events(filter: $f, first: 100) { edges { node { id } } } }', {
          f: filter,
        })
      ).events.edges
        .map((e: { node: { id: string } }) => e.node.id)
        .sort();
    const expectIds = (pred: (n: any) => boolean) =>
      nodes
        .filter(pred)
        .map((n: any) => n.id)
        .sort();
    expect(await ids({ userId: A.alice })).toEqual(expectIds((n) => n.userId === A.alice));
    expect(await ids({ deviceToken: seeded.bobDevice })).toEqual(
      expectIds((n) => n.deviceToken === seeded.bobDevice),
    );
    expect(await ids({ ip: '8.8.8.8' })).toEqual(expectIds((n) => n.ip === '8.8.8.8'));
    expect(await ids({ name: '$login.failed' })).toEqual(expectIds((n) => n.name === '$login.failed'));
    expect(await ids({ action: 'ALLOW' })).toEqual(expectIds((n) => n.action === 'ALLOW'));
    expect(await ids({ signal: 'new_device' })).toEqual(
      expectIds((n) => n.signals.some((s: { name: string }) => s.name === 'new_device')),
    );
    if (carol.country)
      expect(await ids({ country: carol.country })).toEqual(expectIds((n) => n.country === carol.country));
    if (carol.asn !== null)
      expect(await ids({ asn: carol.asn })).toEqual(expectIds((n) => n.asn === carol.asn));
    expect(await ids({ from: '2999-01-01T00:00:00Z' })).toEqual([]);
    expect(await ids({ to: '2000-01-01T00:00:00Z' })).toEqual([]);
    expect(await ids({ from: '2000-01-01T00:00:00Z', to: '2999-01-01T00:00:00Z' })).toEqual(
      expectIds(() => true),
    );

    const p1 = await data(
      '{ events(first: 3) { edges { node { id } } pageInfo { hasNextPage endCursor } } }',
    );
    const p2 = await data('query($a: String) { events(first: 3, after: $a) { edges { node { id } } } }', {
      a: p1.events.pageInfo.endCursor,
    });
    expect(p1.events.pageInfo.hasNextPage).toBe(true);
    expect(p2.events.edges.map((e: any) => e.node.id)).toEqual(nodes.slice(3, 6).map((n: any) => n.id));

    const one = await data(
      `{ event(id: "${carol.id}") { id device { token } user { id } policy { id revision name action revisionDetails { id policyId } current { id name } } } }`,
    );
    expect(one.event).toMatchObject({
      id: carol.id,
      device: { token: seeded.carolDevice },
      user: { id: A.carol },
    });
    expect(one.event.policy.revisionDetails).toMatchObject({
      id: one.event.policy.revision,
      policyId: one.event.policy.id,
    });
    expect(await data('{ event(id: "no-such-event") { id } }')).toEqual({ event: null });
  });

  it('rejects bad filters and cursors with BAD_USER_INPUT naming the field', async () => {
    const r = await gql(
      '{ events(filter: { country: "gb", from: "2024-02-01T00:00:00Z", to: "2024-01-01T00:00:00Z" }) { edges { cursor } } }',
    );
    expect(r.status).toBe(200);
    expect(codes(r)).toEqual(['BAD_USER_INPUT']);
    expect(r.body.errors?.[0]?.extensions?.fields.map((f: { field: string }) => f.field).sort()).toEqual([
      'filter.country',
      'filter.to',
    ]);
    const c = await gql('{ devices(after: "bm90LWEtY3Vyc29y") { edges { cursor } } }');
    expect(codes(c)).toEqual(['BAD_USER_INPUT']);
    const ev = (await data('{ events(first: 1) { pageInfo { endCursor } } }')).events.pageInfo.endCursor;
    expect(codes(await gql(`{ devices(after: "${ev}") { edges { cursor } } }`))).toEqual(['BAD_USER_INPUT']);
    const t = await gql('{ events(filter: { from: "yesterday" }) { edges { cursor } } }');
    expect(t.status).toBe(400);
    expect(codes(t)).toEqual(['GRAPHQL_VALIDATION_FAILED']);
  });

  it('analytics: totals, actions, signals, time series and top IPs, ASNs, countries, devices and users', async () => {
    const d = await data(
      `query($from: DateTime) {
      analytics(filter: { from: $from }) {
        total
        actions { action count }
        signals(first: 5) { signal count }
        timeSeries(bucket: DAY) { bucket from to scanned truncated buckets { start end total actions { action count } signals { signal count } } }
        ips: top(dimension: IP) { dimension distinct entries { key count } }
        asns: top(dimension: ASN) { distinct entries { key count } }
        countries: top(dimension: COUNTRY) { distinct entries { key count } }
        devices: top(dimension: DEVICE, first: 2) { distinct entries { key count device { token userId } } }
        users: top(dimension: USER) { distinct entries { key count user { id } } }
      }
    }`,
      { from: new Date(Date.now() - 2 * 86_400_000).toISOString() },
    );
    const a = d.analytics;
    const events = (
      await data('{ events(first: 100) { edges { node { ip action userId deviceToken } } } }')
    ).events.edges.map((e: any) => e.node);
    expect(a.total).toBe(events.length);
    expect(a.actions.reduce((n: number, x: { count: number }) => n + x.count, 0)).toBe(events.length);
    expect(a.actions).toContainEqual({
      action: null,
      count: events.filter((e: any) => e.action === null).length,
    });
    expect(a.signals.length).toBeGreaterThan(0);
    expect(a.signals[0].count).toBeGreaterThanOrEqual(a.signals[a.signals.length - 1].count);
    expect(a.ips.dimension).toBe('IP');
    expect(a.ips.entries[0]).toEqual({
      key: IP_SHARED,
      count: events.filter((e: any) => e.ip === IP_SHARED).length,
    });
    expect(a.ips.distinct).toBe(new Set(events.map((e: any) => e.ip).filter(Boolean)).size);
    expect(a.devices.entries).toHaveLength(2);
    expect(a.devices.entries[0].device.token).toBe(a.devices.entries[0].key);
    expect(a.users.entries.map((e: any) => e.user?.id)).toEqual(a.users.entries.map((e: any) => e.key));
    expect(a.timeSeries.bucket).toBe('DAY');
    expect(a.timeSeries.truncated).toBe(false);
    expect(a.timeSeries.scanned).toBe(events.length);
    expect(a.timeSeries.buckets.reduce((n: number, b: { total: number }) => n + b.total, 0)).toBe(
      events.length,
    );
    expect(a.timeSeries.buckets[0].start).toBe(a.timeSeries.from);

    const hourly = await data('{ analytics { timeSeries { bucket buckets { start total } } } }');
    expect(hourly.analytics.timeSeries.bucket).toBe('HOUR');
    expect(hourly.analytics.timeSeries.buckets.length).toBeGreaterThanOrEqual(24);
    const tooMany = await gql(
      '{ analytics(filter: { from: "2000-01-01T00:00:00Z" }) { timeSeries(bucket: MINUTE) { scanned } } }',
    );
    expect(codes(tooMany)).toEqual(['BAD_USER_INPUT']);
  });

  it('find every account that an IP touched', async () => {
    const d = await data(
      `query IpAccounts($ip: String!) {
      analytics(filter: { ip: $ip }) {
        top(dimension: USER, first: 100) { distinct entries { key count user { id email lastSeenAt riskSummary { level } } } }
      }
    }`,
      { ip: IP_SHARED },
    );
    const users = d.analytics.top.entries.map((e: any) => e.key).sort();
    expect(users).toEqual([A.alice, A.bob, A.purge].sort());
    expect(d.analytics.top.distinct).toBe(3);
  });

  it('policies with every revision', async () => {
    const d = await data(
      '{ policies { id revision name group position action archived catchAll createdAt updatedAt conditions { events riskLevels minRisk maxRisk signalsAny signalsAll countries deviceStates } revisions { id policyId name group action archived createdAt conditions { events } } } }',
    );
    expect(d.policies.map((p: any) => p.group)).toEqual([
      'BEFORE',
      'EVENT',
      'EVENT',
      'EVENT',
      'EVENT',
      'EVENT',
      'EVENT',
      'EVENT',
      'EVENT',
      'AFTER',
    ]);
    expect(d.policies[0]).toMatchObject({
      name: 'Deny reported devices',
      action: 'DENY',
      conditions: { deviceStates: ['REPORTED'], events: null },
    });
    expect(d.policies[d.policies.length - 1]).toMatchObject({ catchAll: true, action: 'ALLOW' });
    for (const p of d.policies) expect(p.revisions.map((r: any) => r.id)).toContain(p.revision);
    const one = await data(`{ policy(id: "${d.policies[1].id}") { id name } }`);
    expect(one.policy).toEqual({ id: d.policies[1].id, name: d.policies[1].name });
    expect(await data('{ policy(id: "no-such-policy") { id } }')).toEqual({ policy: null });
  });

  it('the debugger lists rejected payloads with their reasons', async () => {
    const d = await eventually(
      () =>
        data(
          '{ rejectedPayloads(first: 10) { edges { cursor node { id endpoint reason fields { field message } payload userId receivedAt } } pageInfo { hasNextPage } } }',
        ),
      (x) => x.rejectedPayloads.edges.length > 0,
      'a rejected payload in the debugger',
    );
    const entry = d.rejectedPayloads.edges[0].node;
    expect(entry).toMatchObject({ endpoint: 'TRACK', userId: 'gq-malformed' });
    expect(entry.reason.length).toBeGreaterThan(0);
    expect(entry.payload).toContain('gq-malformed');
    const byUser = await data(
      '{ rejectedPayloads(filter: { userId: "gq-malformed", from: "2000-01-01T00:00:00Z" }) { edges { node { id } } } }',
    );
    expect(byUser.rejectedPayloads.edges.map((e: any) => e.node.id)).toEqual([entry.id]);
  });
});

describe('mutations', () => {
  it('create, update (a new revision), reorder and archive a policy (edit a policy)', async () => {
    const created = await data(
      `mutation { createPolicy(input: { name: "Challenge proxies", group: EVENT, action: CHALLENGE, conditions: { signalsAny: ["proxy_ip"], minRisk: 0.2 } }) {
        id revision name group action position conditions { signalsAny minRisk events } revisions { id } } }`,
    );
    const p = created.createPolicy;
    expect(p).toMatchObject({
      name: 'Challenge proxies',
      group: 'EVENT',
      action: 'CHALLENGE',
      conditions: { signalsAny: ['proxy_ip'], minRisk: 0.2, events: null },
    });
    expect(p.revisions).toEqual([{ id: p.revision }]);

    const updated = await data(
      `mutation($id: ID!) { updatePolicy(id: $id, input: { action: DENY, conditions: { signalsAny: ["proxy_ip"], riskLevels: [HIGH] } }) {
        id revision action conditions { riskLevels minRisk } revisions { id action conditions { riskLevels } } } }`,
      { id: p.id },
    );
    const u = updated.updatePolicy;
    expect(u.id).toBe(p.id);
    expect(u.revision).not.toBe(p.revision);
    expect(u.conditions).toEqual({ riskLevels: ['HIGH'], minRisk: null });
    expect(u.revisions.map((r: any) => r.id)).toEqual([p.revision, u.revision]);
    expect(u.revisions[0]).toMatchObject({ action: 'CHALLENGE', conditions: { riskLevels: null } });

    const group = (await data('{ policies { id group catchAll } }')).policies
      .filter((x: any) => x.group === 'EVENT')
      .map((x: any) => x.id);
    const reversed = [...group].reverse();
    const reordered = await data(
      'mutation($ids: [ID!]!) { reorderPolicies(group: EVENT, ids: $ids) { id position } }',
      { ids: reversed },
    );
    expect(reordered.reorderPolicies.map((x: any) => x.id)).toEqual(reversed);
    expect(reordered.reorderPolicies.map((x: any) => x.position)).toEqual(
      reversed.map((_: string, i: number) => i),
    );
    await data('mutation($ids: [ID!]!) { reorderPolicies(group: EVENT, ids: $ids) { id } }', { ids: group });

    const archived = await data('mutation($id: ID!) { archivePolicy(id: $id) { id archived revision } }', {
      id: p.id,
    });
    expect(archived.archivePolicy).toMatchObject({ id: p.id, archived: true });
    expect((await data('{ policies { id } }')).policies.map((x: any) => x.id)).not.toContain(p.id);
    const withArchived = await data('{ policies(includeArchived: true) { id archived revisions { id } } }');
    expect(withArchived.policies.find((x: any) => x.id === p.id)).toMatchObject({ archived: true });
    expect(withArchived.policies.find((x: any) => x.id === p.id).revisions).toHaveLength(3);
  });

  it('refuses invalid policy edits with BAD_USER_INPUT and unknown ids with NOT_FOUND', async () => {
    const bad = await gql(
      'mutation { createPolicy(input: { name: "", group: EVENT, action: DENY, conditions: { signalsAny: ["no_such_signal"], countries: ["gb"] } }) { id } }',
    );
    expect(bad.status).toBe(200);
    expect(codes(bad)).toEqual(['BAD_USER_INPUT']);
    expect(bad.body.errors?.[0]?.extensions?.fields.map((f: any) => f.field).sort()).toEqual([
      'conditions.countries',
      'conditions.signalsAny',
      'name',
    ]);
    expect(bad.body.data).toBeNull();
    const missing = await gql('mutation { updatePolicy(id: "nope", input: { name: "x" }) { id } }');
    expect(codes(missing)).toEqual(['NOT_FOUND']);
    const catchAll = (await data('{ policies { id catchAll } }')).policies.find((x: any) => x.catchAll).id;
    expect(codes(await gql(`mutation { archivePolicy(id: "${catchAll}") { id } }`))).toEqual([
      'BAD_USER_INPUT',
    ]);
    expect(codes(await gql('mutation { reorderPolicies(group: EVENT, ids: ["x"]) { id } }'))).toEqual([
      'BAD_USER_INPUT',
    ]);
  });

  it('approve and report a device, as REST sees them', async () => {
    const approved = await data(
      `mutation { approveDevice(token: "${seeded.aliceDevices[0]}") { token reviewState risk approvedAt } }`,
    );
    expect(approved.approveDevice).toMatchObject({ reviewState: 'APPROVED', risk: 0 });
    expect((await call(app, 'GET', `/v1/devices/${seeded.aliceDevices[0]}`)).body).toMatchObject({
      risk: 0,
      approved_at: approved.approveDevice.approvedAt,
    });
    const reported = await data(
      `mutation { reportDevice(token: "${seeded.aliceDevices[1]}") { token reviewState risk escalatedAt } }`,
    );
    expect(reported.reportDevice).toMatchObject({ reviewState: 'REPORTED', risk: 100 });
    expect((await call(app, 'GET', `/v1/devices/${seeded.aliceDevices[1]}`)).body.escalated_at).toBe(
      reported.reportDevice.escalatedAt,
    );
    const summary = await data(
      `{ user(id: "${A.alice}") { riskSummary { approvedDevices reportedDevices unreviewedDevices highestDeviceRisk level } } }`,
    );
    expect(summary.user.riskSummary).toEqual({
      approvedDevices: 1,
      reportedDevices: 1,
      unreviewedDevices: 0,
      highestDeviceRisk: 100,
      level: 'HIGH',
    });
    expect(codes(await gql('mutation { approveDevice(token: "no-such-device") { token } }'))).toEqual([
      'NOT_FOUND',
    ]);
  });

  it('set the webhook URL, send a test webhook, and read deliveries with their attempts', async () => {
    const bad = await gql('mutation { setWebhookUrl(url: "not a url") { webhookUrl } }');
    expect(codes(bad)).toEqual(['BAD_USER_INPUT']);
    const set = await data('mutation($u: String) { setWebhookUrl(url: $u) { webhookUrl } }', { u: hook.url });
    expect(set.setWebhookUrl.webhookUrl).toBe(hook.url);
    expect((await data('{ environment { webhookUrl } }')).environment.webhookUrl).toBe(hook.url);

    const sent = await data(
      'mutation { sendTestWebhook { id type trigger url status test body maxAttempts attempts { at statusCode error durationMs url } createdAt deliveredAt lastError } }',
    );
    const t = sent.sendTestWebhook;
    expect(t).toMatchObject({
      type: '$incident.confirmed',
      trigger: 'test',
      url: hook.url,
      status: 'DELIVERED',
      test: true,
      lastError: null,
    });
    expect(t.attempts).toEqual([expect.objectContaining({ statusCode: 200, error: null, url: hook.url })]);
    expect(JSON.parse(t.body).data.id).toBe(t.id);
    expect(
      hook.received.some((r) => r.body === t.body && typeof r.headers['x-castle-signature'] === 'string'),
    ).toBe(true);

    await data(`mutation { reportDevice(token: "${seeded.carolDevice}") { token } }`);
    const list = await eventually(
      () =>
        data(
          '{ webhookDeliveries(first: 10) { edges { cursor node { id status trigger userId user { id } deviceToken device { token } attempts { statusCode } nextAttemptAt } } pageInfo { hasNextPage endCursor } } }',
        ),
      (x) =>
        x.webhookDeliveries.edges.some(
          (e: any) => e.node.trigger === 'device_reported' && e.node.status === 'DELIVERED',
        ),
      'the device_reported delivery to be delivered',
    );
    const reportedDelivery = list.webhookDeliveries.edges.find(
      (e: any) => e.node.trigger === 'device_reported',
    ).node;
    expect(reportedDelivery).toMatchObject({
      userId: A.carol,
      user: { id: A.carol },
      deviceToken: seeded.carolDevice,
      device: { token: seeded.carolDevice },
      status: 'DELIVERED',
    });
    const one = await data(
      'query($id: ID!) { webhookDelivery(id: $id) { id status attempts { statusCode } } }',
      { id: t.id },
    );
    expect(one.webhookDelivery).toMatchObject({ id: t.id, status: 'DELIVERED' });
    expect(await data('{ webhookDelivery(id: "nope") { id } }')).toEqual({ webhookDelivery: null });
    const delivered = await data(
      '{ webhookDeliveries(status: DELIVERED, first: 1) { edges { node { id status } } pageInfo { hasNextPage endCursor } } }',
    );
    expect(delivered.webhookDeliveries.edges).toHaveLength(1);
    expect(delivered.webhookDeliveries.pageInfo.hasNextPage).toBe(true);
    const page2 = await data(
      'query($a: String) { webhookDeliveries(status: DELIVERED, first: 1, after: $a) { edges { node { id } } } }',
      { a: delivered.webhookDeliveries.pageInfo.endCursor },
    );
    expect(page2.webhookDeliveries.edges[0].node.id).not.toBe(delivered.webhookDeliveries.edges[0].node.id);

    const cleared = await data('mutation { setWebhookUrl(url: null) { webhookUrl } }');
    expect(cleared.setWebhookUrl.webhookUrl).toBeNull();
    expect(codes(await gql('mutation { sendTestWebhook { id } }'))).toEqual(['BAD_USER_INPUT']);
  });

  it('request a privacy export and read the job', async () => {
    const noAddress = await gql(`mutation { requestPrivacyExport(userId: "${A.bob}") { id } }`);
    expect(codes(noAddress)).toEqual(['BAD_USER_INPUT']);
    await app.built.services.environments.setPrivacyEmail(app.env.id, 'privacy@example.com');
    const unknown = await gql('mutation { requestPrivacyExport(userId: "nobody-here") { id } }');
    expect(codes(unknown)).toEqual(['NOT_FOUND']);
    const r = await data(
      `mutation { requestPrivacyExport(userId: "${A.bob}") { id userId status recipient createdAt expiresAt sentAt exportBytes error } }`,
    );
    const job = r.requestPrivacyExport;
    expect(job).toMatchObject({
      userId: A.bob,
      status: 'PENDING',
      recipient: 'privacy@example.com',
      sentAt: null,
    });
    expect(Date.parse(job.expiresAt) - Date.parse(job.createdAt)).toBe(48 * 3_600_000);
    // No SMTP server in this test: the job ends failed, saying so.
    const done = await eventually(
      () => data('query($id: ID!) { privacyJob(id: $id) { id status error } }', { id: job.id }),
      (x) => x.privacyJob.status !== 'PENDING',
      'the privacy job to end',
    );
    expect(done.privacyJob).toMatchObject({ id: job.id, status: 'FAILED' });
    expect(done.privacyJob.error).toMatch(/SMTP/);
    const jobs = await data(
      '{ privacyJobs(first: 1) { edges { cursor node { id } } pageInfo { hasNextPage endCursor } } }',
    );
    expect(jobs.privacyJobs.edges[0].node.id).toBe(job.id);
    expect(await data('{ privacyJob(id: "nope") { id } }')).toEqual({ privacyJob: null });
  });

  it('purge a user: nothing of it remains reachable', async () => {
    const before = await data(`{ user(id: "${A.purge}") { id devices { token } } }`);
    expect(before.user.devices).toHaveLength(1);
    const r = await data(`mutation { purgeUser(userId: "${A.purge}") { userId total deleted } }`);
    expect(r.purgeUser.userId).toBe(A.purge);
    expect(r.purgeUser.total).toBeGreaterThanOrEqual(3);
    expect(r.purgeUser.deleted).toMatchObject({ users: 1, devices: 1 });
    const after = await data(
      `{ user(id: "${A.purge}") { id } device(token: "${before.user.devices[0].token}") { token } events(filter: { userId: "${A.purge}" }) { edges { cursor } } }`,
    );
    expect(after).toEqual({ user: null, device: null, events: { edges: [] } });
    expect((await call(app, 'GET', `/v1/users/${A.purge}/devices`)).status).toBe(404);
  });
});

describe('a policy edited through GraphQL decides the very next verdict', () => {
  it('on REST and on gRPC', async () => {
    const grpc = createRampartClient({ address: app.grpcAddress, secret: app.secret, deadlineMs: 10_000 });
    try {
      const body = {
        event: '$login',
        user: { id: 'gq-verdict', email: 'gq-verdict@example.com' },
        request_token: 'fp-gq-verdict',
        context: ctx(IP_SHARED),
      };
      const grpcRisk = () =>
        grpc.risk({
          event: '$login',
          user: { id: 'gq-verdict', email: 'gq-verdict@example.com' },
          requestToken: 'fp-gq-verdict',
          context: { ip: IP_SHARED, headers: ctx(IP_SHARED).headers, clientId: '' },
        });
      expect((await call(app, 'POST', '/v1/risk', body)).body.policy.action).toBe('allow');

      const created = await data(
        'mutation { createPolicy(input: { name: "Deny gq logins", group: BEFORE, action: DENY, conditions: { events: ["$login"] } }) { id revision } }',
      );
      const { id, revision } = created.createPolicy;
      const rest = await call(app, 'POST', '/v1/risk', body);
      expect(rest.body.policy).toEqual({ id, revision, name: 'Deny gq logins', action: 'deny' });
      const viaGrpc = await grpcRisk();
      expect(viaGrpc.policy).toMatchObject({ id, revision, action: 'ACTION_DENY' });

      const updated = await data(
        'mutation($id: ID!) { updatePolicy(id: $id, input: { action: CHALLENGE }) { revision } }',
        { id },
      );
      const rest2 = await call(app, 'POST', '/v1/risk', body);
      expect(rest2.body.policy).toEqual({
        id,
        revision: updated.updatePolicy.revision,
        name: 'Deny gq logins',
        action: 'challenge',
      });
      expect((await grpcRisk()).policy).toMatchObject({
        revision: updated.updatePolicy.revision,
        action: 'ACTION_CHALLENGE',
      });

      await data('mutation($id: ID!) { archivePolicy(id: $id) { id } }', { id });
      expect((await call(app, 'POST', '/v1/risk', body)).body.policy.id).not.toBe(id);
      expect((await grpcRisk()).policy?.id).not.toBe(id);

      // Explain a deny: the event names the policy revision that decided it, conditions included.
      await settle();
      const explained = await data(`{
        events(filter: { userId: "gq-verdict", action: DENY }) {
          edges { node { name risk riskLevel signals { name details } ip country
            device { token reviewState }
            policy { name action revisionDetails { action conditions { events countries riskLevels signalsAny deviceStates } } current { archived revision } } } }
        }
      }`);
      const denies = explained.events.edges.map((e: any) => e.node);
      expect(denies).toHaveLength(2);
      expect(denies[0].policy).toMatchObject({
        name: 'Deny gq logins',
        action: 'DENY',
        revisionDetails: { action: 'DENY', conditions: { events: ['$login'] } },
        current: { archived: true },
      });
    } finally {
      grpc.close();
    }
  });
});

describe('limits', () => {
  it('refuses a query deeper than the limit with a clear error', async () => {
    const deep = `{ devices { edges { node { user { devices { user { devices { user { devices { user { devices { token } } } } } } } } } } } }`;
    const r = await gql(deep);
    expect(r.status).toBe(400);
    expect(codes(r)).toEqual(['BAD_REQUEST']);
    expect(r.body.errors?.[0]?.message).toMatch(/too deep: depth \d+ exceeds the limit of 10/);
    expect(r.body.errors?.[0]?.extensions?.limit).toMatchObject({ name: 'depth', max: 10 });
    expect(r.body.data).toBeUndefined();
  });

  it('refuses a query whose estimated cost is over the limit, counting page sizes', async () => {
    const r = await gql(
      '{ devices(first: 100) { edges { node { events(first: 100) { id name ip device { token } } } } } }',
    );
    expect(r.status).toBe(400);
    expect(codes(r)).toEqual(['BAD_REQUEST']);
    expect(r.body.errors?.[0]?.message).toMatch(/too complex: estimated cost \d+ exceeds the limit of 5000/);
    expect(r.body.errors?.[0]?.extensions?.limit.name).toBe('complexity');
    const aliases = Array.from({ length: 100 }, (_, i) => `a${i}: analytics { timeSeries { scanned } }`).join(
      ' ',
    );
    expect(codes(await gql(`{ ${aliases} }`))).toEqual(['BAD_REQUEST']);
  });

  it('charges an analysis by the data it may scan: many all-time totals are refused, the same over a day or one user are not', async () => {
    // Two hundred aliased totals over all time stalled scoring for a minute before this cost model.
    const allTime = Array.from({ length: 200 }, (_, i) => `a${i}: analytics { total }`).join(' ');
    const refused = await gql(`{ ${allTime} }`);
    expect(codes(refused)).toEqual(['BAD_REQUEST']);
    expect(refused.body.errors?.[0]?.extensions?.limit).toMatchObject({ name: 'complexity', max: 5000 });
    const since = new Date(Date.now() - 3_600_000).toISOString();
    const oneDay = Array.from(
      { length: 200 },
      (_, i) => `a${i}: analytics(filter: { from: "${since}" }) { total }`,
    ).join(' ');
    expect((await gql(`{ ${oneDay} }`)).body.errors).toBeUndefined();
    const oneUser = Array.from(
      { length: 200 },
      (_, i) => `a${i}: analytics(filter: { userId: "gq-alice" }) { total }`,
    ).join(' ');
    expect((await gql(`{ ${oneUser} }`)).body.errors).toBeUndefined();
    // Variables count too.
    const withVars = await gql(
      `query ($f: EventFilter) { ${Array.from({ length: 200 }, (_, i) => `a${i}: analytics(filter: $f) { total }`).join(' ')} }`,
      { f: { from: '2000-01-01T00:00:00Z' } },
    );
    expect(codes(withVars)).toEqual(['BAD_REQUEST']);
  }, 1_200_000);

  it('refuses page sizes over the cap with BAD_USER_INPUT', async () => {
    const r = await gql('{ events(first: 101) { edges { cursor } } }');
    expect(codes(r)).toEqual(['BAD_USER_INPUT']);
    expect(r.body.errors?.[0]?.extensions?.fields).toEqual([
      { field: 'first', message: 'must be an integer from 1 to 100' },
    ]);
    expect(codes(await gql('{ devices(first: 0) { edges { cursor } } }'))).toEqual(['BAD_USER_INPUT']);
    expect(codes(await gql('{ user(id: "gq-alice") { devices(first: 100000) { token } } }'))).toEqual([
      'BAD_USER_INPUT',
    ]);
  });

  it('refuses documents with too many tokens, and fragment bombs', async () => {
    const long = `{ ${Array.from({ length: 3000 }, (_, i) => `f${i}: viewer { canMutate }`).join(' ')} }`;
    const r = await gql(long);
    expect(r.status).toBe(400);
    expect(codes(r)).toEqual(['GRAPHQL_PARSE_FAILED']);
    expect(r.body.errors?.[0]?.message).toMatch(/token/i);
    const frags = ['fragment F0 on Viewer { canMutate }'];
    for (let i = 1; i < 8; i++)
      frags.push(
        `fragment F${i} on Viewer { ${Array.from({ length: 10 }, () => `...F${i - 1}`).join(' ')} }`,
      );
    const bomb = await gql(`{ viewer { ...F7 } } ${frags.join(' ')}`);
    expect(bomb.status).toBe(400);
    expect(bomb.body.data).toBeUndefined();
  });

  it('introspection works within the limits', async () => {
    const d = await data(
      '{ __schema { queryType { name } types { name fields { name type { name kind ofType { name kind ofType { name kind } } } } } } }',
    );
    expect(d.__schema.queryType.name).toBe('Query');
  });

  it.each([
    [
      'with every option (GraphiQL, codegen)',
      {
        descriptions: true,
        inputValueDeprecation: true,
        specifiedByUrl: true,
        directiveIsRepeatable: true,
        schemaDescription: true,
        oneOf: true,
      },
    ],
    ['with the defaults (Apollo tools)', {}],
  ])(
    'answers the full introspection query tools send, %s, and it describes the schema',
    async (_what, options) => {
      const r = await gql(getIntrospectionQuery(options));
      expect(r.status).toBe(200);
      expect(r.body.errors).toBeUndefined();
      const schema = buildClientSchema(r.body.data as IntrospectionQuery);
      expect(schema.getQueryType()?.getFields()).toHaveProperty('devices');
      expect(schema.getMutationType()?.getFields()).toHaveProperty('approveDevice');
    },
  );

  it('counts introspection toward depth: ofType nested 600 deep is refused', async () => {
    let ofType = 'name';
    for (let i = 0; i < 600; i++) ofType = `ofType { ${ofType} }`;
    const r = await gql(`{ __type(name: "Device") { fields { type { ${ofType} } } } }`);
    expect(r.status).toBe(400);
    expect(codes(r)).toEqual(['BAD_REQUEST']);
    expect(r.body.errors?.[0]?.message).toMatch(
      /too deep: depth \d+, introspection fields counted, exceeds the limit of 20/,
    );
    expect(r.body.errors?.[0]?.extensions?.limit).toMatchObject({
      name: 'introspectionDepth',
      max: 20,
      actual: 604,
    });
    expect(r.body.data).toBeUndefined();
  });

  it('bounds what introspection answers: many aliased schemas, or types re-entered through their fields, are refused', async () => {
    const aliases = Array.from(
      { length: 20 },
      (_, i) =>
        `s${i}: __schema { types { name description fields { name description args { name description } type { name } } } }`,
    ).join(' ');
    const r = await gql(`{ ${aliases} }`);
    expect(r.status).toBe(400);
    expect(codes(r)).toEqual(['BAD_REQUEST']);
    expect(r.body.errors?.[0]?.extensions?.limit).toMatchObject({ name: 'introspectionFields', max: 20000 });
    // Types re-entered through their fields again and again: graphql-js's own validation refuses it.
    let nested = 'name';
    for (let i = 0; i < 4; i++)
      nested = `name fields { name type { name ofType { name ofType { ${nested} } } } }`;
    const cycle = await gql(`{ __schema { types { ${nested} } } }`);
    expect(cycle.status).toBe(400);
    expect(codes(cycle)).toEqual(['GRAPHQL_VALIDATION_FAILED']);
    expect(cycle.body.errors?.[0]?.message).toMatch(/introspection depth/);
    // One schema's worth, a few times over, is answered.
    expect(
      (
        await gql(
          `{ ${Array.from({ length: 2 }, (_, i) => `s${i}: __schema { types { name description fields { name description args { name description } type { name } } } }`).join(' ')} }`,
        )
      ).body.errors,
    ).toBeUndefined();
  });
});

describe('tenant isolation', () => {
  const B = { user: A.alice, other: 'gq-b-only' };
  let b: {
    secret: string;
    envId: string;
    device: string;
    policy: string;
    event: string;
    delivery: string;
    job: string;
    rejected: string;
    cursor: string;
  };

  beforeAll(async () => {
    const created = await app.newEnvironment('gq-tenant-b');
    const secret = created.secret;
    const s = app.built.services;
    // The same user id as in A, on purpose, and one only B has.
    const device = (await risk(secret, B.user, 'fp-gq-b-1', { ip: '9.9.9.9' })).device.token;
    await risk(secret, B.other, 'fp-gq-b-2', { ip: IP_SHARED });
    await call({ baseUrl: app.baseUrl, secret }, 'POST', '/v1/track', { event: 42, user_id: B.other });
    await settle();
    const policy = (
      await data(
        'mutation { createPolicy(input: { name: "B only", group: EVENT, action: DENY, conditions: { countries: ["FR"] } }) { id } }',
        {},
        secret,
      )
    ).createPolicy.id;
    await data(`mutation($u: String) { setWebhookUrl(url: $u) { id } }`, { u: hook.url }, secret);
    const delivery = (await data('mutation { sendTestWebhook { id } }', {}, secret)).sendTestWebhook.id;
    await s.environments.setPrivacyEmail(created.env.id, 'b-privacy@example.com');
    const job = (await data(`mutation { requestPrivacyExport(userId: "${B.other}") { id } }`, {}, secret))
      .requestPrivacyExport.id;
    const events = await data('{ events(first: 1) { edges { cursor node { id } } } }', {}, secret);
    const rejected = await eventually(
      () => data('{ rejectedPayloads { edges { node { id } } } }', {}, secret),
      (x) => x.rejectedPayloads.edges.length > 0,
      "a rejected payload in environment B's debugger",
    );
    b = {
      secret,
      envId: created.env.id,
      device,
      policy,
      event: events.events.edges[0].node.id,
      cursor: events.events.edges[0].cursor,
      delivery,
      job,
      rejected: rejected.rejectedPayloads.edges[0].node.id,
    };
  });

  it("A's key sees nothing of B through any field", async () => {
    const d = await data(
      `query($bDevice: ID!, $bEvent: ID!, $bPolicy: ID!, $bDelivery: ID!, $bJob: ID!, $bOther: ID!, $shared: ID!) {
        environment { id }
        bUser: user(id: $bOther) { id }
        shared: user(id: $shared) { devices(includeRemoved: true) { token } events(first: 100) { edges { node { id } } } riskSummary { deviceCount eventCount } }
        device(token: $bDevice) { token }
        event(id: $bEvent) { id }
        policy(id: $bPolicy) { id }
        policies(includeArchived: true) { id revisions { id } }
        webhookDelivery(id: $bDelivery) { id }
        privacyJob(id: $bJob) { id }
        devices(first: 100) { edges { node { token } } }
        events(first: 100) { edges { node { id policy { id current { id } } device { token } } } }
        byDevice: events(filter: { deviceToken: $bDevice }) { edges { node { id } } }
        rejectedPayloads(first: 100) { edges { node { id } } }
        webhookDeliveries(first: 100) { edges { node { id } } }
        privacyJobs(first: 100) { edges { node { id } } }
        analytics(filter: { ip: "9.9.9.9" }) { total actions { count } signals { signal } top(dimension: DEVICE) { distinct entries { key device { token } } } timeSeries(bucket: DAY) { scanned } }
        everyone: analytics { top(dimension: USER, first: 100) { entries { key } } }
      }`,
      {
        bDevice: b.device,
        bEvent: b.event,
        bPolicy: b.policy,
        bDelivery: b.delivery,
        bJob: b.job,
        bOther: B.other,
        shared: B.user,
      },
    );
    const text = JSON.stringify(d);
    for (const secretOfB of [
      b.envId,
      b.device,
      b.event,
      b.policy,
      b.delivery,
      b.job,
      b.rejected,
      B.other,
      '9.9.9.9',
    ])
      expect(text).not.toContain(secretOfB);
    expect(d.environment.id).toBe(app.env.id);
    expect(d).toMatchObject({
      bUser: null,
      device: null,
      event: null,
      policy: null,
      webhookDelivery: null,
      privacyJob: null,
      byDevice: { edges: [] },
    });
    expect(d.shared.devices.map((x: any) => x.token).sort()).toEqual([...seeded.aliceDevices].sort());
    expect(d.shared.riskSummary.deviceCount).toBe(2);
    expect(d.analytics).toEqual({
      total: 0,
      actions: [],
      signals: [],
      top: { distinct: 0, entries: [] },
      timeSeries: { scanned: 0 },
    });
  });

  it("a cursor of B only positions A's own list", async () => {
    const d = await data('query($a: String) { events(first: 100, after: $a) { edges { node { id } } } }', {
      a: b.cursor,
    });
    expect(JSON.stringify(d)).not.toContain(b.event);
  });

  it("A's key cannot change anything of B", async () => {
    expect(codes(await gql(`mutation { approveDevice(token: "${b.device}") { token } }`))).toEqual([
      'NOT_FOUND',
    ]);
    expect(codes(await gql(`mutation { reportDevice(token: "${b.device}") { token } }`))).toEqual([
      'NOT_FOUND',
    ]);
    expect(
      codes(await gql(`mutation { updatePolicy(id: "${b.policy}", input: { name: "hijacked" }) { id } }`)),
    ).toEqual(['NOT_FOUND']);
    expect(codes(await gql(`mutation { archivePolicy(id: "${b.policy}") { id } }`))).toEqual(['NOT_FOUND']);
    expect(codes(await gql(`mutation { requestPrivacyExport(userId: "${B.other}") { id } }`))).toEqual([
      'NOT_FOUND',
    ]);
    await data(`mutation { purgeUser(userId: "${B.other}") { total } }`);
    const still = await data(
      `{ device(token: "${b.device}") { reviewState } policy(id: "${b.policy}") { name archived } user(id: "${B.other}") { id devices { token } } }`,
      {},
      b.secret,
    );
    expect(still).toEqual({
      device: { reviewState: 'UNREVIEWED' },
      policy: { name: 'B only', archived: false },
      user: { id: B.other, devices: [expect.anything()] },
    });
  });

  it("B's key sees B's data", async () => {
    const d = await data(
      `{ environment { id } device(token: "${b.device}") { token user { id devices { token } } } }`,
      {},
      b.secret,
    );
    expect(d).toEqual({
      environment: { id: b.envId },
      device: { token: b.device, user: { id: B.user, devices: [{ token: b.device }] } },
    });
  });
});

describe('round trips', () => {
  const PAGE_QUERY = `query Page($first: Int!) {
    devices(first: $first, filter: { userId: null }) {
      edges { node { token risk reviewState
        user { id email lastSeenAt devices { token } }
        events(first: 3) { id name action risk occurredAt }
      } }
      pageInfo { hasNextPage endCursor }
    }
  }`;

  /** Database commands one page costs, by collection, excluding the background workers' own. */
  async function commandsFor(
    first: number,
    secret: string,
  ): Promise<{ count: number; list: string[]; edges: number }> {
    recording = [];
    const r = await gql(PAGE_QUERY, { first }, { secret });
    const seen = recording;
    recording = null;
    expect(r.body.errors).toBeUndefined();
    // Reads only: verdicts bump velocity counters in the background, and workers poll their own collections.
    const reads = new Set(['find', 'aggregate', 'getMore', 'count', 'distinct']);
    const background = /^(webhook_|privacy_|counters$)/;
    const list = seen
      .filter((e) => reads.has(e.commandName))
      .map((e) => {
        const c = e.command as Record<string, unknown>;
        return `${e.commandName}:${String(e.commandName === 'getMore' ? c.collection : c[e.commandName])}`;
      })
      .filter((s) => !background.test(s.slice(s.indexOf(':') + 1)));
    return { count: list.length, list, edges: r.body.data.devices.edges.length };
  }

  it('a page of 50 devices with users and latest events costs a small constant number of commands', async () => {
    const env = await app.newEnvironment('gq-roundtrip');
    const users = 60;
    // Distinct IPs and fingerprints, and the first round written before the second: concurrent
    // velocity-counter upserts on one key fail on FerretDB (reported), and that is not what this
    // test is about.
    for (const round of [0, 1]) {
      for (let i = 0; i < users; i += 10) {
        await Promise.all(
          Array.from({ length: 10 }, (_, j) =>
            risk(env.secret, `rt-${i + j}`, `fp-rt-${i + j}`, { ip: `81.2.69.${10 + i + j}` }),
          ),
        );
      }
      if (round === 0) await settle();
    }
    await settle();
    // From a cold state cache, so that the users' look-up shows (a warm one answers from memory).
    app.built.state.invalidate(() => true);
    const small = await commandsFor(10, env.secret);
    app.built.state.invalidate(() => true);
    const large = await commandsFor(50, env.secret);
    expect(small.edges).toBe(10);
    expect(large.edges).toBe(50);
    expect(large.count).toBe(small.count);
    expect(large.list.sort()).toEqual(small.list.sort());
    // Authentication (credential, environment), the page, its users (with their devices: one
    // document each, read in one query), the latest events.
    expect(large.list).toEqual([
      'find:credentials',
      'find:devices',
      'find:environments',
      'find:events',
      'find:users',
    ]);
  });
});

describe('error contract: every error kind answers its code', () => {
  /** The table of docs/graphql.md, written out here rather than imported. */
  const EXPECTED: Record<ErrorKind, { code: string; status: number }> = {
    bad_request: { code: 'BAD_REQUEST', status: 400 },
    unauthorized: { code: 'UNAUTHENTICATED', status: 401 },
    forbidden: { code: 'FORBIDDEN', status: 403 },
    not_found: { code: 'NOT_FOUND', status: 404 },
    payload_too_large: { code: 'PAYLOAD_TOO_LARGE', status: 413 },
    invalid_parameters: { code: 'BAD_USER_INPUT', status: 422 },
    invalid_request_token: { code: 'INVALID_REQUEST_TOKEN', status: 422 },
    rate_limited: { code: 'RATE_LIMITED', status: 429 },
    unavailable: { code: 'SERVICE_UNAVAILABLE', status: 503 },
    deadline_exceeded: { code: 'DEADLINE_EXCEEDED', status: 504 },
    internal: { code: 'INTERNAL_SERVER_ERROR', status: 500 },
  };
  const dbDown = Object.assign(new Error('connection refused'), { name: 'MongoServerSelectionError' });
  const ERRORS: Record<ErrorKind, () => Error> = {
    bad_request: () => new BadRequest('bad'),
    unauthorized: () => new Unauthorized(),
    forbidden: () => new Forbidden('no'),
    not_found: () => new NotFound('none'),
    payload_too_large: () => new PayloadTooLarge('big'),
    invalid_parameters: () => new InvalidParameters([{ field: 'f', message: 'm' }]),
    invalid_request_token: () => new InvalidRequestToken('request_token', 'is forged'),
    rate_limited: () => new RateLimited(3),
    // As the store hands it over: its driver's error translated, and kept only as the cause.
    unavailable: () => new Unavailable(undefined, { cause: dbDown }),
    deadline_exceeded: () => new DeadlineExceeded(),
    internal: () => new Error('secret internals'),
  };

  // A copy of the services whose environment read and rate limiter fail on demand, on its own listener.
  let fault: { field: Error | null; request: Error | null } = { field: null, request: null };
  let faultyUrl = '';
  let close: () => Promise<void> = async () => undefined;
  beforeAll(async () => {
    const real = app.built.services;
    const environments = Object.create(real.environments) as EnvironmentService;
    environments.require = async (id) => {
      if (fault.field) throw fault.field;
      return real.environments.require(id);
    };
    const access = Object.create(real.access) as typeof real.access;
    access.caller = async (...args: Parameters<typeof real.access.caller>) => {
      const principal = await real.access.caller(...args);
      if (fault.request) throw fault.request;
      return principal;
    };
    const services = { ...real, environments, access };
    const log = createLogger('silent');
    const server = await buildRestServer({
      services,
      log,
      bodyLimit: 100 * 1024,
      trustProxy: false,
      requireHttps: false,
      register: (f) => registerGraphql(f, { services, log }),
    });
    await server.listen({ host: '127.0.0.1', port: 0 });
    faultyUrl = `http://127.0.0.1:${(server.server.address() as AddressInfo).port}/graphql`;
    close = () => server.close();
  });
  afterAll(() => close());

  const post = async (body: string) => {
    const res = await fetch(faultyUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: basic(app.secret) },
      body,
    });
    return {
      status: res.status,
      retryAfter: res.headers.get('retry-after'),
      body: (await res.json()) as GqlResult['body'],
    };
  };

  it.each(Object.keys(ERRORS) as ErrorKind[])(
    '%s, raised by a resolver: extensions.code of the table, HTTP 200',
    async (kind) => {
      fault = { field: ERRORS[kind](), request: null };
      const r = await post(JSON.stringify({ query: '{ environment { id } }' }));
      fault = { field: null, request: null };
      expect(r.status).toBe(200);
      const e = r.body.errors?.[0];
      expect(e?.extensions?.code).toBe(EXPECTED[kind].code);
      expect(e?.path).toEqual(['environment']);
      expect(JSON.stringify(r.body)).not.toMatch(/secret internals|connection refused|stacktrace/);
      if (kind === 'internal') expect(e?.extensions?.correlationId).toMatch(/^[0-9a-f-]{36}$/);
      if (kind === 'invalid_parameters')
        expect(e?.extensions?.fields).toEqual([{ field: 'f', message: 'm' }]);
    },
  );

  it.each(Object.keys(ERRORS) as ErrorKind[])(
    '%s, raised before execution: the HTTP status of the table',
    async (kind) => {
      fault = { field: null, request: ERRORS[kind]() };
      const r = await post(JSON.stringify({ query: '{ environment { id } }' }));
      fault = { field: null, request: null };
      expect(r.status).toBe(EXPECTED[kind].status);
      expect(r.body.errors?.map((e) => e.extensions?.code)).toEqual([EXPECTED[kind].code]);
      expect(r.body.data).toBeUndefined();
      if (kind === 'rate_limited') expect(r.retryAfter).toBe('3');
    },
  );

  it("a body over the limit answers 413 PAYLOAD_TOO_LARGE in GraphQL's shape", async () => {
    const r = await post(JSON.stringify({ query: `{ viewer { canMutate } } # ${'x'.repeat(110 * 1024)}` }));
    expect(r.status).toBe(413);
    expect(r.body.errors?.map((e) => e.extensions?.code)).toEqual(['PAYLOAD_TOO_LARGE']);
  });
});

describe('docs/graphql.md', () => {
  it('every example is valid against the schema', () => {
    const doc = readFileSync(path.join(__dirname, '..', '..', 'docs', 'graphql.md'), 'utf8');
    const examples = [...doc.matchAll(/```graphql\n([\s\S]*?)```/g)].flatMap((m) =>
      (m[1] as string).split(/\n(?=query|mutation)/),
    );
    expect(examples.length).toBeGreaterThanOrEqual(8);
    const schema = buildSchema(typeDefs);
    for (const example of examples)
      expect(validate(schema, parse(example)).map((e) => e.message)).toEqual([]);
  });
});
