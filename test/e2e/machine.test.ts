/**
 * A private window or cleared storage on the user's own computer, over real HTTP on a real
 * database: the browser script's new profile id makes a new device key, yet the collector's
 * machine vector (canvas, audio, WebGL, fonts, hardware) is the same, and at home Rampart takes
 * the login as the user's device (the same device token, no `new_device`), and from then on that
 * profile names the device anywhere. The same machine's fingerprint from a network the user never
 * used (an anti-detect browser copying it) is a new device; so is a profile on a machine shared
 * by a fleet.
 */
import { startTestApp, call, type TestApp } from '../support/app';
import { LAPTOP_UA, laptopComponents } from '../support/components';

let app: TestApp;
beforeAll(async () => {
  // Every login mints a token from this one address: well above the collector's default rate limit.
  app = await startTestApp({ grpc: false, clientRateLimitPerSecond: 1000 });
});
afterAll(async () => {
  await app?.close();
});

const HOME = '81.2.69.142';
const HOME_NEIGHBOUR = '81.2.69.201';
const ABROAD = '175.16.199.1';
const headers = { 'User-Agent': LAPTOP_UA, Accept: 'text/html', 'Accept-Language': 'en-GB' };

async function token(components: Record<string, unknown>): Promise<string> {
  const r = await call(
    app,
    'POST',
    '/v1/client/token',
    { publishable_key: app.env.publishableKey, components },
    { secret: null, headers: { 'content-type': 'text/plain', origin: 'https://shop.example' } },
  );
  expect(r.status).toBe(201);
  return r.body.token as string;
}

interface Answer {
  risk: number;
  signals: Record<string, unknown>;
  device: { token: string };
  policy: { action: string };
}
async function login(
  user: string,
  profile: string,
  ip: string,
  over: Record<string, unknown> = {},
): Promise<Answer> {
  const request_token = await token(laptopComponents({ profile, ...over }));
  const r = await call(app, 'POST', '/v1/risk', {
    event: '$login',
    status: '$succeeded',
    user: { id: user, email: `${user}@example.com` },
    request_token,
    context: { ip, headers },
  });
  expect(r.status).toBe(201);
  return r.body as Answer;
}
const settle = async () => {
  await app.built.services.track.drain(false);
  await app.built.state.flush();
};

it('a new profile on the user’s own computer at home is the same device, and stays so abroad', async () => {
  const user = 'machine-owner';
  const first = await login(user, 'profile-aaaaaaaaaaaaaaaa', HOME);
  for (let i = 0; i < 3; i++)
    expect((await login(user, 'profile-aaaaaaaaaaaaaaaa', HOME)).device.token).toBe(first.device.token);
  await settle();

  // A private window (a new profile id, the same machine), on the home network.
  const privateWindow = await login(user, 'profile-bbbbbbbbbbbbbbbb', HOME_NEIGHBOUR);
  expect(privateWindow.device.token).toBe(first.device.token);
  expect(privateWindow.signals).not.toHaveProperty('new_device');
  expect(privateWindow.policy.action).toBe('allow');
  await settle();

  // That profile now names the device wherever it goes.
  const travelling = await login(user, 'profile-bbbbbbbbbbbbbbbb', ABROAD);
  expect(travelling.device.token).toBe(first.device.token);
  expect(travelling.signals).not.toHaveProperty('new_device');

  // The same machine's fingerprint under a profile first seen abroad: a new device.
  const copied = await login(user, 'profile-cccccccccccccccc', ABROAD);
  expect(copied.device.token).not.toBe(first.device.token);
  expect(copied.signals).toHaveProperty('new_device');
  await settle();

  // The registry: the laptop (one device, its two profiles) and the stranger's browser.
  const devices = await call(app, 'GET', `/v1/users/${user}/devices`);
  expect(devices.status).toBe(200);
  const tokens = (devices.body.data as { token: string }[]).map((d) => d.token).sort();
  expect(tokens).toEqual([first.device.token, copied.device.token].sort());
});

it('a browser update that changed one rendering hash, in a new profile at home, is still the device', async () => {
  const user = 'machine-updated';
  const first = await login(user, 'profile-dddddddddddddddd', HOME);
  await login(user, 'profile-dddddddddddddddd', HOME);
  await settle();
  // Two hashes changed at once: another machine.
  const other = await login(user, 'profile-ffffffffffffffff', HOME, { canvas: 'c9d8e7', audio: '124.5' });
  expect(other.device.token).not.toBe(first.device.token);
  const updated = await login(user, 'profile-eeeeeeeeeeeeeeee', HOME, { canvas: 'c9d8e7' });
  expect(updated.device.token).toBe(first.device.token);
});

it('a machine shared by a fleet identifies nobody: a new profile on it is a new device', async () => {
  // Forty colleagues with one laptop model log in from their homes.
  const fleet = { canvas: 'f1ee7c', audio: '124.0001', cores: 12 };
  for (let k = 0; k < 40; k++)
    await login(
      `colleague-${k}`,
      `profile-fleet-${String(k).padStart(10, '0')}`,
      `89.160.20.${k + 10}`,
      fleet,
    );
  const user = 'fleet-member';
  const first = await login(user, 'profile-gggggggggggggggg', HOME, fleet);
  await login(user, 'profile-gggggggggggggggg', HOME, fleet);
  await settle();
  const again = await login(user, 'profile-hhhhhhhhhhhhhhhh', HOME, fleet);
  expect(again.device.token).not.toBe(first.device.token);
  expect(again.signals).toHaveProperty('new_device');
});
