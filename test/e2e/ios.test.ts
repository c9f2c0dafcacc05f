/**
 * The iOS library (clients/ios, a Swift package) against the real service. Swift runs in the
 * Debian 13 chroot that scripts/ensure-swift.sh sets up (CI runs it; it is cached outside the
 * clone); the chroot shares this machine's network, so the package's tests reach the Rampart and
 * the app backend this file starts on loopback. One run builds the package and runs all its
 * XCTests: the unit tests (the shared rules, over a fake platform) and
 * Tests/RampartE2ETests, which plays an iPhone app against this Rampart with the addresses it is
 * given in RAMPART_E2E_* and reports what it saw. Then we check what Rampart kept: the app's
 * events in order, and the phone in the user's device registry with its model, OS and app.
 */
import { execFile } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { startTestApp, call, type TestApp } from '../support/app';

const REPO = path.join(__dirname, '..', '..');
const PACKAGE = path.join(REPO, 'clients', 'ios');
const REPORT = path.join(PACKAGE, '.build', 'e2e-report.json');
/** The whole build and test output, kept for reading after a failure. */
const LOG = path.join(PACKAGE, '.build', 'e2e-output.log');
const PHONE_IP = '81.2.69.142';

let app: TestApp;
let backend: http.Server;
let other: http.Server;
const received: { port: number; path: string; clientId: string | undefined }[] = [];

/** The application's backend: checks the password, then asks Rampart, forwarding the app's header as Castle's SDKs forward a client id. Echoes the header it got. */
function startBackend(): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const clientId = req.headers['x-service-client-id'] as string | undefined;
      received.push({ port: (server.address() as AddressInfo).port, path: req.url ?? '', clientId });
      if (process.env.RAMPART_TEST_LOG) console.log('backend', req.method, req.url, req.headers);
      const json = (status: number, body: unknown) =>
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      if (req.url !== '/api/login') return json(200, { ok: true, receivedToken: clientId });
      let body: { user?: string; password?: string } = {};
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as typeof body;
      } catch {
        return json(400, { error: 'the body is not JSON' });
      }
      if (body.password !== 'right' || !body.user) return json(401, {});
      const r = await call(app, 'POST', '/v1/risk', {
        type: '$login',
        status: '$succeeded',
        user: { id: body.user, email: `${body.user}@example.com` },
        request_token: clientId,
        context: {
          ip: PHONE_IP,
          headers: {
            'User-Agent': req.headers['user-agent'] ?? '',
            Accept: '*/*',
            'Accept-Encoding': 'gzip, deflate, br',
            'Accept-Language': 'en-GB,en;q=0.9',
          },
        },
      });
      json(200, { ...(r.body as Record<string, unknown>), receivedToken: clientId });
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

/** What the app's backend hands the app after a login: the user's signature and a signed-user JWT (HS256), both under the API secret. */
const signature = (user: string) => createHmac('sha256', app.secret).update(user).digest('hex');
function userJwt(user: string): string {
  const part = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const signed = `${part({ alg: 'HS256', typ: 'JWT' })}.${part({ id: user, email: `${user}@example.com` })}`;
  return `${signed}.${createHmac('sha256', app.secret).update(signed).digest('base64url')}`;
}

const url = (s: http.Server) => `http://127.0.0.1:${(s.address() as AddressInfo).port}`;

/** `scripts/swift.sh <args>`, with the RAMPART_E2E_* variables; resolves with its output whatever its exit code. */
function swift(args: string[], vars: Record<string, string>): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(
      'bash',
      [path.join(REPO, 'scripts', 'swift.sh'), ...args],
      { env: { ...process.env, ...vars }, timeout: 20 * 60_000, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, output: `${stderr}\n${stdout}` });
      },
    );
  });
}

beforeAll(async () => {
  app = await startTestApp({ grpc: false });
  backend = await startBackend();
  other = await startBackend();
});
afterAll(async () => {
  await new Promise((r) => backend?.close(r));
  await new Promise((r) => other?.close(r));
  await app?.close();
});

describe('the iOS library (Swift, XCTest) against the real service', () => {
  const user = `ios-user-${Date.now()}`;
  let output = '';

  it(
    'builds, and passes its unit tests and its end-to-end test',
    async () => {
      rmSync(REPORT, { force: true });
      const run = await swift(['bash', '-c', 'swift build && swift test --disable-swift-testing'], {
        RAMPART_E2E_BASE_URL: app.baseUrl,
        RAMPART_E2E_PUBLISHABLE_KEY: app.env.publishableKey,
        RAMPART_E2E_BACKEND: url(backend),
        RAMPART_E2E_OTHER: url(other),
        RAMPART_E2E_USER: user,
        RAMPART_E2E_USER_SIGNATURE: signature(user),
        RAMPART_E2E_USER_JWT: userJwt(user),
        RAMPART_E2E_REPORT: '/rampart/clients/ios/.build/e2e-report.json',
      });
      output = run.output;
      writeFileSync(LOG, output);
      if (run.code !== 0)
        throw new Error(
          `swift build/test failed (${run.code}); the whole output is in ${LOG}:\n${output.slice(-8000)}`,
        );
      expect(output).toMatch(/Test Suite 'All tests' passed/);
      expect(output).toMatch(/Executed \d+ tests, with 0 failures/);
      // The end-to-end test ran (it skips only without RAMPART_E2E_*).
      expect(output).toMatch(/E2ETests\.testAnIPhoneAppAgainstTheRealService' passed/);
      expect(output).not.toMatch(/skipped/);
    },
    25 * 60_000,
  );

  it('the app events arrived in order, with the user on those after identify', async () => {
    expect(existsSync(REPORT)).toBe(true);
    await app.built.state.flush();
    const expected = [
      ['app_installed', null],
      ['app_opened', null],
      ['screen', 'Welcome'],
      ['screen', 'Login'],
      ['identify', null],
      ['screen', 'Home'],
      ['app_closed', null],
      // The reinstall, and the user signed in again with the signed-user JWT.
      ['app_installed', null],
      ['app_opened', null],
      ['identify', null],
    ];
    // In the order they happened; events queued in the same millisecond (an install and its open) in the order above.
    const rank = (e: Record<string, unknown>) =>
      expected.findIndex(([type, name]) => type === e.type && name === (e.name ?? null));
    const events = (
      await app.database.db
        .collection('client_events')
        .find({ envId: app.env.id, appId: 'com.example.shop' })
        .toArray()
    ).sort((a, b) => (a.at as Date).getTime() - (b.at as Date).getTime() || rank(a) - rank(b));
    expect(events.map((e) => [e.type, e.name ?? null])).toEqual(expected);
    expect(events[0]).toMatchObject({
      platform: 'ios',
      appVersion: '3.2.1',
      properties: { version: '3.2.1', build: '321' },
    });
    expect(events.slice(4, 7).map((e) => e.userId)).toEqual([user, user, user]);
    // Both identifies verified: the first by secure()'s signature, the second by userJwt's JWT.
    expect([events[4]?.verified, events[9]?.verified]).toEqual([true, true]);
    expect(events[9]?.userId).toBe(user);
    // Both installs are one device: the Keychain's install id outlived the app's files.
    expect(new Set(events.map((e) => e.deviceKey)).size).toBe(1);
  });

  it('the phone is in the registry with its model, OS and app version, and the reinstall is the same device', async () => {
    const report = JSON.parse(readFileSync(REPORT, 'utf8')) as {
      deviceToken: string;
      reinstallDeviceToken: string;
      user: string;
    };
    expect(report.user).toBe(user);
    expect(report.reinstallDeviceToken).toBe(report.deviceToken);
    const devices = await call(app, 'GET', `/v1/users/${user}/devices`);
    expect(devices.body.total_count).toBe(1);
    expect(devices.body.data[0]).toMatchObject({
      token: report.deviceToken,
      context: {
        type: 'mobile',
        properties: {
          platform: 'ios',
          model: 'iPhone15,3',
          os: 'iOS 17.4',
          app_id: 'com.example.shop',
          app_version: '3.2.1',
          app_build: '321',
        },
      },
    });
  });

  it("the header reached the app's API only", () => {
    const backendPort = (backend.address() as AddressInfo).port;
    const mine = received.filter((r) => r.port === backendPort && r.path === '/api/profile');
    expect(mine.length).toBe(2);
    expect(mine.every((r) => r.clientId?.startsWith('rpm1.'))).toBe(true);
    const theirs = received.filter((r) => r.port !== backendPort);
    expect(theirs.length).toBe(1);
    expect(theirs[0]?.clientId).toBeUndefined();
  });
});
