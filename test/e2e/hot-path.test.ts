/**
 * What a verdict costs the database, counted on the wire (the driver's command monitoring): a
 * user seen before, from a known address and device, is answered without a single database
 * command; a new one needs at most one look-up of its user and one of its velocity counters;
 * everything a verdict writes goes behind the answer in batches, so a burst of verdicts costs far
 * fewer commands than verdicts.
 */
import type { CommandStartedEvent } from 'mongodb';
import { call, startTestApp, type TestApp } from '../support/app';

const UA =
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15';
const body = (user: string, ip = '81.2.69.142') => ({
  event: '$login',
  user: { id: user, email: `${user}@example.com` },
  request_token: `${user}-device`,
  context: { ip, headers: { 'User-Agent': UA } },
});

let app: TestApp;
let recording: CommandStartedEvent[] | null = null;
beforeAll(async () => {
  // Writes are flushed by size and by the test, never by the clock: how many write commands a
  // burst costs must not depend on how fast a loaded machine runs it.
  app = await startTestApp({
    grpc: false,
    authCacheMs: 60_000,
    state: { flushIntervalMs: 600_000 },
    monitorCommands: (e) => recording?.push(e),
  });
  // Credentials and the policy set are cached after the first call.
  expect((await call(app, 'POST', '/v1/risk', body('warm-up'))).status).toBe(201);
  await app.built.state.flush();
});
afterAll(async () => {
  await app?.close();
});

/**
 * Commands of the background workers, not of any verdict: the webhook outbox's poll, the privacy
 * sweeper, and the policy set's and the lists' refresh once a second (a burst slowed down by a
 * loaded machine sees a few of those).
 */
const BACKGROUND = new Set([
  'policy_sets',
  'policy_revisions',
  'list_sets',
  'list_items',
  'webhook_outbox',
  'webhook_deliveries',
  'webhook_claims',
  'webhook_dedupe',
  'privacy_jobs',
  'privacy_exports',
]);
const background = (e: CommandStartedEvent) =>
  BACKGROUND.has(String((e.command as Record<string, unknown>)[e.commandName]));

/** The commands sent while `f` runs, by name and collection (the write-behind flushes excluded). */
async function readsDuring(f: () => Promise<unknown>): Promise<string[]> {
  await app.built.state.flush();
  recording = [];
  await f();
  const seen = recording;
  recording = null;
  return seen
    .filter((e) => !['insert', 'update', 'delete'].includes(e.commandName) && !background(e))
    .map((e) => `${e.commandName} ${String((e.command as Record<string, unknown>)[e.commandName])}`);
}

it('answers a known user on a known device and address without any database command', async () => {
  expect((await call(app, 'POST', '/v1/risk', body('known'))).status).toBe(201);
  expect(await readsDuring(() => call(app, 'POST', '/v1/risk', body('known')))).toEqual([]);
});

it('looks a new user up with at most one command for the user and one for the velocity counters', async () => {
  const reads = await readsDuring(async () =>
    expect((await call(app, 'POST', '/v1/risk', body('newcomer', '81.2.69.160'))).status).toBe(201),
  );
  expect(reads.length).toBeLessThanOrEqual(2);
  expect(reads.every((r) => r === 'find users' || r === 'find counters')).toBe(true);
});

it('looks up no velocity window of a new address, device or hour on a database only it has written', async () => {
  // The suite's embedded database is this process's alone (created-here.ts): the windows of an
  // address it never saw cannot exist, so only the e-mail's account and the population are asked.
  if (!app.built.state.wholeDocuments) return;
  await app.built.state.flush();
  recording = [];
  expect((await call(app, 'POST', '/v1/risk', body('stranger', '203.0.113.77'))).status).toBe(201);
  const asked = recording
    .filter((e) => e.commandName === 'find' && (e.command as Record<string, unknown>).find === 'counters')
    .flatMap((e) => (e.command as { filter: { _id: { $in: string[] } } }).filter._id.$in);
  recording = null;
  expect(asked.filter((id) => decodeURIComponent(id).includes(':w:'))).toEqual([]);
});

it('costs at most three database commands per verdict for a burst of new users, writes included', async () => {
  await app.built.state.flush();
  recording = [];
  const startedAt = Date.now();
  const answers = await Promise.all(
    Array.from({ length: 60 }, (_, i) =>
      call(app, 'POST', '/v1/risk', body(`burst-${i}`, `81.2.69.${i + 1}`)),
    ),
  );
  await app.built.state.flush();
  const endedAt = Date.now();
  const seen = recording.filter((e) => !background(e));
  recording = null;
  expect(answers.map((a) => a.status)).toEqual(answers.map(() => 201));
  // Each verdict writes at least four documents (event, user, counter, the new device's copy).
  // The overview's rollups are read once per new minute (its documents, before they are first
  // written whole), not per verdict: a burst that crosses a minute boundary meets those.
  const isRollups = (e: CommandStartedEvent) => (e.command as Record<string, unknown>).find === 'rollups';
  const minutesCrossed = Math.floor(endedAt / 60_000) - Math.floor(startedAt / 60_000);
  expect(seen.filter((e) => e.commandName === 'find' && isRollups(e)).length).toBeLessThanOrEqual(
    2 * minutesCrossed,
  );
  const finds = seen.filter((e) => e.commandName === 'find' && !isRollups(e));
  const reads = finds.filter((e) =>
    ['users', 'counters'].includes(String((e.command as Record<string, unknown>).find)),
  ).length;
  const writes = seen.filter((e) => e.commandName === 'insert' || e.commandName === 'update').length;
  // At most a look-up of the user and one of the counters each (fewer when requests share a
  // turn of the event loop), and the writes in a few batches.
  expect(reads).toBeLessThanOrEqual(2 * 60);
  expect(finds.length).toBe(reads);
  expect(writes).toBeLessThanOrEqual(60);
  expect(seen.length).toBeLessThanOrEqual(3 * 60);
  const written = seen
    .filter((e) => e.commandName === 'insert')
    .reduce((n, e) => n + ((e.command as { documents?: unknown[] }).documents?.length ?? 0), 0);
  expect(written).toBeGreaterThanOrEqual(60 * 4);
});
