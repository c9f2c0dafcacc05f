/**
 * The track use case (TrackService) on in-memory fakes: feedback applied through the device
 * review table, rejected payloads kept in the debugger, and an event whose reads fail retried on
 * the fake scheduler (no sleep).
 */
import type { EventCommand } from '../../../src/core/events/command';
import { createFakeServices, type FakeServices } from '../../support/fakes';

const UA = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36';
const context = { ip: '81.2.69.142', headers: { 'User-Agent': UA } };
const login = (userId: string): EventCommand => ({ event: '$login', status: '$succeeded', user: { id: userId, email: `${userId}@example.com` }, context, requestToken: 'desktop-fingerprint-0001' });

let s: FakeServices;
beforeEach(() => {
  s = createFakeServices();
});

describe('track', () => {
  it('$challenge.succeeded from a device approves it', async () => {
    const { principal, env } = await s.environment();
    const v = await s.verdicts.evaluate(principal, 'risk', login('t1'));
    s.track.accept(principal, { event: '$challenge.succeeded', userId: 't1', context, requestToken: 'desktop-fingerprint-0001' });
    await s.track.drain(false);
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
    s.track.receive(principal, { decode: () => ({ event: 42, userId: 't2' }), raw: '{"event":42,"user_id":"t2"}' });
    s.track.accept(principal, { event: '$review.escalated', deviceToken: 'no-such-device', context });
    await s.track.drain(false);
    expect(s.debuggerLog.all.map((r) => [r.userId, r.fields.map((f) => f.field)])).toEqual([
      ['t2', ['event']],
      [null, ['device_token']],
    ]);
    expect(s.events.all).toEqual([]);
  });

  it('retries an event whose reads fail, on the scheduler, until the state is back', async () => {
    const { principal, env } = await s.environment();
    s.state.unreachable = true;
    s.track.accept(principal, { event: '$login.failed', userId: 't3', context });
    await s.time.settle();
    expect(s.events.all).toEqual([]);
    expect(s.time.pending).toBe(1);
    s.state.unreachable = false;
    await s.time.advance(1000);
    await s.track.drain(false);
    expect(s.events.all.map((e) => e.userId)).toEqual(['t3']);
    expect((await s.users.load(env.id, 't3'))?.profile.userId).toBe('t3');
  });
});
