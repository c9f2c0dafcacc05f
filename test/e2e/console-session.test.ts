/**
 * The web console's server side over real HTTP: sign-in with a key into an HttpOnly,
 * SameSite=Strict session cookie, GraphQL with that cookie and its CSRF token (and refused
 * without), idle and absolute expiry, sign-out, a revoked key ending its sessions, analyst
 * sessions that cannot mutate, tenant isolation, the failed-key throttle; and the GraphQL the
 * console's pages added: policyDryRun, rollbackPolicy and webhookDeliveries(userId).
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { buildRestServer } from '../../src/rest/server';
import { registerConsole } from '../../src/console/server';
import { createLogger } from '../../src/app/logger';
import { startTestApp, call, basic, type TestApp } from '../support/app';
import { waitFor } from '../support/wait';

let app: TestApp;
/** The service's clock runs `offset` ms ahead of the real one: expiry is tested by moving it. */
let offset = 0;
const clock = { now: () => new Date(Date.now() + offset) };

beforeAll(async () => {
  app = await startTestApp({ grpc: false, clock, authFailuresPerMinute: 12 });
});
afterAll(async () => {
  await app?.close();
});

interface Session {
  cookie: string;
  csrf: string;
  setCookie: string;
  body: any;
}

async function signIn(
  key: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: any; setCookie: string | null }> {
  const res = await fetch(`${app.baseUrl}/console/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ key }),
  });
  return { status: res.status, body: await res.json(), setCookie: res.headers.get('set-cookie') };
}

async function session(key: string): Promise<Session> {
  const r = await signIn(key);
  expect(r.status).toBe(201);
  const setCookie = r.setCookie ?? '';
  const cookie = setCookie.split(';')[0];
  return { cookie, csrf: r.body.csrfToken, setCookie, body: r.body };
}

/** GraphQL with a session cookie (and, unless null, a CSRF header). */
async function gqlAs(
  s: Pick<Session, 'cookie'> & { csrf: string | null },
  query: string,
  variables: Record<string, unknown> = {},
) {
  const headers: Record<string, string> = { 'content-type': 'application/json', cookie: s.cookie };
  if (s.csrf !== null) headers['x-rampart-csrf'] = s.csrf;
  const res = await fetch(`${app.baseUrl}/graphql`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ query, variables }),
  });
  const body = (await res.json()) as {
    data?: any;
    errors?: { message: string; extensions?: Record<string, any> }[];
  };
  return { status: res.status, body, codes: (body.errors ?? []).map((e) => e.extensions?.code) };
}

async function gqlSecret(secret: string, query: string, variables: Record<string, unknown> = {}) {
  const res = await fetch(`${app.baseUrl}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: basic(secret) },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await res.json()) as {
    data?: any;
    errors?: { message: string; extensions?: Record<string, any> }[];
  };
  if (body.errors?.length) throw new Error(JSON.stringify(body.errors));
  return body.data;
}

const UA =
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36';
async function login(secret: string, userId: string, fp: string, event = '$login') {
  const r = await call({ baseUrl: app.baseUrl, secret }, 'POST', '/v1/risk', {
    event,
    user: { id: userId, email: `${userId}@example.com` },
    request_token: fp,
    context: {
      ip: '81.2.69.142',
      headers: { 'User-Agent': UA, Accept: 'text/html', 'Accept-Language': 'en-GB' },
    },
  });
  expect(r.status).toBe(201);
  return r.body as { device: { token: string }; policy: { action: string } };
}

const sessions = () => app.database.db.collection('console_sessions');

describe('sign-in', () => {
  it('opens a session from an API secret: HttpOnly, SameSite=Strict cookie on path /, the environment and a CSRF token', async () => {
    const s = await session(app.secret);
    expect(s.setCookie).toMatch(/^rampart_session=[A-Za-z0-9_-]{40,}; /);
    expect(s.setCookie).toMatch(/; HttpOnly/);
    expect(s.setCookie).toMatch(/; SameSite=Strict/);
    expect(s.setCookie).toMatch(/; Path=\//);
    // Plain HTTP on loopback: a Secure cookie would never come back.
    expect(s.setCookie).not.toMatch(/Secure/);
    expect(s.body).toMatchObject({
      environment: { id: app.env.id, name: 'sandbox', sandbox: true },
      credentialKind: 'SECRET',
      canMutate: true,
    });
    expect(typeof s.body.csrfToken).toBe('string');
    expect(JSON.stringify(s.body)).not.toContain(app.secret);
  });

  it('stores only the hash of the session token, read by _id, and never the key', async () => {
    const s = await session(app.secret);
    const token = s.cookie.split('=')[1];
    const hash = createHash('sha256').update(token).digest('hex');
    const doc = await sessions().findOne({ _id: hash as any });
    expect(doc).not.toBeNull();
    const all = JSON.stringify(await sessions().find({}).toArray());
    expect(all).not.toContain(token);
    expect(all).not.toContain(app.secret);
    expect(all).not.toContain(s.csrf);
  });

  it('answers the session it has on GET, with the same CSRF token, and 401 without one', async () => {
    const s = await session(app.secret);
    const res = await fetch(`${app.baseUrl}/console/session`, { headers: { cookie: s.cookie } });
    expect(res.status).toBe(200);
    const body = (await res.json()) as any;
    expect(body.csrfToken).toBe(s.csrf);
    expect(body.environment.id).toBe(app.env.id);
    const none = await fetch(`${app.baseUrl}/console/session`);
    expect(none.status).toBe(401);
    expect(await none.json()).toMatchObject({ type: 'unauthorized' });
  });

  it.each([
    ['a wrong key', { key: 'sk_wrong_key_0123456789' }, 401, 'unauthorized'],
    ['no key', {}, 401, 'unauthorized'],
    ['a number for a key', { key: 42 }, 401, 'unauthorized'],
    ['an oversized key', { key: 'k'.repeat(5000) }, 401, 'unauthorized'],
  ])('refuses %s with {type, message}', async (_name, body, status, type) => {
    const res = await fetch(`${app.baseUrl}/console/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(status);
    const json = (await res.json()) as any;
    expect(json.type).toBe(type);
    expect(typeof json.message).toBe('string');
    expect(res.headers.get('set-cookie')).toBeNull();
  });

  it('refuses a body that is not JSON, or not sent as JSON (400), and one over the body limit (413)', async () => {
    const notJson = await fetch(`${app.baseUrl}/console/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"key":',
    });
    expect(notJson.status).toBe(400);
    expect(((await notJson.json()) as any).type).toBe('bad_request');
    const form = await fetch(`${app.baseUrl}/console/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `key=${app.secret}`,
    });
    expect(form.status).toBe(400);
    expect(form.headers.get('set-cookie')).toBeNull();
    const huge = await fetch(`${app.baseUrl}/console/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ key: 'x'.repeat(200 * 1024) }),
    });
    expect(huge.status).toBe(413);
  });

  it('refuses a sign-in posted from another origin', async () => {
    const r = await signIn(app.secret, { origin: 'https://evil.example' });
    expect(r.status).toBe(403);
    expect(r.setCookie).toBeNull();
  });
});

describe('GraphQL with the session cookie', () => {
  it('answers queries and mutations with the CSRF header', async () => {
    const s = await session(app.secret);
    const r = await gqlAs(s, '{ viewer { credentialKind canMutate environment { id name } } }');
    expect(r.status).toBe(200);
    expect(r.body.data.viewer).toEqual({
      credentialKind: 'SECRET',
      canMutate: true,
      environment: { id: app.env.id, name: 'sandbox' },
    });
    const m = await gqlAs(
      s,
      'mutation { createPolicy(input: { name: "Console made", group: EVENT, action: CHALLENGE, conditions: { events: ["$registration"] } }) { id name } }',
    );
    expect(m.codes).toEqual([]);
    expect(m.body.data.createPolicy.name).toBe('Console made');
  });

  it('refuses a request without the CSRF header, or with a wrong one: 403 FORBIDDEN, nothing runs', async () => {
    const s = await session(app.secret);
    const before = (await gqlSecret(app.secret, '{ policies { id } }')).policies.length;
    for (const csrf of [null, '', 'wrong', `${s.csrf}x`]) {
      const r = await gqlAs(
        { cookie: s.cookie, csrf },
        'mutation { createPolicy(input: { name: "CSRF", group: EVENT, action: DENY }) { id } }',
      );
      expect(r.status).toBe(403);
      expect(r.codes).toEqual(['FORBIDDEN']);
      const q = await gqlAs({ cookie: s.cookie, csrf }, '{ environment { id } }');
      expect(q.status).toBe(403);
    }
    expect((await gqlSecret(app.secret, '{ policies { id } }')).policies.length).toBe(before);
  });

  it("refuses another session's CSRF token", async () => {
    const a = await session(app.secret);
    const b = await session(app.secret);
    const r = await gqlAs({ cookie: a.cookie, csrf: b.csrf }, '{ environment { id } }');
    expect(r.status).toBe(403);
  });

  it('refuses an unknown or malformed session cookie with 401', async () => {
    for (const cookie of [
      'rampart_session=nosuchsession',
      'rampart_session=',
      'rampart_session=a"b',
      `rampart_session=${'a'.repeat(200)}`,
    ]) {
      const r = await gqlAs({ cookie, csrf: 'x' }, '{ environment { id } }');
      expect(r.status).toBe(401);
      expect(r.codes).toEqual(['UNAUTHENTICATED']);
    }
  });

  it('lets an analyst session read but never mutate (403 FORBIDDEN, like the analyst key)', async () => {
    const analyst = (
      await app.built.services.environments.addCredential(app.env.id, 'analyst', 'console analyst')
    ).secret;
    const s = await session(analyst);
    expect(s.body).toMatchObject({ credentialKind: 'ANALYST', canMutate: false });
    const r = await gqlAs(s, '{ viewer { credentialKind canMutate } policies { id revision } }');
    expect(r.body.data.viewer).toEqual({ credentialKind: 'ANALYST', canMutate: false });
    const p = r.body.data.policies[0];
    for (const m of [
      'mutation { createPolicy(input: { name: "x", group: EVENT, action: DENY }) { id } }',
      `mutation { updatePolicy(id: "${p.id}", input: { name: "renamed" }) { id } }`,
      `mutation { rollbackPolicy(id: "${p.id}", revision: "${p.revision}") { id } }`,
      'mutation { reportDevice(token: "whatever") { token } }',
      'mutation { purgeUser(userId: "someone") { total } }',
    ]) {
      const res = await gqlAs(s, m);
      expect(res.status).toBe(403);
      expect(res.codes).toEqual(['FORBIDDEN']);
    }
    // A dry run is a query: an analyst may try a draft, not publish it.
    const dry = await gqlAs(
      s,
      `query($d: [PolicyDraftInput!]!) { policyDryRun(drafts: $d, days: 1) { scanned } }`,
      { d: [{ id: p.id, update: { action: 'DENY' } }] },
    );
    expect(dry.codes).toEqual([]);
  });

  it('keeps each session in its own environment', async () => {
    const other = await app.newEnvironment('console-tenant-b');
    await login(other.secret, 'b-only-user', 'fp-b-only');
    await login(app.secret, 'a-only-user', 'fp-a-only');
    await app.built.state.flush();
    const a = await session(app.secret);
    const b = await session(other.secret);
    expect(b.body.environment).toEqual({ id: other.env.id, name: 'console-tenant-b', sandbox: false });
    const aPolicy = (await gqlAs(a, '{ policies { id } }')).body.data.policies[0].id;
    const rb = await gqlAs(
      b,
      `{ viewer { environment { id } } user(id: "a-only-user") { id } policy(id: "${aPolicy}") { id } events(first: 100) { edges { node { userId } } } }`,
    );
    expect(rb.body.data.viewer.environment.id).toBe(other.env.id);
    expect(rb.body.data.user).toBeNull();
    expect(rb.body.data.policy).toBeNull();
    expect(rb.body.data.events.edges.map((e: any) => e.node.userId)).toEqual(['b-only-user']);
    const ra = await gqlAs(a, '{ user(id: "b-only-user") { id } }');
    expect(ra.body.data.user).toBeNull();
    // A mutation through B's session changes B only.
    const rolled = await gqlAs(b, `mutation { archivePolicy(id: "${aPolicy}") { id } }`);
    expect(rolled.codes).toEqual(['NOT_FOUND']);
  });
});

describe('session end', () => {
  it('signs out: DELETE with the CSRF header deletes the session and clears the cookie', async () => {
    const s = await session(app.secret);
    const refused = await fetch(`${app.baseUrl}/console/session`, {
      method: 'DELETE',
      headers: { cookie: s.cookie },
    });
    expect(refused.status).toBe(403);
    expect((await gqlAs(s, '{ environment { id } }')).status).toBe(200);
    const res = await fetch(`${app.baseUrl}/console/session`, {
      method: 'DELETE',
      headers: { cookie: s.cookie, 'x-rampart-csrf': s.csrf },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get('set-cookie')).toMatch(/^rampart_session=; .*Max-Age=0/);
    const after = await gqlAs(s, '{ environment { id } }');
    expect(after.status).toBe(401);
    expect(after.codes).toEqual(['UNAUTHENTICATED']);
  });

  it('ends a session idle past 30 minutes, and deletes it', async () => {
    const s = await session(app.secret);
    offset += 29 * 60_000;
    expect((await gqlAs(s, '{ environment { id } }')).status).toBe(200);
    // Used 29 minutes in: idle for another 29 is fine, 31 is not.
    offset += 29 * 60_000;
    expect((await gqlAs(s, '{ environment { id } }')).status).toBe(200);
    offset += 31 * 60_000;
    const r = await gqlAs(s, '{ environment { id } }');
    expect(r.status).toBe(401);
    expect(r.body.errors?.[0]?.message).toMatch(/expired/);
    const hash = createHash('sha256').update(s.cookie.split('=')[1]).digest('hex');
    expect(await sessions().findOne({ _id: hash as any })).toBeNull();
  });

  it('ends a session 12 hours after sign-in however busy it is', async () => {
    const s = await session(app.secret);
    for (let h = 0; h < 11 * 3 + 2; h++) {
      offset += 20 * 60_000;
      expect((await gqlAs(s, '{ environment { id } }')).status).toBe(200);
    }
    // 11 h 40 min in; two more steps of 20 minutes pass 12 hours.
    offset += 20 * 60_000;
    offset += 20 * 60_000;
    expect((await gqlAs(s, '{ environment { id } }')).status).toBe(401);
  });

  it('sweeps expired sessions from the database', async () => {
    await session(app.secret);
    offset += 13 * 3_600_000;
    expect(await app.built.services.sessions.sweep()).toBeGreaterThan(0);
    expect(await sessions().countDocuments({})).toBe(0);
  });

  it('ends the sessions of a disabled environment (403), and they stay ended once it is enabled again', async () => {
    const env = await app.newEnvironment('console-disabled');
    const s = await session(env.secret);
    await app.built.services.environments.setEnabled(env.env.id, false);
    const r = await gqlAs(s, '{ environment { id } }');
    expect(r.status).toBe(403);
    expect(r.codes).toEqual(['FORBIDDEN']);
    await app.built.services.environments.setEnabled(env.env.id, true);
    expect((await gqlAs(s, '{ environment { id } }')).status).toBe(401);
  });

  it('ends the sessions of a revoked key at their next request', async () => {
    const { secret } = await app.built.services.environments.addCredential(app.env.id, 'secret', 'to revoke');
    const s = await session(secret);
    expect((await gqlAs(s, '{ environment { id } }')).status).toBe(200);
    await app.built.services.environments.revoke(app.env.id, secret);
    const r = await gqlAs(s, '{ environment { id } }');
    expect(r.status).toBe(401);
    expect((await fetch(`${app.baseUrl}/console/session`, { headers: { cookie: s.cookie } })).status).toBe(
      401,
    );
  });
});

describe('the console page', () => {
  it('serves the built application at /console with a strict content security policy', async () => {
    const res = await fetch(`${app.baseUrl}/console`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/text\/html/);
    expect(res.headers.get('content-security-policy')).toMatch(/script-src 'self'/);
    expect(res.headers.get('content-security-policy')).toMatch(/frame-ancestors 'none'/);
    const html = await res.text();
    expect(html).toContain('/console/assets/app.js');
    const js = await fetch(`${app.baseUrl}/console/assets/app.js`);
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toMatch(/javascript/);
    expect((await js.text()).length).toBeGreaterThan(10_000);
    expect((await fetch(`${app.baseUrl}/console/assets/..%2Fpackage.json`)).status).toBe(404);
    expect((await fetch(`${app.baseUrl}/console/assets/other.js`)).status).toBe(404);
  });
});

describe('GraphQL for the console', () => {
  it('dry-runs a draft on stored verdicts: counts before and after, transitions and samples, and changes nothing', async () => {
    for (let i = 0; i < 4; i++) await login(app.secret, `dry-user-${i}`, `fp-dry-${i}`);
    await login(app.secret, 'dry-reg', 'fp-dry-reg', '$registration');
    // A login a sandbox test token forced to allow: the draft would deny it, but it keeps its action.
    await login(app.secret, 'dry-forced', 'test|device:chrome_on_mac|policy.action:allow');
    await app.built.state.flush();
    const policiesBefore = await gqlSecret(app.secret, '{ policies(includeArchived: true) { id revision } }');
    const d = await gqlSecret(
      app.secret,
      `query($d: [PolicyDraftInput!]!) { policyDryRun(drafts: $d, days: 30) { scanned truncated changed before { action count } after { action count } transitions { from to count }
        samples(first: 100) { before after afterPolicy event { id name userId } } } }`,
      {
        d: [
          {
            create: {
              name: 'Deny every login',
              group: 'BEFORE',
              action: 'DENY',
              conditions: { events: ['$login'] },
            },
          },
        ],
      },
    );
    const r = d.policyDryRun;
    const logins = await gqlSecret(
      app.secret,
      '{ events(filter: { name: "$login" }, first: 100) { edges { node { action policy { testToken } } } } }',
    );
    expect(logins.events.edges.filter((e: any) => e.node.policy.testToken).length).toBe(1);
    const allowedLogins = logins.events.edges.filter(
      (e: any) => e.node.action === 'ALLOW' && !e.node.policy.testToken,
    ).length;
    expect(allowedLogins).toBeGreaterThanOrEqual(4);
    const count = (xs: any[], a: string) => xs.find((x) => x.action === a).count;
    expect(r.truncated).toBe(false);
    expect(count(r.after, 'DENY') - count(r.before, 'DENY')).toBe(r.changed);
    expect(r.changed).toBeGreaterThanOrEqual(allowedLogins);
    expect(r.samples.length).toBe(r.changed);
    for (const s of r.samples) {
      expect(s.event.name).toBe('$login');
      expect(s.after).toBe('DENY');
      expect(s.afterPolicy).toBe('Deny every login');
    }
    expect(r.transitions.reduce((n: number, t: any) => n + t.count, 0)).toBe(r.changed);
    expect(r.samples.some((s: any) => s.event.userId === 'dry-reg')).toBe(false);
    expect(r.samples.some((s: any) => s.event.userId === 'dry-forced')).toBe(false);
    expect(await gqlSecret(app.secret, '{ policies(includeArchived: true) { id revision } }')).toEqual(
      policiesBefore,
    );
    // At most maxEvents verdicts are read.
    const capped = await gqlSecret(
      app.secret,
      `query($d: [PolicyDraftInput!]!) { policyDryRun(drafts: $d, days: 30, maxEvents: 2) { scanned truncated } }`,
      { d: [{ create: { name: 'x', group: 'EVENT', action: 'DENY' } }] },
    );
    expect(capped.policyDryRun).toEqual({ scanned: 2, truncated: true });
  });

  it("decides with each device's review state: archiving 'Deny reported devices' frees a reported device's verdicts", async () => {
    const a = await login(app.secret, 'dry-reported', 'fp-dry-reported');
    await login(app.secret, 'dry-reported', 'fp-dry-reported');
    await app.built.state.flush();
    await gqlSecret(app.secret, `mutation { reportDevice(token: "${a.device.token}") { token } }`);
    // The report reaches the dashboards' copy of the device behind the answer (one flush later).
    await app.built.state.flush();
    const policies = (await gqlSecret(app.secret, '{ policies { id name } }')).policies;
    const denyReported = policies.find((p: any) => p.name === 'Deny reported devices').id;
    const r = (
      await gqlSecret(
        app.secret,
        `query($d: [PolicyDraftInput!]!) { policyDryRun(drafts: $d, days: 1) { changed samples(first: 100) { before beforePolicy after event { userId } } } }`,
        {
          d: [{ id: denyReported, archive: true }],
        },
      )
    ).policyDryRun;
    const mine = r.samples.filter((s: any) => s.event.userId === 'dry-reported');
    expect(mine.length).toBe(2);
    for (const s of mine) expect(s).toMatchObject({ before: 'DENY', beforePolicy: 'Deny reported devices' });
    expect(r.samples.every((s: any) => s.event.userId === 'dry-reported')).toBe(true);
  });

  it.each([
    ['0 days', { days: 0 }, 'BAD_USER_INPUT'],
    ['31 days', { days: 31 }, 'BAD_USER_INPUT'],
    ['too many events', { maxEvents: 20_001 }, 'BAD_USER_INPUT'],
    ['no drafts', { d: [] }, 'BAD_USER_INPUT'],
    [
      'a draft with both create and id',
      { d: [{ id: 'x', create: { name: 'x', group: 'EVENT', action: 'DENY' } }] },
      'BAD_USER_INPUT',
    ],
    ['an id without a change', { d: [{ id: 'x' }] }, 'BAD_USER_INPUT'],
    [
      'an unknown signal',
      {
        d: [
          {
            create: {
              name: 'x',
              group: 'EVENT',
              action: 'DENY',
              conditions: { signalsAny: ['no_such_signal'] },
            },
          },
        ],
      },
      'BAD_USER_INPUT',
    ],
    ['an unknown policy', { d: [{ id: 'no-such-policy', update: { action: 'DENY' } }] }, 'NOT_FOUND'],
    ['a wrong-typed days', { days: 'seven' }, 'BAD_USER_INPUT'],
  ])('refuses a dry run with %s', async (_name, vars, code) => {
    const variables = { d: [{ create: { name: 'x', group: 'EVENT', action: 'DENY' } }], days: 7, ...vars };
    const res = await fetch(`${app.baseUrl}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: basic(app.secret) },
      body: JSON.stringify({
        query:
          'query($d: [PolicyDraftInput!]!, $days: Int, $maxEvents: Int) { policyDryRun(drafts: $d, days: $days, maxEvents: $maxEvents) { scanned } }',
        variables,
      }),
    });
    const body = (await res.json()) as any;
    expect(body.errors?.[0]?.extensions?.code).toBe(code);
    expect(body.data?.policyDryRun ?? null).toBeNull();
  });

  it('rolls a policy back to an old revision: a new revision equal to it', async () => {
    const created = (
      await gqlSecret(
        app.secret,
        'mutation { createPolicy(input: { name: "Roll me", group: EVENT, action: CHALLENGE, conditions: { events: ["$login"], riskLevels: [MEDIUM] } }) { id revision } }',
      )
    ).createPolicy;
    await gqlSecret(
      app.secret,
      `mutation { updatePolicy(id: "${created.id}", input: { name: "Rolled", action: DENY, conditions: { countries: ["FR"] } }) { revision } }`,
    );
    const rolled = (
      await gqlSecret(
        app.secret,
        `mutation { rollbackPolicy(id: "${created.id}", revision: "${created.revision}") { id revision name action conditions { events riskLevels countries } revisions { id name action } } }`,
      )
    ).rollbackPolicy;
    expect(rolled.revision).not.toBe(created.revision);
    expect(rolled).toMatchObject({
      name: 'Roll me',
      action: 'CHALLENGE',
      conditions: { events: ['$login'], riskLevels: ['MEDIUM'], countries: null },
    });
    expect(rolled.revisions.map((r: any) => r.name)).toEqual(['Roll me', 'Rolled', 'Roll me']);
    // Unknown revisions, and revisions of another policy, are not found.
    const other = (await gqlSecret(app.secret, '{ policies { id revision } }')).policies.find(
      (p: any) => p.id !== created.id,
    );
    const bad = await fetch(`${app.baseUrl}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: basic(app.secret) },
      body: JSON.stringify({
        query: `mutation { a: rollbackPolicy(id: "${created.id}", revision: "no-such-revision") { id } }`,
      }),
    });
    expect(((await bad.json()) as any).errors[0].extensions.code).toBe('NOT_FOUND');
    const wrongPolicy = await fetch(`${app.baseUrl}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: basic(app.secret) },
      body: JSON.stringify({
        query: `mutation { rollbackPolicy(id: "${created.id}", revision: "${other.revision}") { id } }`,
      }),
    });
    expect(((await wrongPolicy.json()) as any).errors[0].extensions.code).toBe('NOT_FOUND');
  });

  it('lists the privacy jobs of one user', async () => {
    await app.built.services.environments.setPrivacyEmail(app.env.id, 'privacy@example.com');
    await login(app.secret, 'job-user-a', 'fp-job-a');
    await login(app.secret, 'job-user-b', 'fp-job-b');
    await gqlSecret(
      app.secret,
      'mutation { a: requestPrivacyExport(userId: "job-user-a") { id } b: requestPrivacyExport(userId: "job-user-b") { id } }',
    );
    const of = async (u: string) =>
      (
        await gqlSecret(app.secret, `{ privacyJobs(userId: "${u}") { edges { node { userId } } } }`)
      ).privacyJobs.edges.map((e: any) => e.node.userId);
    expect(await of('job-user-a')).toEqual(['job-user-a']);
    expect(await of('job-user-b')).toEqual(['job-user-b']);
    expect(await of('nobody')).toEqual([]);
    expect(
      (await gqlSecret(app.secret, '{ privacyJobs { edges { node { userId } } } }')).privacyJobs.edges.length,
    ).toBeGreaterThanOrEqual(2);
  });

  it('lists the webhook deliveries about one user', async () => {
    await gqlSecret(app.secret, 'mutation { setWebhookUrl(url: "http://127.0.0.1:9/hook") { id } }');
    const a = await login(app.secret, 'hook-user-a', 'fp-hook-a');
    await login(app.secret, 'hook-user-b', 'fp-hook-b');
    await gqlSecret(app.secret, `mutation { reportDevice(token: "${a.device.token}") { token } }`);
    const read = async (u: string) =>
      (
        await gqlSecret(
          app.secret,
          `{ webhookDeliveries(userId: "${u}", first: 50) { edges { node { userId type } } } }`,
        )
      ).webhookDeliveries.edges.map((e: any) => e.node);
    const mine: any[] = await waitFor(
      async () => {
        const found = await read('hook-user-a');
        return found.length > 0 && found;
      },
      { what: 'a webhook delivery about hook-user-a', timeoutMs: 30_000, intervalMs: 100 },
    );
    expect(mine.every((d) => d.userId === 'hook-user-a')).toBe(true);
    expect(await read('hook-user-b')).toEqual([]);
  });
});

describe('over TLS', () => {
  /** Sign in on a listener of the same service, over HTTPS or behind a TLS-terminating proxy; the Set-Cookie answered. */
  async function signInOn(tls: boolean): Promise<string> {
    const dir = mkdtempSync(path.join(tmpdir(), 'rampart-console-tls-'));
    try {
      execFileSync(
        'openssl',
        [
          'req',
          '-x509',
          '-newkey',
          'rsa:2048',
          '-nodes',
          '-keyout',
          path.join(dir, 'key.pem'),
          '-out',
          path.join(dir, 'cert.pem'),
          '-days',
          '1',
          '-subj',
          '/CN=localhost',
          '-addext',
          'subjectAltName=IP:127.0.0.1',
        ],
        { stdio: 'ignore' },
      );
      const cert = readFileSync(path.join(dir, 'cert.pem'));
      const log = createLogger('silent');
      const server = await buildRestServer({
        services: app.built.services,
        log,
        bodyLimit: 100 * 1024,
        tls: tls ? { cert, key: readFileSync(path.join(dir, 'key.pem')) } : undefined,
        trustProxy: tls ? false : ['127.0.0.1'],
        requireHttps: !tls,
        register: async (a) => registerConsole(a, { services: app.built.services, log }),
      });
      await server.listen({ host: '127.0.0.1', port: 0 });
      try {
        const port = (server.server.address() as AddressInfo).port;
        const body = JSON.stringify({ key: app.secret });
        return await new Promise<string>((resolve, reject) => {
          const headers: Record<string, string> = {
            'content-type': 'application/json',
            'content-length': String(Buffer.byteLength(body)),
          };
          if (!tls) headers['x-forwarded-proto'] = 'https';
          const req = (tls ? https : http).request(
            {
              host: '127.0.0.1',
              port,
              path: '/console/session',
              method: 'POST',
              headers,
              ...(tls ? { ca: cert } : {}),
            },
            (res) => {
              res.resume();
              res.on('end', () =>
                res.statusCode === 201
                  ? resolve(String(res.headers['set-cookie'] ?? ''))
                  : reject(new Error(`status ${res.statusCode}`)),
              );
            },
          );
          req.on('error', reject);
          req.end(body);
        });
      } finally {
        await server.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  it('marks the cookie Secure when served over HTTPS', async () => {
    expect(await signInOn(true)).toMatch(/; HttpOnly; SameSite=Strict; .*Secure/);
  });

  it('marks the cookie Secure behind a trusted TLS-terminating proxy', async () => {
    expect(await signInOn(false)).toMatch(/Secure/);
  });
});

describe('failed sign-ins', () => {
  it('are throttled per address like every other failed authentication (429 with Retry-After)', async () => {
    let last = 0;
    let retryAfter: string | null = null;
    for (let i = 0; i < 20 && last !== 429; i++) {
      const res = await fetch(`${app.baseUrl}/console/session`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ key: `sk_guess_${i}_0123456789` }),
      });
      last = res.status;
      retryAfter = res.headers.get('retry-after');
    }
    expect(last).toBe(429);
    expect(Number(retryAfter)).toBeGreaterThan(0);
    // The guesses go on answering 429, while the right key still opens a session: the throttle
    // holds back guesses, not a person who shares the address with the guesser.
    expect((await signIn('sk_guess_more_0123456789')).status).toBe(429);
    expect((await signIn(app.secret)).status).toBe(201);
  });
});
