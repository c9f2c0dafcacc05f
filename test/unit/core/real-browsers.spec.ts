/**
 * Every real browser of the table (test/fixtures/real-browsers.ts) through the rules that read its
 * user agent and client hints, as the verdict scores them (the REST door's parsing, the
 * user-agent parser, the features, the engine's assessment): none of them is taken for a spoofed
 * device, a bot, a headless browser or a crawler, nor lacks a header its browser sends, in a
 * settled environment whose application forwards every header for every browser. Headers no real
 * browser sends still fire.
 */
import { validateEvent } from '../../../src/core/events/parse';
import { eventCommand } from '../../../src/rest/event-command';
import { parseUserAgent, type IpIntel } from '../../../src/intel';
import { deviceKey } from '../../../src/core/devices/service';
import { extractFeatures } from '../../../src/core/scoring/features';
import { assess, type AssessInput } from '../../../src/core/scoring/model';
import type { Signals } from '../../../src/core/model';
import {
  CONTRADICTIONS,
  REAL_BROWSERS,
  USER_AGENT_SIGNALS,
  type HeaderSet,
} from '../../fixtures/real-browsers';

const T0 = Date.parse('2026-10-01T12:00:00Z');
const HOME: IpIntel = {
  ip: '81.2.69.142',
  version: 4,
  location: {
    country_code: 'GB',
    country: 'GB',
    region: null,
    region_code: null,
    city: 'London',
    lat: 51.5,
    lon: -0.1,
  },
  asn: { number: 2856, organization: 'AS2856' },
  hosting: false,
  vpn: false,
  relay: false,
  tor: false,
  bogon: false,
};
/** A settled environment: weeks old, 50 attempts an hour. */
const ENV: AssessInput['env'] = {
  legit: 10_000,
  attemptsPerHour: 50,
  failuresPerHour: 5,
  unknownPerHour: 2,
  usualUnknownShare: 0.04,
  usualSignupShare: 0.02,
  registrationsPerHour: 1,
  signups: 0,
  newDomainSignups: 0,
  feedback: 100,
  ageHours: 2000,
};
/** Its application forwards every header: nearly every login of the browser carries each group. */
const FORWARDS_ALL: AssessInput['headers'] = {
  events: 5000,
  acceptLanguage: 0.99,
  secFetch: 0.99,
  clientHints: 0.99,
};

/** A `$login` with these headers, scored as a verdict scores it. */
function assessed(headers: HeaderSet) {
  const body = {
    event: '$login',
    status: '$succeeded',
    user: { id: 'alice', email: 'alice@example.com' },
    context: { ip: HOME.ip, headers },
    timestamp: new Date(T0).toISOString(),
  };
  const event = validateEvent('risk', eventCommand(body), { sandbox: true, now: new Date(T0 + 1000) });
  const ua = parseUserAgent(event.context.userAgent);
  const input: AssessInput = {
    event,
    disposableEmail: false,
    ip: HOME,
    ua,
    features: extractFeatures(event, HOME, ua, deviceKey(event)),
    env: ENV,
    headers: FORWARDS_ALL,
    windows: {},
    shapeShare: 0.01,
    operatorShare: 0.01,
    fingerprints: { events: 0, share: 0 },
    client: null,
    domainCount: 500,
    unknownAccount: false,
    language: null,
    behaviour: null,
    population: { total: 10_000, count: () => 500 },
    device: null,
  };
  return { ua, signals: assess(input, 'login', T0).signals };
}

/** The signals of the user-agent and header rules among `signals`, with their details. */
const headerSignals = (signals: Signals) =>
  Object.fromEntries(
    Object.entries(signals).filter(
      ([name]) => (USER_AGENT_SIGNALS as readonly string[]).includes(name) || name === 'missing_headers',
    ),
  );

describe('real browsers', () => {
  it.each(REAL_BROWSERS)(
    '$name is read as $parsed.browser on $parsed.platform ($parsed.type)',
    ({ headers, parsed }) => {
      const { ua } = assessed(headers);
      expect({ browser: ua.browser, platform: ua.platform, type: ua.type }).toEqual(parsed);
      expect({ bot: ua.bot, headless: ua.headless, crawler: ua.crawler, app: ua.app ?? null }).toEqual({
        bot: false,
        headless: false,
        crawler: false,
        app: null,
      });
    },
  );

  it.each(REAL_BROWSERS)(
    '$name brings no user-agent, client-hints or missing-header signal',
    ({ headers }) => {
      expect(headerSignals(assessed(headers).signals)).toEqual({});
    },
  );

  it('the table covers every platform value Chromium sends, and browsers that send none', () => {
    const platforms = new Set(REAL_BROWSERS.map((b) => b.headers['Sec-CH-UA-Platform']));
    expect([...platforms].sort()).toEqual(
      [undefined, '"Android"', '"Chrome OS"', '"Chromium OS"', '"Linux"', '"Windows"', '"macOS"'].sort(),
    );
  });
});

describe('headers no real browser sends', () => {
  it.each(CONTRADICTIONS)('$name: $signal', ({ headers, signal, detail }) => {
    const found = headerSignals(assessed(headers).signals);
    expect(Object.keys(found)).toEqual([signal]);
    expect(found[signal]).toMatchObject(detail);
  });
});
