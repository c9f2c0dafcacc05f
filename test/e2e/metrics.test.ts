/**
 * GET /metrics: Prometheus text with requests, verdicts, the state cache, the write queue, its
 * flushes and the track queue; behind a bearer token when one is configured.
 */
import { startTestApp, call, type TestApp } from '../support/app';

const TOKEN = 'metrics-token-0123456789';
let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ grpc: false, metricsToken: TOKEN });
});
afterAll(async () => {
  await app?.close();
});

const context = {
  ip: '81.2.69.142',
  headers: {
    'User-Agent':
      'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36',
  },
};

async function scrape(token: string | null): Promise<{ status: number; text: string }> {
  const res = await fetch(`${app.baseUrl}/metrics`, {
    headers: token ? { authorization: `Bearer ${token}` } : {},
  });
  return { status: res.status, text: await res.text() };
}

/** The value of one sample line, e.g. `rampart_verdicts_total{...} 3`. */
function sample(text: string, prefix: string): number {
  const line = text.split('\n').find((l) => l.startsWith(prefix));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : NaN;
}

describe('GET /metrics', () => {
  it('needs the bearer token when one is configured', async () => {
    expect((await scrape(null)).status).toBe(401);
    expect((await scrape('wrong-token-0123456789')).status).toBe(401);
    expect((await scrape(TOKEN)).status).toBe(200);
  });

  it('counts requests, verdicts, cache reads, flushes and queues', async () => {
    for (let i = 0; i < 3; i++)
      expect(
        (await call(app, 'POST', '/v1/risk', { event: '$login', user: { id: 'metrics-1' }, context })).status,
      ).toBe(201);
    expect(
      (await call(app, 'POST', '/v1/track', { event: '$login.failed', user_id: 'metrics-1', context }))
        .status,
    ).toBe(204);
    await app.built.services.track.drain(false);

    const { status, text } = await scrape(TOKEN);
    expect(status).toBe(200);
    expect(sample(text, 'rampart_verdicts_total{endpoint="risk",action="allow",degraded="false"}')).toBe(3);
    expect(
      sample(text, 'rampart_request_duration_seconds_count{door="rest",route="/v1/risk",status="201"}'),
    ).toBe(3);
    expect(
      sample(text, 'rampart_request_duration_seconds_count{door="rest",route="/v1/track",status="204"}'),
    ).toBe(1);
    expect(sample(text, 'rampart_verdict_duration_seconds_count{endpoint="risk"}')).toBe(3);
    // The first verdict knew the new user absent without a look-up (its collection's ids were read
    // at start); the next ones read it from the cache.
    expect(
      sample(text, 'rampart_state_reads_total{collection="users",outcome="absent"}'),
    ).toBeGreaterThanOrEqual(1);
    expect(
      sample(text, 'rampart_state_reads_total{collection="users",outcome="hit"}'),
    ).toBeGreaterThanOrEqual(2);
    expect(sample(text, 'rampart_state_flush_duration_seconds_count{outcome="ok"}')).toBeGreaterThanOrEqual(
      1,
    );
    expect(sample(text, 'rampart_state_flushed_writes_total{kind="insert"}')).toBeGreaterThanOrEqual(4);
    // Every event is written (BSON): more bytes than documents.
    expect(sample(text, 'rampart_state_flushed_bytes_total{collection="events"}')).toBeGreaterThan(4 * 100);
    expect(sample(text, 'rampart_state_flushed_bytes_total{collection="users"}')).toBeGreaterThan(0);
    expect(sample(text, 'rampart_state_write_backlog')).toBe(0);
    expect(sample(text, 'rampart_track_queue_depth')).toBe(0);
    expect(sample(text, 'rampart_state_cached_documents')).toBeGreaterThan(0);
    expect(sample(text, 'rampart_process_resident_memory_bytes')).toBeGreaterThan(0);
    // Nothing about tenants or users in any label.
    expect(text).not.toContain('metrics-1');
    expect(text).not.toContain(app.env.id);
  });
});
