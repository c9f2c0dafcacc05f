/**
 * TrackStream on the real server over loopback: every event stored once when an early event of
 * the stream is late while later ones are written (its trailers list the events written, and the
 * client sends again only the others), and a stream held back while track is behind instead of
 * refused (refused, and resumed, only once it has waited its bound).
 */
import { startTestApp, type TestApp } from '../support/app';
import { eventsOfUser } from '../support/stored';
import { createRampartClient, toStruct, type RampartClient, type TrackRequest } from '../../src/client';
import { Unavailable } from '../../src/core/errors';

/** The longest a track call waits for its write here, and the longest a stream is held back. */
const ACK_MS = 2_000;

let app: TestApp;
let client: RampartClient;
beforeAll(async () => {
  app = await startTestApp({ state: { ackTimeoutMs: ACK_MS } });
  client = createRampartClient({ address: app.grpcAddress, secret: app.secret, deadlineMs: 120_000 });
});
afterAll(async () => {
  client?.close();
  await app?.close();
});

const context = { ip: '81.2.69.142', headers: { 'User-Agent': 'Mozilla/5.0 (X11; Linux x86_64)' } };
const failed = (userId: string, seq: string): TrackRequest => ({
  event: '$login.failed',
  user: { id: userId },
  context,
  properties: toStruct({ seq }),
});

/** The `seq` of every stored event of these users. */
async function storedSeqs(users: readonly string[]): Promise<string[]> {
  await app.built.services.track.drain(false);
  await app.built.state.flush();
  const seqs: string[] = [];
  for (const u of users)
    for (const e of await eventsOfUser(app.database.db, app.env.id, u, 1_000))
      seqs.push(String((e.properties as { seq?: unknown }).seq));
  return seqs.sort();
}

describe('TrackStream stores every event once', () => {
  it('when its first event is late and later ones are written: only the late one is sent again', async () => {
    // The first event's user cannot be read until its caller has stopped waiting (its deadline
    // passed while it was being applied); the events of other users are written meanwhile.
    const users = app.built.services.read.users;
    const load = users.load.bind(users);
    let held = true;
    users.load = async (env, id, deadline) => {
      if (id === 'once-late' && held) {
        held = false;
        // Past the event's deadline (a timer set before this one, for less time, runs first).
        await new Promise((r) => setTimeout(r, ACK_MS + 300));
        throw new Unavailable('the read failed (test)');
      }
      return load(env, id, deadline);
    };
    const retries: { code: string; accepted: number }[] = [];
    try {
      const events = [
        failed('once-late', 'late'),
        ...Array.from({ length: 10 }, (_, i) => failed(`once-${i}`, `e${i}`)),
      ];
      const res = await client.trackStream(events, {
        onRetry: (r) => retries.push({ code: r.error.codeName, accepted: r.accepted }),
      });
      expect(res.accepted).toBe(11);
    } finally {
      users.load = load;
    }
    // Refused once (the late event), having written the ten others: they are not sent again.
    expect(retries).toEqual([{ code: 'UNAVAILABLE', accepted: 10 }]);
    const seqs = await storedSeqs(['once-late', ...Array.from({ length: 10 }, (_, i) => `once-${i}`)]);
    expect(seqs).toEqual(['late', ...Array.from({ length: 10 }, (_, i) => `e${i}`)].sort());
  });
});

/**
 * Run `body` with track's backpressure scripted: at each ask (counted from 1), `held(asked)` says
 * whether the stream's next event is held back; otherwise the real backpressure answers.
 * `waitMs` replaces how long a stream is held before it is refused.
 */
async function withBackpressure(
  held: (asked: number) => boolean,
  body: () => Promise<void>,
  o: { waitMs?: number } = {},
): Promise<number> {
  const track = app.built.services.track;
  const backpressure = track.streamBackpressure.bind(track);
  let asked = 0;
  track.streamBackpressure = () => (held(++asked) ? 'track is behind (test)' : backpressure());
  if (o.waitMs !== undefined)
    Object.defineProperty(track, 'streamWaitMs', { value: o.waitMs, configurable: true });
  try {
    await body();
  } finally {
    track.streamBackpressure = backpressure;
    if (o.waitMs !== undefined) delete (track as { streamWaitMs?: number }).streamWaitMs;
  }
  return asked;
}

describe('TrackStream while track is behind', () => {
  it('holds the stream back, without a refusal, until track catches up', async () => {
    const retries: string[] = [];
    // Held for 25 asks (one every 20 ms), by count: however slow the machine, it is never held
    // long enough to be refused (the bound is lifted to ten minutes here).
    const asked = await withBackpressure(
      (n) => n > 3 && n <= 28,
      async () => {
        const events = Array.from({ length: 20 }, (_, i) => failed('held-1', `h${i}`));
        const res = await client.trackStream(events, { onRetry: (r) => retries.push(r.error.message) });
        expect(res.accepted).toBe(20);
      },
      { waitMs: 600_000 },
    );
    expect(retries).toEqual([]);
    // Asked again while held: more than once per event.
    expect(asked).toBeGreaterThan(20);
    expect(await storedSeqs(['held-1'])).toEqual(Array.from({ length: 20 }, (_, i) => `h${i}`).sort());
  });

  it('refuses it with the reason once held for its bound; the client resumes from the event held', async () => {
    let behind = true;
    const retries: { message: string; accepted: number }[] = [];
    await withBackpressure(
      (n) => behind && n > 7,
      async () => {
        const events = Array.from({ length: 15 }, (_, i) => failed('held-2', `g${i}`));
        const res = await client.trackStream(events, {
          onRetry: (r) => {
            retries.push({ message: r.error.message, accepted: r.accepted });
            behind = false;
          },
        });
        expect(res.accepted).toBe(15);
      },
    );
    expect(retries).toEqual([{ message: expect.stringContaining('track is behind (test)'), accepted: 7 }]);
    expect(await storedSeqs(['held-2'])).toEqual(Array.from({ length: 15 }, (_, i) => `g${i}`).sort());
  });
});
