/**
 * The one scrubbing rule (core/events/scrub.ts, docs/privacy.md "What is never kept"): secret
 * names at any depth, secret query parameters and URL passwords, headers by the allow-list;
 * payloads kept as text scrubbed by pattern, whatever their syntax; and what names a user in the
 * records a purge must find without a user id (core/privacy/names.ts).
 */
import {
  CUT,
  isSecretName,
  isSecretParam,
  MAX_SCRUB_DEPTH,
  scrubRecord,
  scrubString,
  scrubText,
} from '../../../src/core/events/scrub';
import { namedInText, namesOfEvent, ownNames } from '../../../src/core/privacy/names';
import { validateEvent } from '../../../src/core/events/parse';
import { eventCommand } from '../../../src/rest/event-command';

const SECRET = 'S3CR3T-value';

describe('secret names', () => {
  it.each([
    'password',
    'passwd',
    'new_password',
    'newPassword',
    'password_confirmation',
    'Passphrase',
    'secret',
    'client_secret',
    'token',
    'access_token',
    'id_token',
    'refreshToken',
    'api_key',
    'apiKey',
    'APIKEY',
    'X-Api-Key',
    'authorization',
    'Proxy-Authorization',
    'cookie',
    'Set-Cookie',
    'session',
    'session_id',
    'sessionId',
    'PHPSESSID',
    'x-csrf-token',
    'xsrf',
    'jwt',
    'bearer',
    'signature',
    'sig',
    'credentials',
    'otp',
    'mfa_code',
    'reset_code',
    'verification-code',
    'pin',
    'card_pin',
    'card_number',
    'cardNumber',
    'credit_card',
    'cc_number',
    'cvv',
    'cvc',
    'ssn',
    'social_security_number',
    'private_key',
    'db_pass',
    'pwd',
    'x-auth',
    'auth',
  ])('%s is secret', (name) => expect(isSecretName(name)).toBe(true));

  it.each([
    'email',
    'username',
    'user_name',
    'phone',
    'name',
    'first_name',
    'user_agent',
    'User-Agent',
    'ip',
    'registered_at',
    'created_at',
    'locale',
    'country_code',
    'postal_code',
    'promo_code',
    'session_count',
    'sessions',
    'author',
    'oauth_provider',
    'keyboard',
    'monkey',
    'compass',
    'bypass',
    'shipping',
    'primary_key',
    'passport',
    'headers',
    'user_id',
    'id',
    'traits',
    'plan',
  ])('%s is not', (name) => expect(isSecretName(name)).toBe(false));

  it('a URL also hides the parameters that carry credentials there (`code`, `key`, `ticket`)', () => {
    for (const p of [
      'code',
      'key',
      'ticket',
      'token',
      'sig',
      'signature',
      'access_token',
      'X-Amz-Signature',
      'X-Amz-Credential',
      'password',
    ])
      expect(isSecretParam(p)).toBe(true);
    for (const p of ['lang', 'utm_source', 'page', 'redirect']) expect(isSecretParam(p)).toBe(false);
  });
});

describe('scrubRecord: what is stored of properties, traits and context', () => {
  it('hides secret-named members at any depth, whatever their value, and keeps what the engine reads', () => {
    const record = {
      email: 'ann@example.com',
      username: 'ann',
      phone: '+447700900123',
      password: SECRET,
      pin: 1234,
      api: { credentials: { user: 'ann', pass: SECRET }, list: [{ token: SECRET }, 'plain'] },
      traits: { api_key: SECRET, plan: 'pro' },
      remember_password: true,
      session_count: 3,
    };
    expect(scrubRecord(record)).toEqual({
      email: 'ann@example.com',
      username: 'ann',
      phone: '+447700900123',
      password: true,
      pin: true,
      api: { credentials: true, list: [{ token: true }, 'plain'] },
      traits: { api_key: true, plan: 'pro' },
      remember_password: true,
      session_count: 3,
    });
    expect(record.password).toBe(SECRET); // never changed in place
  });

  it('hides secret query parameters and URL passwords in any string', () => {
    expect(scrubRecord({ reset_url: `https://shop.example/reset?token=${SECRET}&lang=en` })).toEqual({
      reset_url: 'https://shop.example/reset?token=***&lang=en',
    });
    expect(scrubString(`https://app.example/cb#access_token=${SECRET}&state=xyz`)).toBe(
      'https://app.example/cb#access_token=***&state=xyz',
    );
    expect(scrubString(`https://app.example/oauth?code=${SECRET}`)).toBe(
      'https://app.example/oauth?code=***',
    );
    expect(scrubString(`https://maps.example/api?key=${SECRET}&q=x`)).toBe(
      'https://maps.example/api?key=***&q=x',
    );
    expect(scrubString(`https://admin:${SECRET}@db.example:5432/x`)).toBe(
      'https://admin:***@db.example:5432/x',
    );
    expect(scrubString('https://shop.example/search?q=shoes&page=2')).toBe(
      'https://shop.example/search?q=shoes&page=2',
    );
    expect(scrubString('ann@example.com')).toBe('ann@example.com');
    expect(scrubString('aGVsbG8=')).toBe('aGVsbG8=');
  });

  it('returns the record itself when there is nothing to scrub (no copy on the hot path)', () => {
    const clean = {
      email: 'ann@example.com',
      plan: 'pro',
      nested: { list: [1, 'two', { three: 3 }] },
      at: new Date(0),
    };
    expect(scrubRecord(clean)).toBe(clean);
    const dirty = { plan: 'pro', nested: { list: [1, { token: 'x' }] }, other: { a: 1 } };
    const scrubbed = scrubRecord(dirty);
    expect(scrubbed).not.toBe(dirty);
    expect(scrubbed.other).toBe(dirty.other); // only the path to what changed is copied
  });

  it('is bounded: values nested too deep or past its member budget are cut, never walked', () => {
    let deep: Record<string, unknown> = { password: SECRET };
    for (let i = 0; i < 5_000; i++) deep = { a: deep };
    const out = JSON.stringify(scrubRecord(deep));
    expect(out).not.toContain(SECRET);
    expect(out).toContain(JSON.stringify(CUT));
    expect(out.split('"a"').length - 1).toBe(MAX_SCRUB_DEPTH);
    const wide = Object.fromEntries(
      Array.from({ length: 20_000 }, (_, i) => [`k${i}`, i === 19_999 ? { password: SECRET } : i]),
    );
    const w = scrubRecord(wide);
    expect(JSON.stringify(w)).not.toContain(SECRET);
    expect(w.k19999).toBe(CUT);
    expect(w.k5).toBe(5);
  });

  it('keeps `__proto__` a plain member', () => {
    const parsed = JSON.parse(`{"__proto__": {"polluted": true}, "password": "${SECRET}"}`) as Record<
      string,
      unknown
    >;
    const out = scrubRecord(parsed);
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.keys(out)).toEqual(['__proto__', 'password']);
  });

  it('is what validation keeps: properties, user traits (the user object too), context extras', () => {
    const e = validateEvent(
      'risk',
      eventCommand({
        event: '$login',
        status: '$succeeded',
        user: { id: 'u1', email: 'Ann@Example.com', traits: { api_key: SECRET, plan: 'pro' } },
        properties: { password: SECRET, reset_url: `https://shop.example/reset?token=${SECRET}` },
        context: {
          ip: '81.2.69.142',
          locale: 'en-GB',
          session: SECRET,
          headers: { 'User-Agent': 'Mozilla/5.0', Authorization: `Bearer ${SECRET}` },
        },
      }),
      { sandbox: true, now: new Date() },
    );
    expect(JSON.stringify(e)).not.toContain(SECRET);
    expect(e.userTraits).toMatchObject({ email: 'Ann@Example.com', traits: { api_key: true, plan: 'pro' } });
    expect(e.properties).toEqual({ password: true, reset_url: 'https://shop.example/reset?token=***' });
    expect(e.context.extra).toEqual({ locale: 'en-GB', session: true });
    expect(e.email).toBe('ann@example.com');
    expect(e.context.userAgent).toBe('Mozilla/5.0');
  });
});

describe('scrubText: payloads kept as text, by pattern', () => {
  it('keeps no credential of a cut body', () => {
    const body = `{"event":"$login.failed","user_id":"u1","context":{"headers":{"User-Agent":"UA","Authorization":"Bearer ${SECRET}`;
    for (let cut = body.length - SECRET.length; cut <= body.length; cut++)
      expect(scrubText(body.slice(0, cut))).not.toContain(SECRET.slice(0, 4));
    expect(scrubText(body)).toBe(
      '{"event":"$login.failed","user_id":"u1","context":{"headers":{"User-Agent":"UA","Authorization":true',
    );
  });

  it('scrubs names and values in any quoting, and text that is not JSON at all', () => {
    expect(
      scrubText(
        `{'user_id': 'u1', 'context': {'headers': {'Authorization': 'Bearer ${SECRET}', 'Accept': '*/*'}}, 'password': '${SECRET}'}`,
      ),
    ).toBe(
      "{'user_id': 'u1', 'context': {'headers': {'Authorization': true, 'Accept': '*/*'}}, 'password': true}",
    );
    expect(scrubText(`{password: ${SECRET}, user: u1}`)).toBe('{password: ***, user: u1}');
    expect(
      scrubText(`Authorization: Bearer ${SECRET}\r\nCookie: sid=${SECRET}; theme=dark\r\nAccept: */*`),
    ).toBe('Authorization: ***\r\nCookie: ***\r\nAccept: */*');
    expect(scrubText(`user=u1&api_key=${SECRET}&X-Api-Key=${SECRET}`)).toBe(
      'user=u1&api_key=***&X-Api-Key=***',
    );
    expect(
      scrubText(
        `{"password": 123456, "pin": "${SECRET}", "token": {"stringValue": "${SECRET}"}, "remember_password": true}`,
      ),
    ).toBe('{"password": true, "pin": true, "token": true, "remember_password": true}');
    expect(scrubText(`{"log": "{\\"password\\": \\"${SECRET}\\"}"}`)).not.toContain(SECRET);
    expect(scrubText(`{"note": "reset at https://shop.example/reset?token=${SECRET}&lang=en", "x": 1}`)).toBe(
      '{"note": "reset at https://shop.example/reset?token=***&lang=en", "x": 1}',
    );
  });

  it('a string that ends in a secret name hides nothing that follows', () => {
    expect(scrubText(`{"note": "the password:", "password": "${SECRET}"}`)).not.toContain(SECRET);
  });

  it('keeps well-formed JSON well formed, and scrubbing twice changes nothing more', () => {
    const body = JSON.stringify({
      event: '$login.failed',
      user: { id: 'u1', traits: { api_key: SECRET } },
      properties: { password: SECRET, url: `https://x.example/?sig=${SECRET}` },
      context: {
        headers: [
          ['Cookie', SECRET],
          ['User-Agent', 'UA'],
        ],
      },
    });
    const once = scrubText(body);
    expect(once).not.toContain(SECRET);
    expect(JSON.parse(once)).toEqual({
      event: '$login.failed',
      user: { id: 'u1', traits: { api_key: true } },
      properties: { password: true, url: 'https://x.example/?sig=***' },
      context: {
        headers: [
          ['Cookie', true],
          ['User-Agent', 'UA'],
        ],
      },
    });
    expect(scrubText(once)).toBe(once);
  });

  it('takes a 5,000-level nested body in its stride (no recursion)', () => {
    const deep = `${'{"a":'.repeat(5_000)}{"password":"${SECRET}"}${'}'.repeat(5_000)}`;
    const out = scrubText(deep);
    expect(out).not.toContain(SECRET);
    expect(out.length).toBe(deep.length - SECRET.length - 2 + 4);
  });
});

describe('what names a user in records without a user id', () => {
  it('an event names its identity, its user and its form, e-mails lower-cased', () => {
    expect(
      namesOfEvent({
        email: 'ann@example.com',
        username: null,
        phone: null,
        userTraits: { email: 'Ann@Example.com', phone: '+4477' },
        properties: { username: 'ann_k', email: 'other@example.com' },
      }),
    ).toEqual(['ann@example.com', '+4477', 'other@example.com', 'ann_k']);
    expect(ownNames({ email: 'ann@example.com', userTraits: { username: 'ann_k' } })).toEqual([
      'ann@example.com',
      'ann_k',
    ]);
  });

  it('a payload kept as text names its user and identifiers whatever its syntax', () => {
    expect(namedInText("{'user_id': 'u-9', 'event': '$login.failed'")).toEqual({ userId: 'u-9', names: [] });
    expect(namedInText('{"event":"x","user":{"email":"Ann@Example.com","id":"u-7"},"context":{')).toEqual({
      userId: 'u-7',
      names: ['ann@example.com'],
    });
    expect(namedInText("{params: {phone: '+447700900123', username: 'ann_k'}, broken")).toEqual({
      userId: null,
      names: ['+447700900123', 'ann_k'],
    });
    expect(namedInText('{"device_id": "d1", "other_user_id": "x"}')).toEqual({ userId: null, names: [] });
  });
});
