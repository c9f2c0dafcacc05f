/**
 * One scrubbing rule for everything stored (docs/privacy.md, "What is never kept"): a password in
 * `properties`, an API key in the user's traits and a reset link's token are kept nowhere, not in
 * the stored event, the profile, the device registry, the webhook sent, nor the privacy export;
 * a malformed track body (cut short, or not JSON at all) keeps no credential in the debugger or the
 * export, and is filed under the user it names so that a purge finds it; and a purge deletes the
 * anonymous records (no user id) that name the user by phone or user name.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import type { Db } from 'mongodb';
import { startTestApp, call, type TestApp } from '../support/app';
import { storedOf } from '../support/stored';
import { EXPORT_LINK, MailSink } from '../support/mail';
import { waitFor } from '../support/wait';

const PRIVACY_OFFICER = 'dpo@shop.example';
const UA =
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';
const ctx = { ip: '81.2.69.142', headers: { 'User-Agent': UA, Accept: 'text/html' } };
const secret = (tag: string) => `${tag}-${randomBytes(8).toString('hex')}`;

let app: TestApp;
const smtp = new MailSink();
let receiver: Server;
const received: string[] = [];

beforeAll(async () => {
  await smtp.start();
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push(Buffer.concat(chunks).toString('utf8'));
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', () => resolve()));
  app = await startTestApp({
    grpc: false,
    smtpUrl: `smtp://127.0.0.1:${smtp.port}`,
    publicUrl: 'http://rampart.test',
  });
  await app.built.services.environments.setWebhookUrl(
    app.env.id,
    `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`,
  );
  await app.built.services.environments.setPrivacyEmail(app.env.id, PRIVACY_OFFICER);
});

afterAll(async () => {
  await app?.close();
  await new Promise((resolve) => receiver?.close(resolve));
  await smtp.close();
});

/** Wait for every write the requests so far left in the background. */
async function settled(): Promise<void> {
  await app.built.services.track.drain(false);
  await app.built.state.flush();
}

/** Every document of every collection, as text. */
async function everything(db: Db): Promise<string> {
  const parts: string[] = [];
  for (const { name } of await db.listCollections().toArray())
    parts.push(`${name}:${JSON.stringify(await db.collection(name).find({}).toArray())}`);
  return parts.join('\n');
}

/** The values of `values` found in `text`. */
const found = (text: string, values: string[]) => values.filter((v) => text.includes(v));

/** The user's privacy export, requested over REST and downloaded through the e-mailed link. */
async function exportOf(userId: string): Promise<string> {
  const before = smtp.mails.length;
  const r = await call(app, 'POST', `/v1/privacy/users/${encodeURIComponent(userId)}`);
  expect(r.status).toBe(202);
  const jobId = r.body.id as string;
  const mail = await waitFor(() => smtp.mails.slice(before).find((m) => m.text.includes(jobId)), {
    what: `the export mail of ${userId}`,
    timeoutMs: 20_000,
  });
  const link = new URL(EXPORT_LINK.exec(mail.text)?.[0] ?? 'http://missing');
  const download = await fetch(`${app.baseUrl}${link.pathname}${link.search}`);
  expect(download.status).toBe(200);
  return download.text();
}

it('a password, an API key in the traits and a reset token are stored nowhere, sent nowhere, exported nowhere', async () => {
  const password = secret('pw');
  const apiKey = secret('ak');
  const resetToken = secret('rt');
  const session = secret('ss');
  const all = [password, apiKey, resetToken, session];
  const user = { id: 'scrub-1', email: 'scrub-1@example.com', traits: { api_key: apiKey, plan: 'pro' } };
  const properties = { password, reset_url: `https://shop.example/reset?token=${resetToken}&lang=en` };
  // Denied by a sandbox test token, so that a webhook goes out with the event's traits and properties.
  const risk = await call(app, 'POST', '/v1/risk', {
    event: '$login',
    status: '$succeeded',
    user,
    properties,
    request_token: 'test|device:chrome_on_mac|policy.action:deny',
    context: { ...ctx, locale: 'en-GB', session },
  });
  expect(risk.status).toBe(201);
  expect(risk.body.policy.action).toBe('deny');
  const tracked = await call(app, 'POST', '/v1/track', {
    event: '$profile_update',
    user_id: 'scrub-1',
    user_traits: { password, api_key: apiKey },
    properties,
    context: ctx,
  });
  expect(tracked.status).toBe(204);
  await settled();
  await waitFor(() => received.length > 0, { what: 'the deny webhook' });

  const [latest] = await storedOf(app).eventsOfUser(app.env.id, 'scrub-1', 1);
  expect(latest?.properties).toEqual({
    password: true,
    reset_url: 'https://shop.example/reset?token=***&lang=en',
  });
  expect(found(await everything(app.database.db), all)).toEqual([]);
  expect(found(received.join('\n'), all)).toEqual([]);
  const exported = await exportOf('scrub-1');
  expect(found(exported, all)).toEqual([]);
  expect(exported).toContain('reset?token=***');
  expect(JSON.parse(exported).profile.traits).toMatchObject({
    traits: { api_key: true, plan: 'pro' },
    api_key: true,
    password: true,
  });
});

it('a cut body keeps no credential in the debugger, nor in the export of the user it names', async () => {
  const bearer = secret('bearer');
  expect(
    (await call(app, 'POST', '/v1/track', { event: '$login.failed', user_id: 'scrub-2', context: ctx }))
      .status,
  ).toBe(204);
  const raw = `{"event":"$login.failed","user_id":"scrub-2","context":{"ip":"81.2.69.142","headers":{"User-Agent":"${UA}","Authorization":"Bearer ${bearer}`;
  expect((await call(app, 'POST', '/v1/track', undefined, { raw })).status).toBe(204);
  await settled();
  const entries = (await storedOf(app).debugger(app.env.id, 1000)).filter((e) => e.userId === 'scrub-2');
  expect(entries).toHaveLength(1);
  expect(entries[0]?.payload).toContain('"Authorization":true');
  expect(found(await everything(app.database.db), [bearer])).toEqual([]);
  const exported = JSON.parse(await exportOf('scrub-2')) as { rejected_payloads: { payload: string }[] };
  expect(exported.rejected_payloads).toHaveLength(1);
  expect(found(JSON.stringify(exported), [bearer])).toEqual([]);
});

it('a body that is not JSON is scrubbed by pattern, and filed under the user or the identifiers it names, so that a purge finds it', async () => {
  const bearer = secret('bearer');
  const password = secret('pw');
  const phone = `+4477009${randomBytes(3).readUIntBE(0, 3).toString().padStart(5, '0').slice(0, 5)}`;
  expect(
    (
      await call(app, 'POST', '/v1/risk', {
        event: '$login',
        status: '$succeeded',
        user: { id: 'scrub-3', email: 'scrub-3@example.com', phone },
        request_token: 'cid-scrub-3',
        context: ctx,
      })
    ).status,
  ).toBe(201);
  // Single quotes: not JSON.
  const named = `{'event': '$login.failed', 'user_id': 'scrub-3', 'context': {'headers': {'Authorization': 'Bearer ${bearer}'}}, 'properties': {'password': '${password}'}}`;
  // Names no user id, only the user's phone.
  const anonymous = `{params: {phone: '${phone}', password: '${password}'}, event: $login.failed`;
  for (const raw of [named, anonymous])
    expect((await call(app, 'POST', '/v1/track', undefined, { raw })).status).toBe(204);
  await settled();
  const entries = (await storedOf(app).debugger(app.env.id, 1000)).filter(
    (e) => e.payload.includes('scrub-3') || e.payload.includes(phone),
  );
  expect(entries.map((e) => e.userId ?? 'none').sort()).toEqual(['none', 'scrub-3']);
  expect(found(await everything(app.database.db), [bearer, password])).toEqual([]);

  expect((await call(app, 'DELETE', '/v1/privacy/users/scrub-3')).status).toBe(202);
  expect(
    (await storedOf(app).debugger(app.env.id, 1000)).filter(
      (e) => e.payload.includes('scrub-3') || e.payload.includes(phone),
    ),
  ).toEqual([]);
});

it('a purge deletes the anonymous events that name the user by phone or user name, in any field, and keeps the others', async () => {
  const r = randomBytes(4).readUInt32BE(0).toString().padStart(10, '0');
  const victim = {
    id: 'scrub-4',
    email: `scrub-4-${r}@example.com`,
    phone: `+4420${r.slice(0, 8)}`,
    username: `victim_${r}`,
  };
  const keeper = { phone: `+4421${r.slice(0, 8)}`, username: `keeper_${r}` };
  expect(
    (
      await call(app, 'POST', '/v1/risk', {
        event: '$login',
        status: '$succeeded',
        user: victim,
        request_token: 'cid-scrub-4',
        context: ctx,
      })
    ).status,
  ).toBe(201);
  // Anonymous events (no user id) on filter: the victim's phone and user name, in params, properties and the user.
  const filter = (body: Record<string, unknown>) =>
    call(app, 'POST', '/v1/filter', { type: '$login', status: '$failed', context: ctx, ...body });
  expect((await filter({ params: { phone: victim.phone } })).status).toBe(201);
  expect((await filter({ params: { username: victim.username } })).status).toBe(201);
  expect(
    (
      await filter({
        params: { email: `someone-else-${r}@example.com` },
        properties: { phone: victim.phone },
      })
    ).status,
  ).toBe(201);
  expect(
    (
      await filter({
        type: '$registration',
        status: '$attempted',
        user: { phone: victim.phone, username: victim.username },
      })
    ).status,
  ).toBe(201);
  expect((await filter({ params: { phone: keeper.phone, username: keeper.username } })).status).toBe(201);
  await settled();
  expect(found(await everything(app.database.db), [victim.phone, victim.username])).toEqual([
    victim.phone,
    victim.username,
  ]);

  expect((await call(app, 'DELETE', '/v1/privacy/users/scrub-4')).status).toBe(202);
  const left = await everything(app.database.db);
  expect(found(left, [victim.id, victim.email, victim.phone, victim.username])).toEqual([]);
  expect(found(left, [keeper.phone, keeper.username])).toEqual([keeper.phone, keeper.username]);
});
