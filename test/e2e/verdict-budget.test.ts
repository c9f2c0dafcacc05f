/**
 * The verdict budget: a verdict never waits longer than its budget for its state. Here the
 * budget is zero, so a user whose state is not cached yet is answered at once from what is at
 * hand, marked `degraded`; the look-up goes on and fills the cache, so the next verdict for the
 * same user is complete. Nothing the degraded verdict learnt is lost.
 */
import { startTestApp, call, type TestApp } from '../support/app';
import { waitFor } from '../support/wait';

let app: TestApp;
beforeAll(async () => {
  // No ids read at start: a user never seen is looked up, as one the database holds but the cache
  // does not (with them, a new user is known absent at once and never degraded: known-ids.test.ts).
  app = await startTestApp({ grpc: false, verdictBudgetMs: 0, state: { knownIdsMax: 0 } });
});
afterAll(async () => {
  await app?.close();
});

const context = {
  ip: '81.2.69.142',
  headers: {
    'User-Agent':
      'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36',
    'Accept-Language': 'en',
  },
};
const risk = (user: string) =>
  call(app, 'POST', '/v1/risk', {
    event: '$login',
    user: { id: user },
    request_token: `fp-${user}`,
    context,
  });

describe('verdict budget', () => {
  it('answers a cold user degraded at once, and the next verdict in full; both tokens name one device', async () => {
    const first = await risk('budget-1');
    expect(first.status).toBe(201);
    expect(first.body.degraded).toBe(true);
    expect(first.body.device.token).toMatch(/^[A-Za-z0-9_-]{32,}$/);

    // The look-up the first verdict started fills the cache; then verdicts are complete again.
    const second = await waitFor(
      async () => {
        const r = await risk('budget-1');
        return !r.body.degraded && r;
      },
      { what: 'a verdict for budget-1 that is not degraded', timeoutMs: 30_000, intervalMs: 10 },
    );
    expect(second.body.degraded).toBe(false);

    await app.built.state.flush();
    const listed = await call(app, 'GET', '/v1/users/budget-1/devices');
    expect(listed.body.total_count).toBe(1);
    const device = listed.body.data[0];
    for (const token of [first.body.device.token, second.body.device.token]) {
      const d = await call(app, 'GET', `/v1/devices/${token}`);
      expect(d.status).toBe(200);
      expect(d.body.token).toBe(device.token);
    }
  });

  it('records the degraded flag on the stored event (GraphQL)', async () => {
    const first = await risk('budget-2');
    expect(first.body.degraded).toBe(true);
    await app.built.state.flush();
    const q = await call(app, 'POST', '/graphql', {
      query: '{ events(filter: { userId: "budget-2" }, first: 5) { edges { node { degraded action } } } }',
    });
    expect(q.status).toBe(200);
    expect(q.body.data.events.edges.map((e: { node: { degraded: boolean } }) => e.node.degraded)).toContain(
      true,
    );
  });
});
