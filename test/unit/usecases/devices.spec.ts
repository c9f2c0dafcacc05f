/** The device use cases (DeviceService) on in-memory fakes: listing with the current device, approve, report. */
import { NotFound } from '../../../src/core/errors';
import { createFakeServices, type FakeServices } from '../../support/fakes';

const UA =
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1';
const login = (clientId: string) => ({
  event: '$login',
  status: '$succeeded',
  user: { id: 'd1' },
  context: { ip: '81.2.69.142', headers: { 'User-Agent': UA }, client_id: clientId },
});

let s: FakeServices;
beforeEach(() => {
  s = createFakeServices();
});

describe('devices', () => {
  it("lists the user's devices, marking the one the client id names as current", async () => {
    const { principal, env } = await s.environment();
    const phone = await s.verdicts.evaluate(principal, 'risk', login('phone-fingerprint-0001'));
    const tablet = await s.verdicts.evaluate(principal, 'risk', login('tablet-fingerprint-0002'));
    const listed = await s.devices.listForUser(env, 'd1', ['?', 'tablet-fingerprint-0002']);
    expect(listed.map((d) => [d.device.token, d.current]).sort()).toEqual(
      [
        [phone.device?.token, false],
        [tablet.device?.token, true],
      ].sort(),
    );
    expect((await s.devices.listForUser(env, 'd1')).every((d) => !d.current)).toBe(true);
    await expect(s.devices.listForUser(env, 'nobody')).rejects.toBeInstanceOf(NotFound);
  });

  it('approve and report set the review state (the latest feedback wins); a report is notified', async () => {
    const { principal, env } = await s.environment({ webhookUrl: 'https://hooks.example/rampart' });
    const token =
      (await s.verdicts.evaluate(principal, 'risk', login('phone-fingerprint-0001'))).device?.token ?? '';
    expect((await s.devices.approve(env.id, token)).feedback).toBe('approved');
    const reported = await s.devices.report(env, token);
    expect([reported.feedback, reported.riskScore, reported.approvedAt]).toEqual(['reported', 100, null]);
    await s.time.settle();
    expect(s.webhookStore.all.map((d) => [d.type, d.trigger, d.deviceToken])).toEqual([
      ['$incident.confirmed', 'device_reported', token],
    ]);
    await expect(s.devices.approve(env.id, 'no-such-token')).rejects.toBeInstanceOf(NotFound);
  });

  it("never reaches another environment's devices", async () => {
    const a = await s.environment();
    const b = await s.environment({ name: 'other' });
    const token =
      (await s.verdicts.evaluate(a.principal, 'risk', login('phone-fingerprint-0001'))).device?.token ?? '';
    await expect(s.devices.get(b.env.id, token)).rejects.toBeInstanceOf(NotFound);
    await expect(s.devices.listForUser(b.env, 'd1')).rejects.toBeInstanceOf(NotFound);
  });
});
