/**
 * The request-token interceptor (fetch and axios): the header goes only to URLs under the
 * base-URL allow list (never to a look-alike host), with a fresh, verifiable token each time,
 * under the configured header name, keeping the request's own headers.
 */
import { launch, verifyToken, world, type World } from './fakes';
import type { RampartClient } from '../../../src/react-native/client';
import { AllowList, parseHttpUrl } from '../../../src/react-native/allow-list';
import { readVectors } from '../../support/test-vectors';

const ALLOW = ['https://api.example.com/v1', 'http://10.0.2.2:8080'];

/** clients/test-vectors/allow-list.json: the rule every client library is checked against. */
const vectors = readVectors('allow-list.json');

describe('the allow list', () => {
  it.each<[string, string, boolean, string[]]>(
    vectors.cases.map((c: any) => [c.why, c.url, c.sent, c.allow]),
  )('%s: %s → %s', (_why, url, sent, allow) => {
    expect(new AllowList(allow).allows(url)).toBe(sent);
  });

  it.each<[string]>(vectors.invalid_entries.map((e: string) => [e]))(
    'refuses the entry %j at configure',
    (entry) => {
      expect(() => new AllowList([entry])).toThrow('baseURLAllowList entry is not an absolute http(s) URL');
    },
  );

  it('an empty list allows nothing', () => {
    expect(new AllowList([]).allows('https://api.example.com/v1')).toBe(false);
  });

  it('parses what it allows', () => {
    expect(parseHttpUrl('https://API.example.com/v1/x?q')).toEqual({
      scheme: 'https',
      host: 'api.example.com',
      port: 443,
      path: '/v1/x',
    });
    expect(parseHttpUrl('http://[::1]:3000')).toEqual({
      scheme: 'http',
      host: '[::1]',
      port: 3000,
      path: '/',
    });
    expect(parseHttpUrl('https://a.example:99999/')).toBeNull();
  });
});

interface Sent {
  input: unknown;
  init: { headers?: unknown; method?: string; body?: string } | undefined;
}

async function setup(config: { clientIdHeaderName?: string; requestTokenHeaderName?: string } = {}): Promise<{
  w: World;
  client: RampartClient;
  sent: Sent[];
  api: (input: unknown, init?: Sent['init']) => Promise<string>;
}> {
  const w = world();
  const client = await launch(w, { baseURLAllowList: ALLOW, ...config });
  const sent: Sent[] = [];
  const fakeFetch = async (input: unknown, init?: Sent['init']): Promise<string> => {
    sent.push({ input, init });
    return 'response';
  };
  return { w, client, sent, api: client.wrapFetch(fakeFetch) };
}

const header = (h: unknown, name: string): string | undefined =>
  (h as Record<string, string> | undefined)?.[name];

describe('wrapFetch', () => {
  it.each<[string, boolean]>([
    ['https://api.example.com/v1/login', true],
    ['https://api.example.com.evil.com/v1/login', false],
    ['https://api.example.com@evil.com/v1/login', false],
    ['https://thirdparty.example/collect', false],
  ])('%s gets the header: %s', async (url, expected) => {
    const { w, client, sent, api } = await setup();
    expect(await api(url, { method: 'POST', body: '{}' })).toBe('response');
    const token = header(sent[0].init?.headers, 'X-Service-Client-Id');
    if (expected) {
      verifyToken(token!, w.server.sessions[0]);
      expect(sent[0].init).toMatchObject({ method: 'POST', body: '{}' });
    } else {
      expect(token).toBeUndefined();
      expect(sent[0].init).toEqual({ method: 'POST', body: '{}' });
    }
    client.destroy();
  });

  it('mints a fresh token for every request', async () => {
    const { w, client, sent, api } = await setup();
    await api('https://api.example.com/v1/login');
    await api('https://api.example.com/v1/login');
    const [a, b] = sent.map((s) => header(s.init?.headers, 'X-Service-Client-Id')!);
    expect(a).not.toBe(b);
    expect(verifyToken(a, w.server.sessions[0]).nonce).not.toBe(verifyToken(b, w.server.sessions[0]).nonce);
    client.destroy();
  });

  it('honours a custom header name', async () => {
    const { client, sent, api } = await setup({ clientIdHeaderName: 'X-Shop-Device' });
    await api('https://api.example.com/v1/login');
    expect(Object.keys(sent[0].init!.headers as object)).toEqual(['X-Shop-Device']);
    expect(client.clientIdHeaderName()).toBe('X-Shop-Device');
    client.destroy();
  });

  it.each<[string, unknown]>([
    ['a plain object', { Authorization: 'Bearer t', 'x-service-client-id': 'stale' }],
    ['a Headers instance', new Headers({ Authorization: 'Bearer t', 'X-Service-Client-Id': 'stale' })],
    [
      'pairs',
      [
        ['Authorization', 'Bearer t'],
        ['X-SERVICE-CLIENT-ID', 'stale'],
      ],
    ],
  ])("keeps the request's own headers given as %s (and replaces any stale token)", async (_, headers) => {
    const { client, sent, api } = await setup();
    await api('https://api.example.com/v1/login', { headers });
    const h = sent[0].init!.headers as Record<string, string>;
    expect(
      Object.keys(h)
        .map((k) => k.toLowerCase())
        .sort(),
    ).toEqual(['authorization', 'x-service-client-id']);
    expect(h.Authorization ?? h.authorization).toBe('Bearer t');
    expect(h['X-Service-Client-Id']).toMatch(/^rpm1\./);
    client.destroy();
  });

  it("reads the URL of a Request or a URL object, and carries a Request's headers over", async () => {
    const { client, sent, api } = await setup();
    const request = new Request('https://api.example.com/v1/cart', {
      headers: { Accept: 'application/json' },
    });
    await api(request);
    expect(sent[0].input).toBe(request);
    expect(sent[0].init!.headers).toEqual({
      accept: 'application/json',
      'X-Service-Client-Id': expect.stringMatching(/^rpm1\./),
    });
    await api(new URL('https://api.example.com/v1/cart'));
    expect(header(sent[1].init!.headers, 'X-Service-Client-Id')).toMatch(/^rpm1\./);
    await api(new URL('https://elsewhere.example/v1/cart'));
    expect(sent[2].init).toBeUndefined();
    client.destroy();
  });
});

describe('axiosRequestInterceptor', () => {
  /** AxiosHeaders' shape: set() in place. */
  class AxiosHeadersLike {
    readonly values: Record<string, string> = {};
    set(name: string, value: string) {
      this.values[name] = value;
      return this;
    }
  }

  it.each<[string, boolean, { baseURL?: string; url?: string }]>([
    ['baseURL and a relative url', true, { baseURL: 'https://api.example.com/v1/', url: '/login' }],
    ['an absolute url', true, { url: 'https://api.example.com/v1/login' }],
    [
      'an absolute url to another host, whatever the baseURL',
      false,
      { baseURL: 'https://api.example.com/v1', url: 'https://evil.com/v1/login' },
    ],
    ['a protocol-relative url', false, { baseURL: 'https://api.example.com/v1', url: '//evil.com/v1' }],
    ['a look-alike baseURL', false, { baseURL: 'https://api.example.com.evil.com/v1', url: 'login' }],
    ['a baseURL outside the allowed path', false, { baseURL: 'https://api.example.com/v2', url: 'login' }],
  ])('%s → header: %s', async (_, expected, target) => {
    const { w, client } = await setup();
    const headers = new AxiosHeadersLike();
    const config = { ...target, headers, method: 'post' };
    const out = await client.axiosRequestInterceptor(config);
    expect(out).toBe(config);
    if (expected) verifyToken(headers.values['X-Service-Client-Id'], w.server.sessions[0]);
    else expect(headers.values).toEqual({});
    client.destroy();
  });

  it('works with plain-object headers (axios before 1.0) and a custom header name', async () => {
    const { client } = await setup({ clientIdHeaderName: 'X-Shop-Device' });
    const out = await client.axiosRequestInterceptor({
      url: 'https://api.example.com/v1/login',
      headers: { Accept: 'application/json' } as unknown,
    });
    expect(out.headers).toEqual({
      Accept: 'application/json',
      'X-Shop-Device': expect.stringMatching(/^rpm1\./),
    });
    client.destroy();
  });

  it("with Castle's header name, and a flush of the queued events as an allow-listed request goes out (not for others)", async () => {
    const { w, client } = await setup({ requestTokenHeaderName: 'X-Castle-Request-Token' });
    await client.screen('Login');
    await client.idle();
    const before = w.server.eventPosts.length;
    const other = await client.axiosRequestInterceptor({
      url: 'https://elsewhere.example/v1/login',
      headers: {} as unknown,
    });
    await client.idle();
    expect([other.headers, w.server.eventPosts.length]).toEqual([{}, before]);
    const out = await client.axiosRequestInterceptor({
      url: 'https://api.example.com/v1/login',
      headers: {} as unknown,
    });
    await client.idle();
    expect(out.headers).toEqual({ 'X-Castle-Request-Token': expect.stringMatching(/^rpm1\./) });
    expect(w.server.eventPosts).toHaveLength(before + 1);
    expect(w.server.eventPosts[before].body.events.map((e: { name?: string }) => e.name)).toEqual(['Login']);
    client.destroy();
  });

  it('is bound: it can be handed to axios.interceptors.request.use as it is', async () => {
    const { client } = await setup();
    const use = (f: (c: { url: string; headers: Record<string, string> }) => Promise<unknown>) =>
      f({ url: 'https://api.example.com/v1/x', headers: {} });
    const out = (await use(client.axiosRequestInterceptor)) as { headers: Record<string, string> };
    expect(out.headers['X-Service-Client-Id']).toMatch(/^rpm1\./);
    client.destroy();
  });
});
