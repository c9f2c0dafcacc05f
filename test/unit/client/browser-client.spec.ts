/**
 * Pieces of the browser client (src/browser) and of the events endpoint that need no browser: the
 * proof of work's own SHA-256 against Node's, castle-js's `configure` options as the client reads
 * them (an unknown one is a warning), and the backend's user JWT as the endpoint opens it.
 */
import { createHash, createHmac } from 'node:crypto';
import { sha256Head } from '../../../src/browser/sha256';
import { readOptions } from '../../../src/browser/options';
import { openUserJwt } from '../../../src/core/client/events';
import { CLIENT_TOKEN_TTL_MS, openClientToken, signClientToken } from '../../../src/core/client/token';

describe("the browser client's SHA-256", () => {
  it("gives the first 32 bits of Node's SHA-256 for every length one block holds", () => {
    for (let length = 0; length <= 55; length++) {
      const text = Array.from({ length }, (_, i) => String.fromCharCode(0x21 + ((i * 7 + length) % 94))).join(
        '',
      );
      const block = new Uint8Array(64);
      for (let i = 0; i < length; i++) block[i] = text.charCodeAt(i);
      expect([length, sha256Head(block, length)]).toEqual([
        length,
        createHash('sha256').update(text).digest().readUInt32BE(0),
      ]);
    }
  });
});

describe("castle-js's configure options", () => {
  it("reads Castle's names and Rampart's, and cuts Castle's /v1/monitor path from apiUrl", () => {
    const castle = readOptions(
      {
        pk: 'pk_abcdefgh12345678',
        apiUrl: 'https://rampart.example/v1/monitor/',
        timeout: 2500,
        storage: { name: '__cuid', expireIn: 100 },
        formTokenInputName: 'token',
        autoInjectTokenOnRequest: true,
      },
      'https://page.example',
    );
    expect(castle).toMatchObject({
      collector: {
        publishableKey: 'pk_abcdefgh12345678',
        endpoint: 'https://rampart.example',
        timeoutMs: 2500,
        storageKey: '__cuid',
      },
      formTokenInputName: 'token',
      autoInjectTokenOnRequest: true,
      autoInjectTokenOnSubmit: false,
      verbose: true,
      warnings: [],
    });
    const rampart = readOptions({ publishableKey: 'pk_abcdefgh12345678' }, 'https://rampart.example/');
    expect(rampart).toMatchObject({
      collector: { endpoint: 'https://rampart.example', timeoutMs: null, storageKey: 'rampart.profile' },
      formTokenInputName: 'castle_request_token',
      warnings: [],
    });
  });

  it('warns about an unknown option or a wrong type, and ignores it', () => {
    const r = readOptions(
      {
        pk: 'pk_abcdefgh12345678',
        debug: true,
        timeout: 'soon',
        autoInjectTokenOnSubmit: 'yes',
        apiUrl: 42,
      } as never,
      'https://page.example',
    );
    expect(r.warnings).toEqual(
      expect.arrayContaining([
        expect.stringContaining('unknown option "debug"'),
        expect.stringContaining('"timeout"'),
        expect.stringContaining('"autoInjectTokenOnSubmit"'),
        expect.stringContaining('"apiUrl"'),
      ]),
    );
    expect(r.collector).toMatchObject({ endpoint: 'https://page.example', timeoutMs: null });
    expect(r.autoInjectTokenOnSubmit).toBe(false);
  });

  it('accepts castle-js options that mean nothing here without a warning', () => {
    expect(
      readOptions(
        { pk: 'pk_abcdefgh12345678', throttling: true, avoidCookies: true, verbose: false },
        'https://p.example',
      ).warnings,
    ).toEqual([]);
  });

  it('throws without a publishable key', () => {
    expect(() => readOptions({ apiUrl: 'https://rampart.example' }, 'https://p.example')).toThrow(/pk_/);
    expect(() => readOptions('839473265432', 'https://p.example')).toThrow(/pk_/);
    expect(() => readOptions(undefined, 'https://p.example')).toThrow(/pk_/);
  });
});

describe("the backend's user JWT (castle-js's userJwt)", () => {
  const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const jwt = (
    claims: Record<string, unknown>,
    secret: string,
    header: Record<string, unknown> = { alg: 'HS256', typ: 'JWT' },
  ) => {
    const signed = `${b64(header)}.${b64(claims)}`;
    return `${signed}.${createHmac('sha256', secret).update(signed).digest('base64url')}`;
  };
  const now = Date.parse('2026-11-27T12:00:00Z');

  it('verifies under one of the live secrets, and names the user', () => {
    expect(openUserJwt(['old', 'live'], jwt({ id: '42', email: 'a@example.com' }, 'live'), now)).toEqual({
      userId: '42',
      verified: true,
    });
    expect(openUserJwt(['live'], jwt({ id: 42 }, 'live'), now)).toEqual({ userId: '42', verified: true });
  });

  it('does not verify under another secret, past its exp, or with another algorithm', () => {
    expect(openUserJwt(['live'], jwt({ id: '42' }, 'other'), now)).toEqual({ userId: '42', verified: false });
    expect(openUserJwt(['live'], jwt({ id: '42', exp: now / 1000 - 60 }, 'live'), now)).toEqual({
      userId: '42',
      verified: false,
    });
    expect(openUserJwt(['live'], jwt({ id: '42' }, 'live', { alg: 'none' }), now)).toEqual({
      userId: null,
      verified: false,
    });
    expect(openUserJwt(['live'], jwt({ email: 'no-id@example.com' }, 'live'), now)).toEqual({
      userId: null,
      verified: false,
    });
    expect(openUserJwt(['live'], 'a.b.c', now)).toEqual({ userId: null, verified: false });
  });
});

describe('a request token for events', () => {
  const key = Buffer.alloc(32, 7);
  const iat = Date.parse('2026-11-27T12:00:00Z');
  const token = signClientToken(key, { env: 'env1', jti: 'j1', iat, dk: 'dk1', auto: [], ua: 'u' });

  it('is accepted for as long as the caller allows from its issue, not past it', () => {
    expect(openClientToken(key, token, 'env1', iat + CLIENT_TOKEN_TTL_MS + 1).ok).toBe(false);
    expect(openClientToken(key, token, 'env1', iat + 3_600_000, 3_600_000).ok).toBe(true);
    expect(openClientToken(key, token, 'env1', iat + 3_600_001, 3_600_000)).toEqual({
      ok: false,
      reason: 'expired',
    });
  });
});
