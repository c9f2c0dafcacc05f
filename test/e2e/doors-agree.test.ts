/**
 * Use cases that all three doors offer answer the same on each, because each door calls the one
 * core function: the current device of a user's device list (also when `cid` is one of Rampart's
 * client tokens), and privacy requests by user id or e-mail address (every matching user, a job
 * each; an e-mail that names nobody is not found, as an unknown user id is).
 */
import { startTestApp, call, type TestApp } from '../support/app';
import { failure } from '../support/grpc';
import { LAPTOP_UA, laptopComponents } from '../support/components';
import { createRampartClient, type RampartClient } from '../../src/client';

let app: TestApp;
let client: RampartClient;
beforeAll(async () => {
  app = await startTestApp();
  client = createRampartClient({ address: app.grpcAddress, secret: app.secret, deadlineMs: 10_000 });
  await app.built.services.environments.setPrivacyEmail(app.env.id, 'privacy@example.com');
});
afterAll(async () => {
  client?.close();
  await app?.close();
});

const context = {
  ip: '81.2.69.142',
  headers: { 'User-Agent': LAPTOP_UA, Accept: 'text/html', 'Accept-Language': 'en-GB' },
};

async function gql(query: string, variables: Record<string, unknown> = {}) {
  const r = await call(app, 'POST', '/graphql', { query, variables });
  return r.body as {
    data?: Record<string, any> | null;
    errors?: { message: string; extensions: { code: string } }[];
  };
}

/** What the browser script does: a token for the laptop's components, from the collector. */
async function clientToken(): Promise<string> {
  const r = await call(
    app,
    'POST',
    '/v1/client/token',
    { publishable_key: app.env.publishableKey, components: laptopComponents() },
    { secret: null, headers: { 'content-type': 'text/plain', origin: 'https://shop.example' } },
  );
  expect(r.status).toBe(201);
  return r.body.token as string;
}

async function login(user: string, email: string): Promise<void> {
  const r = await call(app, 'POST', '/v1/risk', { event: '$login', user: { id: user, email }, context });
  expect(r.status).toBe(201);
}

describe('the current device of a device list', () => {
  it.each([
    ['a plain client id', async () => 'plain-fingerprint-of-the-laptop'],
    [
      "one of Rampart's client tokens (the page forwarded it; the device is named by the token's device key)",
      clientToken,
    ],
  ])(
    'is marked on REST (cid and client_id) and gRPC (client_id) alike, for %s',
    async (_name, fingerprint) => {
      const user = `current-${Math.random().toString(36).slice(2)}`;
      const used = await fingerprint();
      const r = await call(app, 'POST', '/v1/risk', {
        event: '$login',
        user: { id: user },
        request_token: used,
        context,
      });
      expect(r.status).toBe(201);
      const other = await call(app, 'POST', '/v1/risk', {
        event: '$login',
        user: { id: user },
        request_token: 'another-browser',
        context,
      });
      const mine = r.body.device.token as string;
      expect(other.body.device.token).not.toBe(mine);

      // The page asks again with a token it collected now (single use does not matter for a listing).
      const now = used.startsWith('rpt1.') ? await clientToken() : used;
      for (const q of ['cid', 'client_id']) {
        const list = await call(app, 'GET', `/v1/users/${user}/devices?${q}=${encodeURIComponent(now)}`);
        expect(list.status).toBe(200);
        expect(
          list.body.data
            .filter((d: { is_current_device: boolean }) => d.is_current_device)
            .map((d: { token: string }) => d.token),
        ).toEqual([mine]);
      }
      const viaGrpc = await client.listUserDevices({ userId: user, clientId: now });
      expect(viaGrpc.devices.filter((d) => d.isCurrentDevice).map((d) => d.token)).toEqual([mine]);

      // Without a cid, or with one of no device of the user, nothing is current.
      for (const path of [`/v1/users/${user}/devices`, `/v1/users/${user}/devices?cid=someone-else`]) {
        const none = await call(app, 'GET', path);
        expect(none.body.data.some((d: { is_current_device: boolean }) => d.is_current_device)).toBe(false);
      }
      expect(
        (await client.listUserDevices({ userId: user, clientId: 'someone-else' })).devices.some(
          (d) => d.isCurrentDevice,
        ),
      ).toBe(false);
    },
  );

  it('is not marked by a forged client token', async () => {
    const user = 'current-forged';
    const token = await clientToken();
    await call(app, 'POST', '/v1/risk', {
      event: '$login',
      user: { id: user },
      request_token: token,
      context,
    });
    const [head, claims] = token.split('.');
    const forged = `${head}.${claims}.${'A'.repeat(43)}`;
    const list = await call(app, 'GET', `/v1/users/${user}/devices?cid=${encodeURIComponent(forged)}`);
    expect(list.status).toBe(200);
    expect(list.body.data.some((d: { is_current_device: boolean }) => d.is_current_device)).toBe(false);
  });
});

describe('privacy requests', () => {
  const shared = 'shared-address@example.com';
  beforeAll(async () => {
    for (const user of ['privacy-a', 'privacy-b']) await login(user, shared);
  });

  it('by e-mail start a job for every matching user, on every door', async () => {
    const rest = await call(app, 'POST', '/v1/privacy/users', {
      identifier: shared,
      identifier_type: '$email',
    });
    expect(rest.status).toBe(202);
    expect(rest.body.jobs.map((j: { user_id: string }) => j.user_id).sort()).toEqual([
      'privacy-a',
      'privacy-b',
    ]);
    // The first job is still the body itself (the documented 202).
    expect(rest.body).toMatchObject({
      id: rest.body.jobs[0].id,
      status: 'pending',
      expires_at: rest.body.jobs[0].expires_at,
    });

    const grpc = await client.requestAccess({ email: shared });
    expect(grpc.jobs.map((j) => j.userId).sort()).toEqual(['privacy-a', 'privacy-b']);

    const graphql = await gql(
      'mutation($email: String) { requestPrivacyExports(email: $email) { id userId status } }',
      { email: shared },
    );
    expect(graphql.errors).toBeUndefined();
    expect(graphql.data?.requestPrivacyExports.map((j: { userId: string }) => j.userId).sort()).toEqual([
      'privacy-a',
      'privacy-b',
    ]);
  });

  it('by user id start one job, on every door', async () => {
    const rest = await call(app, 'POST', '/v1/privacy/users/privacy-a');
    expect(rest.status).toBe(202);
    expect(rest.body.jobs.map((j: { user_id: string }) => j.user_id)).toEqual(['privacy-a']);
    expect((await client.requestAccess({ userId: 'privacy-a' })).jobs.map((j) => j.userId)).toEqual([
      'privacy-a',
    ]);
    const graphql = await gql('mutation { requestPrivacyExports(userId: "privacy-a") { userId } }');
    expect(graphql.data?.requestPrivacyExports).toEqual([{ userId: 'privacy-a' }]);
  });

  it('naming nobody are not found, on every door', async () => {
    for (const body of [
      { identifier: 'nobody@example.com', identifier_type: '$email' },
      { identifier: 'nobody-at-all', identifier_type: '$id' },
    ]) {
      const rest = await call(app, 'POST', '/v1/privacy/users', body);
      expect(rest.status).toBe(404);
      expect(rest.body.type).toBe('not_found');
    }
    expect((await failure(client.requestAccess({ email: 'nobody@example.com' }))).codeName).toBe('NOT_FOUND');
    expect((await failure(client.requestAccess({ userId: 'nobody-at-all' }))).codeName).toBe('NOT_FOUND');
    for (const args of ['email: "nobody@example.com"', 'userId: "nobody-at-all"']) {
      const graphql = await gql(`mutation { requestPrivacyExports(${args}) { id } }`);
      expect(graphql.errors?.[0]?.extensions.code).toBe('NOT_FOUND');
    }
  });

  it('name one user by exactly one identifier, on every door', async () => {
    expect((await call(app, 'POST', '/v1/privacy/users', {})).status).toBe(422);
    expect((await failure(client.requestAccess({}))).codeName).toBe('INVALID_ARGUMENT');
    for (const args of ['', 'userId: "privacy-a", email: "x@example.com"']) {
      const graphql = await gql(`mutation { requestPrivacyExports${args ? `(${args})` : ''} { id } }`);
      expect(graphql.errors?.[0]?.extensions.code).toBe('BAD_USER_INPUT');
    }
  });

  it('purge by e-mail every matching user, on every door, and purging nobody is not an error', async () => {
    const address = 'purge-me@example.com';
    for (const door of ['rest', 'grpc', 'graphql'] as const) {
      for (const user of [`purge-${door}-1`, `purge-${door}-2`]) await login(user, address);
      if (door === 'rest')
        expect(
          (await call(app, 'DELETE', '/v1/privacy/users', { identifier: address, identifier_type: '$email' }))
            .status,
        ).toBe(202);
      if (door === 'grpc') expect((await client.purge({ email: address })).purgedUsers).toBe(2);
      if (door === 'graphql') {
        const r = await gql('mutation($email: String) { purgeUsers(email: $email) { userId total } }', {
          email: address,
        });
        expect(r.data?.purgeUsers.map((p: { userId: string }) => p.userId).sort()).toEqual([
          `purge-${door}-1`,
          `purge-${door}-2`,
        ]);
      }
      for (const user of [`purge-${door}-1`, `purge-${door}-2`])
        expect((await call(app, 'GET', `/v1/users/${user}/devices`)).status).toBe(404);
    }
    expect(
      (await call(app, 'DELETE', '/v1/privacy/users', { identifier: address, identifier_type: '$email' }))
        .status,
    ).toBe(202);
    expect((await client.purge({ email: address })).purgedUsers).toBe(0);
    expect(
      (await gql('mutation { purgeUsers(email: "purge-me@example.com") { userId } }')).data?.purgeUsers,
    ).toEqual([]);
  });
});
