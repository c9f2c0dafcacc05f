/** Each first-cut signal fires on the input it names, and only then. */
import { computeSignals, THRESHOLDS, type SignalInput } from '../../../src/core/scoring/signals';
import { parseEvent } from '../../../src/core/events/parse';
import { lookupIp, parseUserAgent } from '../../../src/intel';
import type { Device, UserProfile } from '../../../src/core/model';
import { asEnvId } from '../../../src/core/model';

const CHROME = 'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36';
const now = new Date('2026-11-22T12:00:00Z');

type Over = { body?: Record<string, unknown>; ipAddress?: string; agent?: string; headers?: Record<string, string> } & Partial<Omit<SignalInput, 'event' | 'ip' | 'ua'>>;
function input({ body, ipAddress, agent, headers: given, ...over }: Over = {}): SignalInput {
  const headers = given ?? { 'User-Agent': agent ?? CHROME, Accept: 'text/html', 'Accept-Language': 'en' };
  const event = parseEvent('risk', { event: '$login', user: { id: 'u1', email: 'a@example.com' }, context: { ip: ipAddress ?? '81.2.69.142', headers }, ...body }, { sandbox: true, now });
  return {
    event,
    ip: lookupIp(event.context.ip ?? '81.2.69.142'),
    ua: parseUserAgent(event.context.userAgent),
    user: null,
    device: null,
    userDeviceCount: 0,
    accountsOnFingerprint: 1,
    eventsFromIpLastHour: 1,
    failedLoginUsersFromIpLastHour: 0,
    failedChallenges: 0,
    ...over,
  };
}
const fired = (x: SignalInput) => Object.keys(computeSignals(x)).sort();

const profile = (p: Partial<UserProfile>): UserProfile => ({
  envId: asEnvId('e'), userId: 'u1', email: null, username: null, phone: null, registeredAt: null, traits: {},
  createdAt: now, lastSeenAt: now, lastLocation: null, countries: [], lastPasswordResetAt: null, deviceCount: 0, eventCount: 0, ...p,
});

describe('signals', () => {
  it('a clean desktop login fires nothing', () => expect(fired(input())).toEqual([]));
  it('bot_behavior for an automation user agent', () => expect(fired(input({ agent: 'python-requests/2.31.0' }))).toContain('bot_behavior'));
  it('headless_browser', () => expect(fired(input({ agent: CHROME.replace('Chrome/', 'HeadlessChrome/') }))).toContain('headless_browser'));
  it('web_crawler', () => expect(fired(input({ agent: 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)' }))).toContain('web_crawler'));
  it('missing_headers when a browser sends no Accept headers', () => expect(fired(input({ headers: { 'User-Agent': CHROME } }))).toContain('missing_headers'));
  it('proxy_ip for a hosting network', () => expect(fired(input({ ipAddress: '8.8.8.8' }))).toContain('proxy_ip'));
  it('disposable_email', () => expect(fired(input({ body: { user: { id: 'u1', email: 'x@mailinator.com' } } }))).toContain('disposable_email'));
  it('spoofed_device when client hints contradict the user agent', () =>
    expect(fired(input({ headers: { 'User-Agent': CHROME, Accept: '*/*', 'Accept-Language': 'en', 'Sec-CH-UA-Platform': '"Windows"' } }))).toContain('spoofed_device'));
  it('multiple_accounts_per_device at the threshold', () => {
    expect(fired(input({ accountsOnFingerprint: THRESHOLDS.multipleAccounts - 1 }))).not.toContain('multiple_accounts_per_device');
    expect(computeSignals(input({ accountsOnFingerprint: THRESHOLDS.multipleAccounts })).multiple_accounts_per_device).toEqual({ accounts: THRESHOLDS.multipleAccounts });
  });
  it('high_activity_ip and credential_stuffing at their thresholds', () => {
    expect(fired(input({ eventsFromIpLastHour: THRESHOLDS.highActivityPerHour }))).toContain('high_activity_ip');
    expect(fired(input({ failedLoginUsersFromIpLastHour: THRESHOLDS.credentialStuffingUsersPerHour }))).toContain('credential_stuffing');
  });
  it('new_device only for a known user with other devices', () => {
    expect(fired(input({ user: profile({}), userDeviceCount: 0 }))).not.toContain('new_device');
    expect(fired(input({ user: profile({}), userDeviceCount: 2 }))).toContain('new_device');
    expect(fired(input({ user: profile({}), userDeviceCount: 2, device: {} as Device }))).not.toContain('new_device');
  });
  it('new_country and impossible_travel from the last location', () => {
    const user = profile({ countries: ['US'], lastLocation: { lat: 40.7, lon: -74, country: 'US', at: new Date(now.getTime() - 3_600_000) } });
    const s = computeSignals(input({ user }));
    expect(s.new_country).toEqual({ country: 'GB' });
    expect(s.impossible_travel?.km).toBeGreaterThan(5000);
    const slow = profile({ countries: ['US'], lastLocation: { lat: 40.7, lon: -74, country: 'US', at: new Date(now.getTime() - 24 * 3_600_000) } });
    expect(fired(input({ user: slow }))).not.toContain('impossible_travel');
  });
  it('failed_challenge after a challenge failed on this fingerprint', () => expect(fired(input({ failedChallenges: 1 }))).toContain('failed_challenge'));
});
