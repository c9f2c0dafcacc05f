/**
 * The track use case (TrackService) on in-memory fakes: feedback applied through the device
 * review table, rejected payloads kept in the debugger, an event whose reads fail retried on the
 * fake scheduler (no sleep), and acknowledged means stored: a call resolves only once its event
 * is written, is refused (Unavailable) while the writes are behind or the queue's oldest event has
 * waited too long, and an event not applied by its deadline is refused and not kept; one applied
 * but not written by then is refused as NotWrittenYet, which says later whether it was written.
 * Streams are held back (streamBackpressure) before anything is refused.
 */
import type { EventCommand } from '../../../src/core/events/command';
import { Unavailable } from '../../../src/core/errors';
import { NotWrittenYet } from '../../../src/core/track';
import { createFakeServices, type FakeServices } from '../../support/fakes';

const UA =
  'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36';
const context = { ip: '81.2.69.142', headers: { 'User-Agent': UA } };
const login = (userId: string): EventCommand => ({
  event: '$login',
  status: '$succeeded',
  user: { id: userId, email: `${userId}@example.com` },
  context,
  requestToken: 'desktop-fingerprint-0001',
});

/** When `promise` settles: 'done', or the error it was refused with; 'waiting' while it has not. */
function outcome(promise: Promise<void>): { readonly is: 'waiting' | 'done' | Error } {
  const o: { is: 'waiting' | 'done' | Error } = { is: 'waiting' };
  promise.then(
    () => (o.is = 'done'),
    (err: Error) => (o.is = err),
  );
  return o;
}

let s: FakeServices;
beforeEach(() => {
  s = createFakeServices();
});

describe('track', () => {
  it('$challenge.succeeded from a device approves it', async () => {
    const { principal, env } = await s.environment();
    const v = await s.verdicts.evaluate(principal, 'risk', login('t1'));
    await s.track.accept(principal, {
      event: '$challenge.succeeded',
      userId: 't1',
      context,
      requestToken: 'desktop-fingerprint-0001',
    });
    const device = await s.devices.get(env.id, v.device?.token ?? '');
    expect(device.feedback).toBe('approved');
    expect(device.riskScore).toBe(0);
    expect(s.events.all.map((e) => [e.name, e.action])).toEqual([
      ['$login.succeeded', 'allow'],
      ['$challenge.succeeded', null],
    ]);
  });

  it('keeps what it cannot take in the debugger, with the reason and the user it names', async () => {
    const { principal } = await s.environment();
    await s.track.receive(principal, {
      decode: () => ({ event: 42, userId: 't2' }),
      raw: '{"event":42,"user_id":"t2"}',
    });
    await s.track.accept(principal, { event: '$review.escalated', deviceToken: 'no-such-device', context });
    expect(s.debuggerLog.all.map((r) => [r.userId, r.fields.map((f) => f.field)])).toEqual([
      ['t2', ['event']],
      [null, ['device_token']],
    ]);
    expect(s.events.all).toEqual([]);
  });

  it('retries an event whose reads fail, on the scheduler, until the state is back', async () => {
    const { principal, env } = await s.environment();
    s.state.unreachable = true;
    const tracked = outcome(s.track.accept(principal, { event: '$login.failed', userId: 't3', context }));
    await s.time.settle();
    expect(s.events.all).toEqual([]);
    expect(tracked.is).toBe('waiting');
    s.state.unreachable = false;
    await s.time.advance(1000);
    await s.track.drain(false);
    expect(tracked.is).toBe('done');
    expect(s.events.all.map((e) => e.userId)).toEqual(['t3']);
    expect((await s.users.load(env.id, 't3'))?.profile.userId).toBe('t3');
  });

  it('answers only once the event is written', async () => {
    const { principal } = await s.environment();
    s.state.writesHeld = true;
    const tracked = outcome(s.track.accept(principal, { event: '$login.failed', userId: 't4', context }));
    await s.time.settle();
    // Applied (stored in memory) but not written: not answered yet.
    expect(s.events.all.map((e) => e.userId)).toEqual(['t4']);
    expect(tracked.is).toBe('waiting');
    s.state.writesDone();
    await s.time.settle();
    expect(tracked.is).toBe('done');
  });

  it('is refused while the writes are a second behind, and keeps nothing then', async () => {
    const { principal } = await s.environment();
    s.state.refusing = 'the database is behind';
    await expect(
      s.track.accept(principal, { event: '$login.failed', userId: 't5', context }),
    ).rejects.toBeInstanceOf(Unavailable);
    await expect(
      s.track.receive(principal, { decode: () => ({ event: 42, userId: 't5' }), raw: '{"event":42}' }),
    ).rejects.toBeInstanceOf(Unavailable);
    expect(s.events.all).toEqual([]);
    expect(s.debuggerLog.all).toEqual([]);
    s.state.refusing = null;
    await s.track.accept(principal, { event: '$login.failed', userId: 't5', context });
    expect(s.events.all.map((e) => e.userId)).toEqual(['t5']);
  });

  it('refuses an event not applied by its deadline (not kept), and new events while the oldest waiting one has waited a second', async () => {
    const { principal } = await s.environment();
    s.state.unreachable = true;
    const first = outcome(s.track.accept(principal, { event: '$login.failed', userId: 't6', context }));
    await s.time.advance(999);
    await s.time.settle();
    // The queue's oldest event has waited under a second: new ones still come in.
    const second = outcome(s.track.accept(principal, { event: '$login.failed', userId: 't7', context }));
    await s.time.advance(1);
    await s.time.settle();
    await expect(
      s.track.accept(principal, { event: '$login.failed', userId: 't8', context }),
    ).rejects.toThrow(/track is behind/);
    // Still unreachable at the caller's deadline (2 s): refused, and not applied later.
    await s.time.advance(2_000);
    await s.time.settle();
    expect(first.is).toBeInstanceOf(Unavailable);
    expect(second.is).toBeInstanceOf(Unavailable);
    s.state.unreachable = false;
    await s.time.advance(1_000);
    await s.track.drain(false);
    expect(s.events.all).toEqual([]);
  });

  it('tells a caller whose event was applied but not written by its deadline that it may still be, then that it was', async () => {
    const { principal } = await s.environment();
    s.state.writesHeld = true;
    const refused = s.track
      .accept(principal, { event: '$login.failed', userId: 't9', context })
      .catch((e: unknown) => e);
    await s.time.advance(2_000);
    await s.time.settle();
    const err = (await refused) as NotWrittenYet;
    expect(err).toBeInstanceOf(NotWrittenYet);
    // Not written yet, however long: the queue keeps it until it is.
    const written = outcome(err.written.then(() => undefined));
    await s.time.advance(60_000);
    await s.time.settle();
    expect(written.is).toBe('waiting');
    s.state.writesDone();
    await expect(err.written).resolves.toBe(true);
    expect(s.events.all.map((e) => e.userId)).toEqual(['t9']);
  });

  it('holds a stream back while the queue or the writes are behind, and refuses it only when shutting down', async () => {
    const { principal } = await s.environment();
    expect(s.track.streamBackpressure()).toBeNull();
    expect(s.track.streamWaitMs).toBe(2_000);
    // The oldest waiting event at half the bound (a second): the stream waits; new events on
    // other doors still come in until the bound itself.
    s.state.unreachable = true;
    const waiting = outcome(s.track.accept(principal, { event: '$login.failed', userId: 't11', context }));
    await s.time.advance(499);
    await s.time.settle();
    expect(s.track.streamBackpressure()).toBeNull();
    await s.time.advance(1);
    expect(s.track.streamBackpressure()).toBe('track is behind (its oldest event has waited 500 ms)');
    expect(() => s.track.admitNow()).not.toThrow();
    s.state.unreachable = false;
    await s.time.advance(1_000);
    await s.track.drain(false);
    expect(waiting.is).toBe('done');
    expect(s.track.streamBackpressure()).toBeNull();
    // The writes behind.
    s.state.refusing = 'the database is behind';
    expect(s.track.streamBackpressure()).toBe('the writes are behind');
    s.state.refusing = null;
    // Shutting down: nothing to wait for.
    await s.track.drain(true);
    expect(() => s.track.streamBackpressure()).toThrow(Unavailable);
  });
});
