/**
 * The per-event requirements of Castle's API, as docs/decisions.md rules them: each row is an endpoint,
 * an event, a complete body, the fields without which it cannot be processed (reported as
 * offending fields), and the recommended fields whose absence is only named on the event.
 */
import { validateEvent, type ParseOptions } from '../../../src/core/events/parse';
import { eventCommand } from '../../../src/rest/event-command';
import { EVENTS, eventRole } from '../../../src/core/events/catalog';
import { InvalidParameters, InvalidRequestToken } from '../../../src/core/errors';
import type { Endpoint } from '../../../src/core/model';
import { isSecretName, scrubHeaders, scrubText } from '../../../src/core/events/scrub';

/** A Castle JSON body validated as the REST door validates it. */
const parseEvent = (endpoint: Endpoint, body: unknown, opts: ParseOptions) =>
  validateEvent(endpoint, eventCommand(body), opts);

const now = new Date('2026-11-22T10:00:00.000Z');
const opts = { sandbox: true, now };
const ctx = { ip: '8.8.8.8', headers: { 'User-Agent': 'Mozilla/5.0', Accept: 'text/html' } };

function problems(endpoint: Endpoint, body: unknown): string[] {
  try {
    parseEvent(endpoint, body, opts);
    return [];
  } catch (err) {
    if (err instanceof InvalidParameters) return err.fields.map((f) => f.field);
    throw err;
  }
}

/** Remove a dotted path from a deep copy. */
function without(body: Record<string, unknown>, path: string): Record<string, unknown> {
  const copy = JSON.parse(JSON.stringify(body)) as Record<string, unknown>;
  const parts = path.split('.');
  let cur: Record<string, unknown> = copy;
  for (const p of parts.slice(0, -1)) cur = cur[p] as Record<string, unknown>;
  delete cur[parts[parts.length - 1] as string];
  return copy;
}

// [endpoint, valid body, [field removed, field reported][], [fields removed, recommendation named][]]
const TABLE: [Endpoint, Record<string, unknown>, [string, string][], [string[], string][]][] = [
  [
    'authenticate',
    { event: '$login.attempted', properties: { email: 'a@example.com' }, context: ctx },
    [['context', 'context']],
    [[['properties.email'], 'properties.email']],
  ],
  [
    'authenticate',
    { event: '$login.succeeded', user_id: 'u1', user_traits: { email: 'a@example.com' }, context: ctx },
    [
      ['user_id', 'user_id'],
      ['context', 'context'],
      ['context.ip', 'context.ip'],
    ],
    [[['user_traits.email'], 'user_traits.email']],
  ],
  [
    'authenticate',
    { event: '$registration.attempted', user_traits: { email: 'a@example.com' }, context: ctx },
    [
      ['user_traits.email', 'user_traits.email'],
      ['context', 'context'],
    ],
    [],
  ],
  [
    'authenticate',
    {
      event: '$password_reset_request.succeeded',
      user_id: 'u1',
      user_traits: { email: 'a@example.com' },
      properties: { email: 'a@example.com' },
      context: ctx,
    },
    [['context', 'context']],
    [
      [['user_traits.email', 'properties.email'], 'user_traits.email|username'],
      [['properties.email'], 'properties.email|username|phone'],
    ],
  ],
  [
    'risk',
    { event: '$login', user: { id: 'u1', email: 'a@example.com' }, request_token: 'tok_abc', context: ctx },
    [
      ['user', 'user'],
      ['user.id', 'user.id'],
      ['context', 'context'],
      ['context.ip', 'context.ip'],
      ['context.headers', 'context.headers'],
      ['context.headers.User-Agent', 'context.headers.User-Agent'],
    ],
    [],
  ],
  [
    'filter',
    { event: '$registration', user: { email: 'a@example.com' }, request_token: 'tok_abc', context: ctx },
    [
      ['context', 'context'],
      ['context.ip', 'context.ip'],
      ['context.headers.User-Agent', 'context.headers.User-Agent'],
    ],
    [],
  ],
  [
    'track',
    { event: '$password_reset_request.failed', properties: { email: 'a@example.com' } },
    [],
    [[['properties.email'], 'properties.email|username|phone']],
  ],
  ['track', { event: '$challenge.succeeded', device_token: 'dt1' }, [['device_token', 'device_token']], []],
  ['track', { event: '$review.escalated', device_token: 'dt1' }, [['device_token', 'device_token']], []],
  ['track', { event: '$password_reset.succeeded', user_id: 'u1' }, [['user_id', 'device_token']], []],
  ['track', { event: '$incident.mitigated', user_id: 'u1' }, [['user_id', 'device_token']], []],
  ['track', { event: '$custom', name: 'gift_card', user_id: 'u1' }, [['name', 'name']], []],
];

describe.each(TABLE)('%s %j', (endpoint, body, removals, recommended) => {
  it('accepts the complete body and names nothing missing', () => {
    expect(problems(endpoint, body)).toEqual([]);
    expect(parseEvent(endpoint, body, opts).missing).toEqual([]);
  });
  // (jest refuses an empty table)
  if (removals.length)
    it.each(removals)('reports a missing %s as %s', (path, field) => {
      expect(problems(endpoint, without(body, path))).toContain(field);
    });
  if (recommended.length)
    it.each(recommended)('accepts a body without %j and names %s missing', (paths, field) => {
      const stripped = paths.reduce(without, body);
      expect(problems(endpoint, stripped)).toEqual([]);
      expect(parseEvent(endpoint, stripped, opts).missing).toContain(field);
    });
});

describe('what an event is: a verdict, feedback or activity', () => {
  it('is a verdict whenever it has an action, whatever its name', () => {
    for (const e of EVENTS) expect(eventRole(e.name, 'allow')).toBe('verdict');
  });
  it('without one, is feedback only for events that report how something ended', () => {
    const feedback = EVENTS.filter((e) => eventRole(e.name, null) === 'feedback').map((e) => e.name);
    expect(feedback.sort()).toEqual([
      '$challenge.failed',
      '$challenge.requested',
      '$challenge.succeeded',
      '$incident.mitigated',
      '$password_reset.failed',
      '$password_reset.succeeded',
      '$review.escalated',
      '$review.resolved',
    ]);
    for (const name of [
      '$logout',
      '$logout.succeeded',
      '$login.failed',
      '$registration.failed',
      '$profile_update',
      '$password_reset_request.failed',
      '$custom:checkout',
      '$never.heard.of',
    ]) {
      expect(eventRole(name, null)).toBe('activity');
    }
  });
});

describe('recommended fields count wherever they arrive', () => {
  it('an e-mail in user_traits, user, params or properties', () => {
    for (const where of [{ user_traits: { email: 'a@x.com' } }, { properties: { email: 'a@x.com' } }]) {
      expect(
        parseEvent('authenticate', { event: '$login.succeeded', user_id: 'u', context: ctx, ...where }, opts)
          .missing,
      ).toEqual([]);
    }
  });
  it("the Go SDK's AuthenticateSimple body (empty traits and properties) is accepted", () => {
    const e = parseEvent(
      'authenticate',
      {
        event: '$login.succeeded',
        user_id: 'user-123',
        context: { client_id: '', ip: '8.8.8.8', headers: { 'User-Agent': 'Mozilla/5.0' } },
        properties: {},
        user_traits: {},
      },
      opts,
    );
    expect(e.missing).toEqual(['user_traits.email']);
  });
  it('a registration identified by a phone, or by an e-mail sent in properties', () => {
    expect(
      problems('authenticate', {
        event: '$registration.attempted',
        user_traits: { phone: '+15550100' },
        context: ctx,
      }),
    ).toEqual([]);
    expect(
      problems('authenticate', {
        event: '$registration.attempted',
        properties: { email: 'a@x.com' },
        context: ctx,
      }),
    ).toEqual([]);
  });
  it("castle-java's context.user_agent false (no User-Agent on the request) is no error", () => {
    expect(
      problems('track', {
        event: '$login.failed',
        user_id: 'u',
        context: { ip: '8.8.8.8', user_agent: false, client_id: false, headers: {} },
      }),
    ).toEqual([]);
  });
});

describe('event acceptance per endpoint', () => {
  const bodyFor = (endpoint: Endpoint, event: string) => ({
    event,
    user_id: 'u1',
    user: { id: 'u1' },
    user_traits: { email: 'a@example.com', username: 'a' },
    properties: { email: 'a@example.com' },
    name: 'x',
    device_token: 'dt',
    context: ctx,
  });
  const rows = EVENTS.flatMap((e) =>
    (['authenticate', 'risk', 'filter', 'track'] as Endpoint[]).map(
      (ep) => [e.name, ep, e.endpoints.includes(ep)] as const,
    ),
  );
  it.each(rows)('%s on %s accepted=%s', (name, endpoint, accepted) => {
    const found = problems(endpoint, bodyFor(endpoint, name));
    if (accepted) expect(found).toEqual([]);
    else expect(found).toContain('event');
  });

  it("takes a name without $ as the application's own event where $custom is accepted", () => {
    const e = parseEvent('track', { event: 'custom-event', user_id: 'u1', context: ctx }, opts);
    expect({ name: e.name, customName: e.customName }).toEqual({
      name: '$custom',
      customName: 'custom-event',
    });
    expect(
      parseEvent('risk', { event: 'Added to cart', user: { id: 'u' }, context: ctx }, opts).customName,
    ).toBe('Added to cart');
    expect(problems('authenticate', { event: 'custom-event', user_id: 'u1', context: ctx })).toContain(
      'event',
    );
  });

  it('rejects an unknown event and a missing event', () => {
    expect(problems('risk', { event: '$nope', user: { id: 'u' }, context: ctx })).toContain('event');
    expect(problems('risk', { user: { id: 'u' }, context: ctx })).toContain('event');
  });
});

describe('payload forms', () => {
  it('maps type + status and event + status to the dotted name', () => {
    expect(
      parseEvent('risk', { type: '$login', status: '$succeeded', user: { id: 'u' }, context: ctx }, opts)
        .name,
    ).toBe('$login.succeeded');
    expect(
      parseEvent('risk', { event: '$login', status: '$failed', user: { id: 'u' }, context: ctx }, opts).name,
    ).toBe('$login.failed');
    expect(
      parseEvent(
        'filter',
        { type: '$registration', status: '$attempted', params: { email: 'X@Example.com' }, context: ctx },
        opts,
      ).email,
    ).toBe('x@example.com');
  });
  it('accepts headers as [name, value] pairs, case-insensitively, with scrubbed values', () => {
    const e = parseEvent(
      'filter',
      {
        event: '$registration',
        context: {
          ip: '1.2.3.4',
          headers: [
            ['USER-AGENT', 'UA'],
            ['Cookie', true],
          ],
        },
      },
      opts,
    );
    expect(e.context.headers).toEqual({ 'user-agent': 'UA', cookie: true });
    expect(e.context.userAgent).toBe('UA');
  });
  it('treats false, "", "?" and "_" client ids as no fingerprint, and finds it in headers', () => {
    for (const cid of [false, '', '?', '_']) {
      expect(
        parseEvent('filter', { event: '$registration', context: { ...ctx, client_id: cid } }, opts).context
          .fingerprint,
      ).toBeNull();
    }
    const e = parseEvent(
      'filter',
      {
        event: '$registration',
        context: { ip: '1.2.3.4', headers: { 'User-Agent': 'UA', 'X-Castle-Client-Id': 'abc' } },
      },
      opts,
    );
    expect(e.context.fingerprint).toBe('abc');
  });
  it('keeps older SDK keys and uses timestamp as event time', () => {
    const e = parseEvent(
      'track',
      {
        event: '$login.failed',
        timestamp: '2026-11-22T09:00:00.000Z',
        sent_at: '2026-11-22T09:00:01',
        context: { ...ctx, active: true, locale: 'en' },
      },
      opts,
    );
    expect(e.occurredAt.toISOString()).toBe('2026-11-22T09:00:00.000Z');
    expect(e.receivedAt).toBe(now);
    expect(e.context.extra).toEqual({ active: true, locale: 'en' });
    expect(e.extra.sent_at).toBe('2026-11-22T09:00:01');
  });
  it('rejects a timestamp more than 5 minutes in the future', () => {
    expect(
      problems('risk', {
        event: '$login',
        timestamp: '2026-11-22T10:06:00Z',
        user: { id: 'u' },
        context: ctx,
      }),
    ).toContain('timestamp');
    expect(
      problems('risk', {
        event: '$login',
        timestamp: '2026-11-22T10:04:00Z',
        user: { id: 'u' },
        context: ctx,
      }),
    ).toEqual([]);
  });
});

describe('hostile and wrong-typed input', () => {
  it.each([
    ['user_id as an operator object', { user_id: { $gt: '' } }, 'user_id'],
    ['user.id as a number', { user: { id: 5 } }, 'user.id'],
    ['context as a string', { context: 'x' }, 'context'],
    ['headers as a string', { context: { ip: '1.1.1.1', headers: 'x' } }, 'context.headers'],
    ['invalid ip', { context: { ip: '999.1.1.1', headers: { 'User-Agent': 'x' } } }, 'context.ip'],
    ['ip with a port', { context: { ip: '1.2.3.4:80', headers: { 'User-Agent': 'x' } } }, 'context.ip'],
    ['event as a number', { event: 7 }, 'event'],
  ])('%s', (_label, patch, field) => {
    const body = { event: '$login', user: { id: 'u1' }, context: ctx, ...patch };
    expect(problems('risk', body)).toContain(field);
  });

  it('reports a huge header map', () => {
    const headers = Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`x-h${i}`, 'v']));
    expect(
      problems('risk', { event: '$login', user: { id: 'u' }, context: { ip: '1.1.1.1', headers } }),
    ).toContain('context.headers');
  });

  it('stores $where-looking strings as plain data', () => {
    const e = parseEvent(
      'risk',
      {
        event: '$login',
        user: { id: '$where: 1 == 1', email: "a'--@x.com" },
        context: ctx,
        properties: { $where: 'sleep(1)' },
      },
      opts,
    );
    expect(e.userId).toBe('$where: 1 == 1');
    expect(e.properties).toEqual({ $where: 'sleep(1)' });
  });

  it('accepts unicode', () => {
    const e = parseEvent(
      'risk',
      { event: '$login', user: { id: 'ユーザー😀', email: 'ü@exämple.com' }, context: ctx },
      opts,
    );
    expect(e.userId).toBe('ユーザー😀');
  });
});

describe('request tokens', () => {
  const base = { event: '$login', user: { id: 'u' }, context: ctx };
  it('parses sandbox test tokens', () => {
    const e = parseEvent(
      'risk',
      { ...base, request_token: 'test|device:chrome_on_mac|ip:us-ca|policy.action:deny|risk:0.9' },
      opts,
    );
    expect(e.testToken).toEqual({
      raw: 'test|device:chrome_on_mac|ip:us-ca|policy.action:deny|risk:0.9',
      device: 'chrome_on_mac',
      ip: 'us-ca',
      action: 'deny',
      risk: 0.9,
    });
  });
  it.each([
    ['test tokens outside sandbox', 'test|policy.action:deny', false],
    ['malformed test tokens', 'test|risk:7', true],
    ['unknown test token keys', 'test|colour:red', true],
    ['non-printable tokens', 'abc\u0000def', true],
    ['overlong tokens', 'x'.repeat(5000), true],
  ])('rejects %s', (_label, token, sandbox) => {
    expect(() => parseEvent('risk', { ...base, request_token: token }, { sandbox, now })).toThrow(
      InvalidRequestToken,
    );
  });
});

describe('headers kept without their secrets', () => {
  it.each([
    ['authorization', true],
    ['Proxy-Authorization', true],
    ['cookie', true],
    ['set-cookie', true],
    ['x-api-key', true],
    ['X-Auth-Token', true],
    ['x-csrf-token', true],
    ['x-session-id', true],
    ['x-client-secret', true],
    ['user-agent', false],
    ['accept-language', false],
    ['x-forwarded-for', false],
    ['sec-ch-ua', false],
  ])('%s is sensitive: %s', (name, sensitive) => {
    expect(isSecretName(name)).toBe(sensitive);
  });

  it('scrubHeaders keeps that a sensitive header was sent, not its value', () => {
    expect({ ...scrubHeaders({ authorization: 'Bearer x', 'user-agent': 'UA' }) }).toEqual({
      authorization: true,
      'user-agent': 'UA',
    });
  });

  it('scrubHeaders keeps the values only of the headers the model and analysts read (an allow-list)', () => {
    const kept = scrubHeaders({
      'user-agent': 'UA',
      'accept-language': 'en',
      'sec-ch-ua-platform': '"macOS"',
      origin: 'https://shop.example',
      'x-access-key': 'k',
      'x-jwt': 'j',
      referer: 'https://shop.example/reset?token=t',
      'x-service-client-id': 'rpm1.x',
    });
    expect({ ...kept }).toEqual({
      'user-agent': 'UA',
      'accept-language': 'en',
      'sec-ch-ua-platform': '"macOS"',
      origin: 'https://shop.example',
      'x-access-key': true,
      'x-jwt': true,
      referer: true,
      'x-service-client-id': true,
    });
  });

  it('scrubText keeps header values by the allow-list in well-formed and malformed payloads', () => {
    expect(
      JSON.parse(
        scrubText(
          '{"event":"$login.failed","context":{"headers":{"X-Access-Key":"k","Referer":"r","Accept":"*/*"}}}',
        ),
      ),
    ).toEqual({
      event: '$login.failed',
      context: { headers: { 'X-Access-Key': true, Referer: true, Accept: '*/*' } },
    });
    expect(JSON.parse(scrubText('{"context":{"headers":[["X-Jwt","j"],["User-Agent","UA"]]}}'))).toEqual({
      context: {
        headers: [
          ['X-Jwt', true],
          ['User-Agent', 'UA'],
        ],
      },
    });
    // Malformed: the headers' region by the allow-list, the rest by the deny-list.
    expect(
      scrubText(
        '{"user_id":"u1","context":{"headers":{"Referer":"r","Accept":"*/*"}, "note":"hello", broken',
      ),
    ).toBe('{"user_id":"u1","context":{"headers":{"Referer":true,"Accept":"*/*"}, "note":"hello", broken');
    expect(scrubText('{"headers":[["Referer","r"],["Accept","a"]], "X-Access-Key":"k", oops')).toBe(
      '{"headers":[["Referer",true],["Accept","a"]], "X-Access-Key":true, oops',
    );
  });

  it('scrubText works on JSON and on text that is not', () => {
    expect(scrubText('{"headers":{"Cookie":"s=1","Accept":"*/*"}}')).toBe(
      '{"headers":{"Cookie":true,"Accept":"*/*"}}',
    );
    expect(scrubText('{"Authorization" : "Bearer \\"quoted\\" x", broken')).toBe(
      '{"Authorization" : true, broken',
    );
    expect(scrubText('plain text with no JSON')).toBe('plain text with no JSON');
  });

  it('parseEvent stores the scrubbed headers', () => {
    const e = parseEvent(
      'track',
      {
        event: '$login.failed',
        user_id: 'u',
        context: { headers: { Authorization: 'Bearer x', 'User-Agent': 'UA' } },
      },
      { sandbox: true, now: new Date() },
    );
    expect(e.context.headers.authorization).toBe(true);
    expect(e.context.userAgent).toBe('UA');
  });
});
