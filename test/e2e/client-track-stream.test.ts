/**
 * The gRPC client's TrackStream against a scripted Scoring service over loopback: a stream the
 * server refuses part-way, saying which events it took, is resumed with the events not taken
 * (none lost, none sent twice), whether they are its first ones or the trailers list holes; refusals without that trailer, or of a kind that retrying
 * cannot mend, are the caller's, with the count the whole call took; long inputs go out in
 * bounded streams. (The real server's refusals under a hung database: test/integration/fault.test.ts.)
 */
import * as grpc from '@grpc/grpc-js';
import { createRampartClient, RampartError, type RampartClient, type TrackRequest } from '../../src/client';
import { loadRampartProto } from '../../src/grpc/loader';
import type { TrackRequest__Output } from '../../src/grpc/generated/rampart/v1/TrackRequest';
import { ACCEPTED_KEY, ACCEPTED_RANGES_KEY } from '../../src/grpc/metadata-keys';

/** What a scripted stream does once it has received `received` events: go on, or end with an error. */
type Script = (
  stream: number,
  received: number,
) => { code: grpc.status; trailers: Record<string, string> } | null;

let server: grpc.Server;
let client: RampartClient;
let script: Script = () => null;
/** The events each stream took, by the `user.id` the test numbers them with. */
let streams: string[][] = [];

beforeAll(async () => {
  const { proto } = loadRampartProto();
  server = new grpc.Server();
  server.addService(proto.rampart.v1.Scoring.service, {
    TrackStream: (
      call: grpc.ServerReadableStream<TrackRequest__Output, unknown>,
      callback: grpc.sendUnaryData<{ accepted: number }>,
    ) => {
      const n = streams.push([]) - 1;
      const taken = streams[n] as string[];
      let over = false;
      call.on('data', (m: TrackRequest__Output) => {
        if (over) return;
        const refusal = script(n, taken.length);
        if (refusal) {
          over = true;
          const md = new grpc.Metadata();
          for (const [k, v] of Object.entries(refusal.trailers)) md.set(k, v);
          callback({ code: refusal.code, details: `scripted ${grpc.status[refusal.code]}`, metadata: md });
          return;
        }
        taken.push(m.user?.id ?? '');
      });
      call.on('end', () => {
        if (!over) callback(null, { accepted: taken.length });
      });
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  client = createRampartClient({
    address: `127.0.0.1:${port}`,
    secret: 'sk_scripted',
    verdictStreams: 0,
    deadlineMs: 20_000,
  });
});
afterAll(async () => {
  client?.close();
  await new Promise<void>((resolve) => server?.tryShutdown(() => resolve()));
});
beforeEach(() => {
  streams = [];
  script = () => null;
});

const events = (n: number): TrackRequest[] =>
  Array.from({ length: n }, (_, i) => ({ event: '$login.failed', user: { id: `u${i}` } }));
const ids = (n: number) => Array.from({ length: n }, (_, i) => `u${i}`);
async function* slowly(n: number): AsyncGenerator<TrackRequest> {
  for (const e of events(n)) {
    await new Promise((r) => setImmediate(r));
    yield e;
  }
}
const refuse = (code: grpc.status, accepted: number | null, extra: Record<string, string> = {}) => ({
  code,
  trailers: { ...(accepted === null ? {} : { [ACCEPTED_KEY]: String(accepted) }), ...extra },
});

describe('trackStream resumes a stream the server refused part-way', () => {
  it.each([
    ['UNAVAILABLE', grpc.status.UNAVAILABLE, {}],
    ['RESOURCE_EXHAUSTED with retry-after', grpc.status.RESOURCE_EXHAUSTED, { 'retry-after': '0.05' }],
  ])('%s: every event taken once, in order', async (_name, code, extra) => {
    // The first stream takes 37 events, the second 50 more; the rest go through.
    script = (stream, received) =>
      stream === 0 && received === 37
        ? refuse(code, 37, extra)
        : stream === 1 && received === 50
          ? refuse(code, 50, extra)
          : null;
    const retries: { code: string; accepted: number; delayMs: number }[] = [];
    const res = await client.trackStream(slowly(300), {
      onRetry: (r) => retries.push({ code: r.error.codeName, accepted: r.accepted, delayMs: r.delayMs }),
    });
    expect(res.accepted).toBe(300);
    expect(streams.flat()).toEqual(ids(300));
    expect(streams.map((s) => s.length)).toEqual([37, 50, 213]);
    expect(retries.map((r) => [r.code, r.accepted])).toEqual([
      [grpc.status[code], 37],
      [grpc.status[code], 87],
    ]);
    // The server's retry-after when it gives one, else a backoff that starts again after progress.
    expect(retries.map((r) => r.delayMs)).toEqual(
      code === grpc.status.RESOURCE_EXHAUSTED ? [50, 50] : [100, 100],
    );
  });

  it.each([
    // Events are written concurrently: a late one can leave later ones written.
    ['with holes in the ranges', '0-1,3-4,6-9', 8, ['u2', 'u5']],
    ['with no event written', '', 0, ids(10)],
    ['every one written', '0-9', 10, []],
    // A server that lists nothing (or a list that cannot be read): its first events, as counted.
    ['without the ranges', null, 2, ids(10).slice(2)],
    ['with ranges that cannot be read', '0-1,x', 2, ids(10).slice(2)],
    ['with ranges out of order', '3-4,0-1', 2, ids(10).slice(2)],
    ['with ranges past what was sent', '0-1,3-999', 2, ids(10).slice(2)],
  ])(
    'a stream refused %s: sends again exactly the events not listed, in order',
    async (_name, ranges, taken, resent) => {
      script = (stream, received) =>
        stream === 0 && received === 10
          ? refuse(grpc.status.UNAVAILABLE, 2, ranges === null ? {} : { [ACCEPTED_RANGES_KEY]: ranges })
          : null;
      const retries: number[] = [];
      const res = await client.trackStream(slowly(20), { onRetry: (r) => retries.push(r.accepted) });
      expect(res.accepted).toBe(20);
      expect(retries).toEqual([taken]);
      // The second stream carries the events the first did not take, then the rest.
      expect(streams[1]).toEqual([...resent, ...ids(20).slice(10)]);
    },
  );

  it('from an array as from an async iterable, with a refusal before any event was taken', async () => {
    script = (stream, received) =>
      stream === 0 && received === 0 ? refuse(grpc.status.UNAVAILABLE, 0) : null;
    const res = await client.trackStream(events(20));
    expect(res.accepted).toBe(20);
    expect(streams.map((s) => s.length)).toEqual([0, 20]);
  });

  it('sends a long input in streams of at most `chunk` events', async () => {
    const res = await client.trackStream(slowly(25), { chunk: 10 });
    expect(res.accepted).toBe(25);
    expect(streams.map((s) => s.length)).toEqual([10, 10, 5]);
    expect(streams.flat()).toEqual(ids(25));
  });

  it('gives up after eight refusals in a row that took nothing, saying what the call took', async () => {
    script = (stream, received) =>
      stream === 0
        ? null
        : received === 0
          ? refuse(grpc.status.RESOURCE_EXHAUSTED, 0, { 'retry-after': '0' })
          : null;
    let retried = 0;
    const err = (await client
      .trackStream(slowly(15), { chunk: 10, onRetry: () => retried++ })
      .catch((e: unknown) => e)) as RampartError;
    expect(err).toBeInstanceOf(RampartError);
    expect(err.codeName).toBe('RESOURCE_EXHAUSTED');
    expect(retried).toBe(8);
    expect(err.metadata.get(ACCEPTED_KEY)).toEqual(['10']);
    expect(streams.flat()).toEqual(ids(10));
  });
});

describe('trackStream does not retry what it cannot resume safely', () => {
  it.each([
    [
      'UNAVAILABLE without the count taken (the client cannot know what the server took)',
      refuse(grpc.status.UNAVAILABLE, null),
    ],
    ['INVALID_ARGUMENT (an event the server refuses)', refuse(grpc.status.INVALID_ARGUMENT, 4)],
    ['PERMISSION_DENIED', refuse(grpc.status.PERMISSION_DENIED, 4)],
  ])('%s: rejects at once with what the whole call took', async (_name, refusal) => {
    // The first stream (10 events) goes through; the second is refused after 4.
    script = (stream, received) => (stream === 1 && received === 4 ? refusal : null);
    let retried = 0;
    const err = (await client
      .trackStream(slowly(30), { chunk: 10, onRetry: () => retried++ })
      .catch((e: unknown) => e)) as RampartError;
    expect(err).toBeInstanceOf(RampartError);
    expect(err.code).toBe(refusal.code);
    expect(retried).toBe(0);
    expect(err.metadata.get(ACCEPTED_KEY)).toEqual([
      String(refusal.trailers[ACCEPTED_KEY] === undefined ? 10 : 14),
    ]);
    expect(streams.length).toBe(2);
  });

  it('stops when the caller aborts during the wait before a retry, saying what the call took', async () => {
    script = (_stream, received) =>
      received === 3 ? refuse(grpc.status.RESOURCE_EXHAUSTED, 3, { 'retry-after': '10' }) : null;
    const abort = new AbortController();
    const err = (await client
      .trackStream(slowly(10), { signal: abort.signal, onRetry: () => setImmediate(() => abort.abort()) })
      .catch((e: unknown) => e)) as RampartError;
    expect(err).toBeInstanceOf(RampartError);
    expect(err.codeName).toBe('CANCELLED');
    expect(err.metadata.get(ACCEPTED_KEY)).toEqual(['3']);
    expect(streams.length).toBe(1);
  });

  it('gives up at once when the wait would pass the deadline', async () => {
    script = (_stream, received) =>
      received === 3 ? refuse(grpc.status.RESOURCE_EXHAUSTED, 3, { 'retry-after': '60' }) : null;
    let retried = 0;
    const err = (await client
      .trackStream(slowly(10), { onRetry: () => retried++ })
      .catch((e: unknown) => e)) as RampartError;
    expect(err.codeName).toBe('RESOURCE_EXHAUSTED');
    expect(retried).toBe(0);
    expect(err.metadata.get(ACCEPTED_KEY)).toEqual(['3']);
  });
});
