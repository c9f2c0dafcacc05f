/**
 * The event explorer's filters over GraphQL on the real database: by e-mail (as sent or in lower
 * case, failed logins of unknown accounts included), by IPv4 network (/24, /16, /8), and by the
 * policy that decided the verdict; each combined with the environment, never another's events;
 * bad values refused with the field named.
 */
import { call, startTestApp, type TestApp } from '../support/app';
import { serverKind } from '../../src/store/server-kind';

const UA =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/121.0.0.0 Safari/537.36';
let app: TestApp;

beforeAll(async () => {
  app = await startTestApp({ grpc: false });
});
afterAll(async () => {
  await app?.close();
});

async function events(filter: Record<string, unknown>, secret = app.secret) {
  const r = await call(
    app,
    'POST',
    '/graphql',
    {
      query:
        'query($f: EventFilter) { events(filter: $f, first: 50) { edges { node { name email ip policy { id } } } } }',
      variables: { f: filter },
    },
    { secret },
  );
  return r.body as {
    data?: {
      events: {
        edges: {
          node: { name: string; email: string | null; ip: string | null; policy: { id: string } | null };
        }[];
      };
    };
    errors?: { message: string; extensions?: { code?: string; fields?: { field: string }[] } }[];
  };
}
const nodes = async (filter: Record<string, unknown>) =>
  ((await events(filter)).data?.events.edges ?? []).map((e) => e.node);

it('filters by e-mail, network and policy', async () => {
  const send = (body: Record<string, unknown>, ip: string, path = '/v1/track') =>
    call(app, 'POST', path, { ...body, context: { ip, headers: { 'User-Agent': UA } } });
  // A wave of failed logins of unknown accounts: only an e-mail.
  expect(
    (await send({ event: '$login.failed', user: { email: 'Wave-1@Example.com' } }, '81.2.69.10')).status,
  ).toBe(204);
  expect(
    (await send({ event: '$login.failed', user: { email: 'wave-2@example.com' } }, '81.2.70.10')).status,
  ).toBe(204);
  expect(
    (await send({ event: '$login.failed', user: { email: 'wave-1@example.com' } }, '81.3.1.1')).status,
  ).toBe(204);
  const denied = await send(
    {
      event: '$login',
      user: { id: 'u1', email: 'u1@example.com' },
      request_token: 'test|policy.action:deny',
    },
    '2.125.160.216',
    '/v1/risk',
  );
  expect(denied.status).toBe(201);
  const allowed = await send(
    { event: '$login', user: { id: 'u2' }, request_token: 'test|device:d2' },
    '2.125.161.1',
    '/v1/risk',
  );
  expect(allowed.status).toBe(201);
  await app.built.services.track.drain(false);
  await app.built.state.flush();

  expect((await nodes({ email: 'wave-1@example.com' })).map((n) => n.ip).sort()).toEqual([
    '81.2.69.10',
    '81.3.1.1',
  ]);
  expect((await nodes({ email: 'Wave-1@Example.com' })).map((n) => n.ip).sort()).toEqual([
    '81.2.69.10',
    '81.3.1.1',
  ]);
  expect(await nodes({ email: 'nobody@example.com' })).toEqual([]);

  expect((await nodes({ network: '81.2.69.0/24' })).map((n) => n.ip)).toEqual(['81.2.69.10']);
  // A /16 or /8 goes with another filter an index serves (on MongoDB it is one alone as well).
  expect((await nodes({ network: '81.2.0.0/16', name: '$login.failed' })).map((n) => n.ip).sort()).toEqual([
    '81.2.69.10',
    '81.2.70.10',
  ]);
  expect((await nodes({ network: '81.0.0.0/8', name: '$login.failed' })).length).toBe(3);
  expect((await nodes({ network: '81.0.0.0/8', email: 'wave-2@example.com' })).map((n) => n.ip)).toEqual([
    '81.2.70.10',
  ]);
  // 2.125.16x.x is not in 2.12.0.0/16: a prefix of octets, not of characters.
  expect(await nodes({ network: '2.12.0.0/16', name: '$login' })).toEqual([]);
  if ((await serverKind(app.database.db)).indexPushdown) {
    const alone = await events({ network: '81.2.0.0/16' });
    expect(alone.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    expect(alone.errors?.[0]?.extensions?.fields?.[0]?.field).toBe('filter.network');
    expect(JSON.stringify(alone.errors)).toContain('a /24 network');
  } else {
    expect((await nodes({ network: '81.2.0.0/16' })).length).toBe(2);
  }

  const policyId = denied.body.policy.id as string;
  expect((await nodes({ policyId })).map((n) => n.ip)).toEqual(['2.125.160.216']);
  expect(await nodes({ policyId, network: '81.0.0.0/8' })).toEqual([]);

  // Another environment sees none of them.
  const other = await app.newEnvironment('filters-other');
  expect((await events({ email: 'wave-1@example.com' }, other.secret)).data?.events.edges).toEqual([]);
});

it.each([
  ['a host address as a network', { network: '81.2.69.1/24' }, 'filter.network'],
  ['a /20', { network: '81.2.69.0/20' }, 'filter.network'],
  ['an IPv6 network', { network: '2001:db8::/48' }, 'filter.network'],
  ['an octet past 255', { network: '300.2.69.0/24' }, 'filter.network'],
  ['an empty e-mail', { email: '' }, 'filter.email'],
  ['an oversized policy id', { policyId: 'x'.repeat(2000) }, 'filter.policyId'],
])('refuses %s, naming the field', async (_what, filter, field) => {
  const r = await events(filter);
  expect(r.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
  expect(JSON.stringify(r.errors)).toContain(field);
});
