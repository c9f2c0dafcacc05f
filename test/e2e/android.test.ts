/**
 * The Android client library (clients/android) against the real service, end to end, over
 * loopback. This file starts Rampart (on the suite's database) and an application backend, then
 * runs the library's Maven build offline: its Robolectric unit tests (the shared vectors, the
 * lifecycle, storage, integrity and interceptor) and EndToEndTest, which runs the library in a
 * Robolectric app with its real Android platform: install and open, screens, a login through the
 * backend with the OkHttp interceptor (the verdict: allow), a forged and a replayed token
 * (refused), a custom event, identify and the signed-user JWT, close, then an uninstall and a new
 * install (the same device). The build also packages the jar and the AAR-shaped zip, and dexes
 * the jar with D8 for Android 8. Then this file checks what Rampart kept: the app's events, and
 * the phone in the user's device registry with its model and app version.
 */
import { execFile } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { startTestApp, call, type TestApp } from '../support/app';
import { ANDROID_DIR, androidMavenRepo, assertAndroidPrepared } from '../support/android';

let app: TestApp;
let backend: http.Server;
let other: http.Server;
const received: { server: 'backend' | 'other'; path: string; clientId: string | undefined }[] = [];
const PHONE_IP = '81.2.69.142';

/** The application's backend: checks the password, then asks Rampart, forwarding the app's header as Castle's SDKs forward a client id. */
function startBackend(name: 'backend' | 'other'): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const clientId = req.headers['x-service-client-id'] as string | undefined;
      received.push({ server: name, path: req.url ?? '', clientId });
      if (req.url !== '/api/login')
        return res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { user: string; password: string };
      if (body.password !== 'right') return res.writeHead(401).end();
      const headers: Record<string, string> = { 'User-Agent': req.headers['user-agent'] ?? '' };
      if (req.headers['accept-encoding']) headers['Accept-Encoding'] = String(req.headers['accept-encoding']);
      if (req.headers.accept) headers.Accept = String(req.headers.accept);
      const r = await call(app, 'POST', '/v1/risk', {
        type: '$login',
        status: '$succeeded',
        user: { id: body.user, email: `${body.user}@example.com` },
        request_token: clientId,
        context: { ip: PHONE_IP, headers },
      });
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(r.body));
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

const url = (s: http.Server) => `http://127.0.0.1:${(s.address() as AddressInfo).port}`;

/** What the app's backend hands the app for Castle's userJwt: an HS256 JWT under the API secret. */
function userJwt(id: string, secret: string): string {
  const part = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const signed = `${part({ alg: 'HS256', typ: 'JWT' })}.${part({ id, email: `${id}@example.com`, exp: Math.floor(Date.now() / 1000) + 3600 })}`;
  return `${signed}.${createHmac('sha256', secret).update(signed).digest('base64url')}`;
}

beforeAll(async () => {
  assertAndroidPrepared();
  app = await startTestApp({ grpc: false });
  backend = await startBackend('backend');
  other = await startBackend('other');
});
afterAll(async () => {
  await new Promise((r) => backend?.close(r));
  await new Promise((r) => other?.close(r));
  await app?.close();
});

/** `mvn -o package` with the addresses as system properties; resolves with the output, rejects with it. */
function maven(props: Record<string, string>): Promise<string> {
  const args = [
    '-B',
    '-o',
    '-q',
    '--no-transfer-progress',
    '-Dstyle.color=never',
    `-Dmaven.repo.local=${androidMavenRepo()}`,
    ...Object.entries(props).map(([k, v]) => `-D${k}=${v}`),
    'package',
  ];
  return new Promise((resolve, reject) => {
    execFile(
      'mvn',
      args,
      { cwd: ANDROID_DIR, timeout: 900_000, maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const out = `${stdout}\n${stderr}`.split(`${String.fromCharCode(27)}[0m`).join('');
        if (err) reject(new Error(`mvn ${args.join(' ')} failed:\n${out.slice(-20_000)}`));
        else resolve(out);
      },
    );
  });
}

describe('the Android client against the real service', () => {
  const user = `android-user-${Date.now()}`;
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'rampart-android-'));
  const result = path.join(tmp, 'result.json');
  let outcome: { device: string; package: string };

  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it('builds, passes its unit tests and its end-to-end test, and packages the jar and the AAR', async () => {
    const out = await maven({
      'rampart.url': app.baseUrl,
      'rampart.key': app.env.publishableKey,
      'rampart.backend': url(backend),
      'rampart.other': url(other),
      'rampart.user': user,
      'rampart.android_id': randomBytes(8).toString('hex'),
      'rampart.jwt': userJwt(user, app.secret),
      'rampart.result': result,
    });
    expect(out).not.toMatch(/Tests run:.*Failures: [1-9]/);
    // The end-to-end class ran (it writes its result last) rather than being skipped.
    expect(existsSync(result)).toBe(true);
    outcome = JSON.parse(readFileSync(result, 'utf8')) as { device: string; package: string };
    // The jar, the AAR, and the jar dexed by D8 for Android 8 (the build fails when D8 cannot).
    for (const f of ['rampart-android-0.1.0.jar', 'rampart-android-0.1.0.aar', 'd8/classes.dex'])
      expect(existsSync(path.join(ANDROID_DIR, 'target', f))).toBe(true);
  }, 900_000);

  it("the interceptor sent a fresh token to the app's API and none elsewhere", () => {
    expect(outcome).toBeDefined();
    const api = received.filter((r) => r.server === 'backend' && r.path.startsWith('/api/'));
    expect(api.find((r) => r.path === '/api/profile')?.clientId).toMatch(/^rpm1\./);
    expect(api.filter((r) => r.path === '/api/login').every((r) => /^rpm1\./.test(r.clientId ?? ''))).toBe(
      true,
    );
    const viaInterceptor = [api[0], api[1], api[api.length - 1]].map((r) => r.clientId);
    expect(new Set(viaInterceptor).size).toBe(3);
    expect(received.filter((r) => r.server === 'other')).toEqual([
      { server: 'other', path: '/api/profile', clientId: undefined },
    ]);
  });

  it("the app's events reached Rampart, with the user on those after identify", async () => {
    expect(outcome).toBeDefined();
    await app.built.state.flush();
    const events = await app.database.db
      .collection('client_events')
      .find({ envId: app.env.id, appId: outcome.package })
      .sort({ at: 1 })
      .toArray();
    const count = (type: string) => events.filter((e) => e.type === type).length;
    // Two installs (the reinstall wiped the app's files), two opens, one close.
    expect([count('app_installed'), count('app_opened'), count('app_closed')]).toEqual([2, 2, 1]);
    expect(events.find((e) => e.type === 'app_installed')).toMatchObject({
      platform: 'android',
      appVersion: '3.2.1',
      properties: { version: '3.2.1', build: '321' },
    });
    expect(
      events
        .filter((e) => e.type === 'screen')
        .map((e) => e.name)
        .sort(),
    ).toEqual(['Home', 'LoginActivity', 'LoginActivity', 'Welcome']);
    expect(events.find((e) => e.type === 'custom')).toMatchObject({
      name: 'Added to cart',
      properties: { sku: 'A-1', qty: 2 },
    });
    // identify, then userJwt: the second is verified (the JWT is signed with the API secret).
    expect(
      events.filter((e) => e.type === 'identify').map((e) => [e.userId, e.verified, e.properties]),
    ).toEqual([
      [user, false, { plan: 'pro' }],
      [user, true, {}],
    ]);
    expect(
      events
        .filter((e) => e.userId === user)
        .map((e) => e.type)
        .sort(),
    ).toEqual(['app_closed', 'identify', 'identify', 'screen']);
  });

  it("the phone is in the user's registry once, with its model, OS and app version", async () => {
    expect(outcome).toBeDefined();
    const devices = await call(app, 'GET', `/v1/users/${user}/devices`);
    expect(devices.body.total_count).toBe(1);
    expect(devices.body.data[0]).toMatchObject({
      token: outcome.device,
      context: {
        type: 'mobile',
        properties: {
          platform: 'android',
          model: 'Pixel 8',
          os: 'Android 14',
          app_id: outcome.package,
          app_version: '3.2.1',
          app_build: '321',
        },
      },
    });
  });
});
