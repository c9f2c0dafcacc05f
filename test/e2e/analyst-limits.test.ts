/**
 * Analyst reads are time-limited in the database (`maxTimeMS`, RAMPART_ANALYST_TIMEOUT_MS): a
 * query that would scan past its limit is stopped there, by the database, and answers
 * DEADLINE_EXCEEDED (504) with a hint, instead of running for minutes beside scoring. (Their
 * own connection pool is wired by the runtime; docs/operations.md.)
 */
import { randomUUID } from 'node:crypto';
import { startTestApp, basic, type TestApp } from '../support/app';

let app: TestApp;
beforeAll(async () => {
  // A limit no scan of this many events can meet.
  app = await startTestApp({ grpc: false, analystTimeoutMs: 1 });
  const at = Date.now() - 3_600_000;
  const events = Array.from({ length: 30_000 }, (_, i) => ({
    _id: randomUUID(),
    envId: app.env.id,
    name: '$login',
    endpoint: 'risk',
    userId: `bulk-${i % 500}`,
    ip: `10.0.${Math.floor(i / 250) % 250}.${i % 250}`,
    action: 'allow',
    risk: 0.1,
    signals: [],
    occurredAt: new Date(at + i),
    receivedAt: new Date(at + i),
  }));
  for (let i = 0; i < events.length; i += 5000)
    await app.database.db.collection('events').insertMany(events.slice(i, i + 5000) as never[]);
});
afterAll(async () => {
  await app?.close();
});

async function gql(query: string) {
  const res = await fetch(`${app.baseUrl}/graphql`, {
    method: 'POST',
    headers: { authorization: basic(app.secret), 'content-type': 'application/json' },
    body: JSON.stringify({ query }),
  });
  return {
    status: res.status,
    body: (await res.json()) as {
      data?: unknown;
      errors?: { message: string; extensions?: { code?: string } }[];
    },
  };
}

it.each([
  ['a count', '{ analytics { total } }'],
  ['a grouping', '{ analytics { top(dimension: IP) { distinct } } }'],
  ['a grouping by signal set', '{ analytics { signals { signal count } } }'],
])('%s over everything stops at its time limit: DEADLINE_EXCEEDED', async (_name, query) => {
  const r = await gql(query);
  expect(r.body.errors?.[0]?.extensions?.code).toBe('DEADLINE_EXCEEDED');
  expect(r.body.errors?.[0]?.message).toMatch(/time limit/);
});

it('scoring is not held by it', async () => {
  const [analysis, verdict] = await Promise.all([
    gql('{ analytics { top(dimension: USER) { distinct } } }'),
    fetch(`${app.baseUrl}/v1/risk`, {
      method: 'POST',
      headers: { authorization: basic(app.secret), 'content-type': 'application/json' },
      body: JSON.stringify({
        event: '$login',
        user: { id: 'scored-meanwhile' },
        context: { ip: '81.2.69.142', headers: { 'User-Agent': 'Mozilla/5.0' } },
      }),
    }),
  ]);
  expect(analysis.body.errors?.[0]?.extensions?.code).toBe('DEADLINE_EXCEEDED');
  expect(verdict.status).toBe(201);
});
