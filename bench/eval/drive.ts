/**
 * Plays the evaluation's steps against a running Rampart over REST, as an application using
 * Castle's API would: the pre-auth check (`$login.attempted` on /v1/authenticate), the password
 * check (a failed one tracked as `$login.failed`), the login verdict (`$login` + `$succeeded` on
 * /v1/risk), the challenge and its answer (`$challenge.succeeded` from a real user,
 * `$challenge.failed` from an attacker), and sign-ups (/v1/filter, then /v1/risk). Steps of one
 * account run in order; steps of different accounts run concurrently. Every event carries its
 * event time (`timestamp`), so history is replayed as it happened. With Rampart's clients, the
 * browser's page collects a token per login, and the company's app speaks the mobile protocol
 * (docs/mobile.md): a session registered when the app opens, app events, and a request token
 * minted on the phone for every login request.
 */
import { createHash, createHmac, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AppContext, Channel, Scenario, Step } from './scenario';
import { leadingZeroBits } from '../../src/core/client/proof';

export interface Verdict {
  action: 'allow' | 'challenge' | 'deny';
  risk: number;
  /** Signal name → its weight (`score`), as the answer gave it. */
  signals: Record<string, number>;
  /** Answered without all the state it needed (read past the verdict budget). */
  degraded?: boolean;
}

/** What happened to one step. */
export interface Outcome {
  scenario: Scenario;
  kind: Step['kind'];
  /** See Step.newOperator. */
  newOperator?: boolean;
  /** A browser, or the app on Android or iOS. */
  channel: Channel;
  /** Legitimate: successful logins before this one (as Rampart let them happen). */
  history: number;
  /** A legitimate sign-up during an attack's sign-up wave. */
  duringWave?: boolean;
  preauth: Verdict | null;
  main: Verdict | null;
  /** The attempt met a challenge or a deny somewhere. */
  stopped: boolean;
  /** The highest risk any of its verdicts gave. */
  risk: number;
  errors: number;
  /** Verdicts answered without the state they needed (read past the verdict budget). */
  degraded: number;
  /**
   * The app's mobile client (`--client`): its session for this step was registered now, kept
   * from an earlier open, or refused by the collector (the app went on without a token); and
   * app-event batches Rampart did not accept; `none`: an old release without the client.
   */
  app?: { session: 'registered' | 'kept' | 'refused' | 'none'; eventsRejected: number };
  /** The browser's page (`--client`): its events (castle-js 2.x's `page`) sent, and those Rampart did not accept. */
  page?: { sent: number; rejected: number };
  /**
   * A login to an account its own sign-up (in this run) was to create, which Rampart stopped: the
   * account does not exist, so the application turns the login away whatever Rampart says. It is
   * played (Rampart sees a failed login for an unknown account) but counted nowhere: the stopped
   * sign-up already was.
   */
  moot?: boolean;
}

export interface DriveOptions {
  baseUrl: string;
  secret: string;
  concurrency: number;
  /** The application reports challenge outcomes ($challenge.succeeded/failed). */
  feedback: boolean;
  /**
   * The application calls the pre-auth check (`$login.attempted` on /v1/authenticate) and tracks
   * failed logins. Without it, as many integrations of Castle's SDKs do, it sends each failed
   * login to /v1/filter (`$login` + `$failed`) and acts on that verdict (a bot stops at it).
   */
  preauth?: boolean;
  /**
   * Rampart's clients: each browser login or sign-up collects a fresh token with this publishable
   * key from the device's components, and the app registers sessions, posts its events and mints
   * request tokens with it (null: `context.token` is sent as it is).
   */
  publishableKey?: string | null;
  onProgress?: (done: number, total: number) => void;
}

export async function drive(steps: readonly Step[], o: DriveOptions): Promise<Outcome[]> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: o.concurrency });
  const url = new URL(o.baseUrl);
  const auth = `Basic ${Buffer.from(`:${o.secret}`).toString('base64')}`;
  /** A call of the application's backend (with the API secret), or with `from`, one the app makes from the phone (no secret, its own headers). */
  const post = (
    path: string,
    body: unknown,
    from?: Record<string, string>,
  ): Promise<{ status: number; json: Record<string, unknown> | null }> =>
    new Promise((resolve, reject) => {
      const text = JSON.stringify(body);
      const headers = from
        ? { ...from, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)) }
        : {
            authorization: auth,
            'content-type': 'application/json',
            'content-length': String(Buffer.byteLength(text)),
          };
      const req = http.request(
        { host: url.hostname, port: url.port, path, method: 'POST', agent, headers },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const raw = Buffer.concat(chunks).toString('utf8');
            let json: Record<string, unknown> | null = null;
            try {
              json = raw ? (JSON.parse(raw) as Record<string, unknown>) : null;
            } catch {
              json = null;
            }
            resolve({ status: res.statusCode ?? 0, json });
          });
        },
      );
      req.on('error', reject);
      req.end(text);
    });
  const verdictOf = (json: Record<string, unknown> | null): Verdict | null => {
    if (!json) return null;
    const policy = json.policy as { action?: string } | undefined;
    const action = (json.action ?? policy?.action) as Verdict['action'] | undefined;
    if (!action) return null;
    const signals: Record<string, number> = {};
    for (const [name, detail] of Object.entries(
      (json.signals as Record<string, { score?: unknown }> | undefined) ?? {},
    ))
      signals[name] = typeof detail?.score === 'number' ? detail.score : 0;
    return {
      action,
      risk: typeof json.risk === 'number' ? json.risk : 0,
      signals,
      degraded: json.degraded === true,
    };
  };
  const successes = new Map<string, number>();
  /** Accounts a sign-up step of this run was to create (their later logins need it to have succeeded). */
  const signedUp = new Set<string>();
  const withPreauth = o.preauth ?? true;

  /** What the page's script would send for a device (its id stands for the profile and the machine). */
  const components = (
    profile: string,
    machine: string,
    headers: Record<string, string>,
    automation: string[],
  ) => {
    const h = (salt: string) => createHash('sha256').update(`${salt}:${machine}`).digest('hex');
    return {
      userAgent: headers['User-Agent'] ?? '',
      languages: (headers['Accept-Language'] ?? 'en').split(',').map((l) => l.split(';')[0] ?? l),
      profile: createHash('sha256').update(`profile:${profile}`).digest('hex').slice(0, 32),
      canvas: h('canvas').slice(0, 12),
      audio: String(124 + parseInt(h('audio').slice(0, 4), 16) / 1e5),
      webgl: {
        vendor: 'Google Inc.',
        renderer: `ANGLE (${['Intel', 'NVIDIA', 'AMD', 'Apple'][parseInt(h('gpu').slice(0, 2), 16) % 4]})`,
      },
      fonts: ['Arial', 'Helvetica', 'Verdana'],
      cores: 2 + (parseInt(h('cores').slice(0, 2), 16) % 14),
      automation,
    };
  };
  /**
   * What the page does before its token (docs/client.md): a real page, or an anti-detect browser
   * running it, asks for a challenge and proves work, and reports what happened on it (people
   * type, a password manager fills, an automated browser types its list fast); a script posting
   * made-up components does neither. Drawn from the step, so a seed gives the same pages.
   */
  const page = async (s: Step): Promise<Record<string, unknown>> => {
    if (s.context.scripted || !o.publishableKey) return {};
    const c = await post('/v1/client/challenge', { publishable_key: o.publishableKey });
    const challenge = c.json?.challenge;
    const salt = c.json?.salt;
    const bits = c.json?.difficulty;
    const out: Record<string, unknown> = {};
    if (typeof challenge === 'string' && typeof salt === 'string' && typeof bits === 'number') {
      let n = 0;
      while (leadingZeroBits(createHash('sha256').update(`${salt}${n}`).digest()) < bits) n++;
      out.proof = { challenge, nonce: String(n) };
    }
    const h = parseInt(createHash('sha256').update(`page:${s.email}:${s.at}`).digest('hex').slice(0, 8), 16);
    const automated = s.scenario !== 'legit';
    const password = automated ? 'typed' : h % 100 < 80 ? 'typed' : h % 100 < 95 ? 'filled' : 'pasted';
    out.behaviour = automated
      ? {
          elapsedMs: 1500 + (h % 2000),
          keys: 20 + (h % 20),
          pointer: 1,
          pastes: 0,
          inputs: 20 + (h % 20),
          password,
        }
      : {
          elapsedMs: 4000 + (h % 40000),
          keys: password === 'filled' ? h % 3 : 8 + (h % 30),
          pointer: 1 + (h % 3),
          pastes: password === 'pasted' ? 1 : 0,
          inputs: 8 + (h % 30),
          password,
        };
    return out;
  };
  const collect = async (s: Step): Promise<string | null> => {
    if (!o.publishableKey || !s.context.token) return s.context.token;
    const r = await post('/v1/client/token', {
      publishable_key: o.publishableKey,
      components: components(
        s.context.token,
        s.context.machine ?? s.context.token,
        s.context.headers,
        s.context.automation ?? [],
      ),
      ...(await page(s)),
    });
    const token = typeof r.json?.token === 'string' ? r.json.token : null;
    // The page's view, as castle-js 2.x's `Castle.page()` reports it when the form loads (no user yet).
    if (token && !s.context.scripted)
      await pageView(
        s,
        token,
        s.kind === 'register' ? 'Sign up' : 'Log in',
        s.kind === 'register' ? '/signup' : '/login',
        null,
      );
    return token;
  };
  /**
   * A page's event (docs/client.md, `POST /v1/client/events` with the page's request token): a page
   * view, naming the user (with the backend's signature of the id) once the login went through.
   */
  const pages = new Map<Step, { sent: number; rejected: number }>();
  const pageView = async (
    s: Step,
    token: string,
    name: string,
    path: string,
    userId: string | null,
  ): Promise<void> => {
    const event = {
      type: 'page',
      timestamp: new Date().toISOString(),
      name,
      url: `https://shop.example${path}`,
      ...(userId ? { user_id: userId, user_signature: signature(userId) } : {}),
    };
    const r = await post('/v1/client/events', {
      publishable_key: o.publishableKey,
      request_token: token,
      events: [event],
    });
    const p = pages.get(s) ?? { sent: 0, rejected: 0 };
    p.sent++;
    if (r.status !== 202) p.rejected++;
    pages.set(s, p);
  };

  // The app's side of the mobile protocol (docs/mobile.md). The phone's clock is this machine's:
  // the replay runs the app now, as the browser's page collects its tokens now, and only the
  // backend's calls carry the step's event time. So the app's tokens and events are stamped with
  // its time plus the offset to Rampart's clock (`server_time`), as the protocol says; when the app
  // opens, and whether its session is older than an hour, is decided in the step's own time.
  interface Session {
    session: string;
    key: string;
    /** Rampart's clock minus the phone's, ms. */
    offset: number;
    /** When it was registered, in the step's time. */
    since: number;
  }
  const sessions = new Map<string, Session>();
  const HOUR = 3_600_000;
  /** The app's own request headers, for its calls to the collector: no secret, no Origin. */
  const appHeadersOf = (s: Step): Record<string, string> => {
    const h: Record<string, string> = {};
    for (const [k, v] of Object.entries(s.context.headers)) if (k.toLowerCase() !== 'content-type') h[k] = v;
    return h;
  };
  const register = async (s: Step, app: AppContext): Promise<Session | null> => {
    const r = await post(
      '/v1/client/token',
      { publishable_key: o.publishableKey, mobile: app.mobile },
      appHeadersOf(s),
    );
    const j = r.json;
    // A server without the mobile protocol answers 422 (`mobile` is not a component it knows):
    // the app goes on without a token, as the client library does when the collector fails.
    if (r.status !== 201 || typeof j?.session !== 'string' || typeof j.session_key !== 'string') return null;
    const offset = typeof j.server_time === 'number' ? j.server_time - Date.now() : 0;
    return { session: j.session, key: j.session_key, offset, since: s.at };
  };
  /** Where the app keeps its session: its private storage, which a reinstall wipes (a new install id, or on iOS a new vendor id). */
  const storageOf = (app: AppContext) => `${app.mobile.installId}:${app.mobile.vendorId}`;
  /** At an open: the install's session, registered again when it is older than an hour (or has expired after 24), or the app was just installed. */
  const openApp = async (
    s: Step,
    app: AppContext,
  ): Promise<{ x: Session | null; how: 'registered' | 'kept' | 'refused' }> => {
    const id = storageOf(app);
    const kept = app.installed ? undefined : sessions.get(id);
    if (kept && s.at - kept.since <= HOUR) return { x: kept, how: 'kept' };
    const fresh = await register(s, app);
    if (fresh) sessions.set(id, fresh);
    else sessions.delete(id);
    return { x: fresh, how: fresh ? 'registered' : 'refused' };
  };
  /** A request token minted on the phone: `rpm1.<session claims>.<t>.<nonce>.<mac>`, HMAC-SHA256 under the session key. */
  const mint = (x: Session): string => {
    const t = Math.round(Date.now() + x.offset);
    const nonce = randomBytes(18).toString('base64url');
    const body = `rpm1.${x.session.replace(/^rps1\./, '')}.${t}.${nonce}`;
    return `${body}.${createHmac('sha256', Buffer.from(x.key, 'utf8')).update(body).digest('base64url')}`;
  };
  type AppEvent = {
    type: string;
    name?: string;
    user_id?: string;
    user_signature?: string;
    properties?: Record<string, string | number | boolean>;
  };
  /**
   * Posts a batch of app events, stamped in order; a session Rampart no longer takes is registered
   * again and the batch resent. Whether Rampart accepted it (202).
   */
  const sendEvents = async (s: Step, app: AppContext, x: Session, events: AppEvent[]): Promise<boolean> => {
    const batch = (y: Session) => ({
      publishable_key: o.publishableKey,
      session: y.session,
      events: events.map((e, k) => ({ ...e, timestamp: new Date(Date.now() + y.offset + k).toISOString() })),
    });
    const r = await post('/v1/client/events', batch(x), appHeadersOf(s));
    if (r.status !== 422) return r.status === 202;
    const again = await register(s, app);
    if (!again) return false;
    sessions.set(storageOf(app), again);
    return (await post('/v1/client/events', batch(again), appHeadersOf(s))).status === 202;
  };
  /** The app's backend signs the user id for `identify` (`secure`). */
  const signature = (userId: string) => createHmac('sha256', o.secret).update(userId).digest('hex');

  /**
   * The app around a login or sign-up, as the client libraries send it (docs/clients.md): at the
   * open, the lifecycle events are flushed at once; the screens up to the form stay queued, and
   * the form's request (allow-listed) flushes them as it goes out, so they race the backend's
   * call to Rampart (`flushing`); the request carries a freshly minted token. Afterwards, the
   * identify (a flush) and the screens, flushed when the app closes.
   */
  const appOpens = async (
    s: Step,
    app: AppContext,
  ): Promise<{
    token: string | null;
    flushing: () => Promise<void>;
    after: (succeeded: boolean) => Promise<void>;
    stats: NonNullable<Outcome['app']>;
  }> => {
    const { x, how } = await openApp(s, app);
    const stats: NonNullable<Outcome['app']> = { session: how, eventsRejected: 0 };
    if (!x) return { token: null, flushing: async () => {}, after: async () => {}, stats };
    const queued: AppEvent[] = [];
    if (app.events) {
      const opening: AppEvent[] = [];
      if (app.installed)
        opening.push({
          type: 'app_installed',
          properties: { version: app.mobile.app.version, build: app.mobile.app.build },
        });
      else if (app.updatedFrom)
        opening.push({
          type: 'app_updated',
          properties: {
            version: app.mobile.app.version,
            build: app.mobile.app.build,
            previous_version: app.updatedFrom.version,
          },
        });
      opening.push({ type: 'app_opened' });
      if (!(await sendEvents(s, app, x, opening))) stats.eventsRejected++;
      queued.push(...app.before.map((name) => ({ type: 'screen', name })), {
        type: 'screen',
        name: s.kind === 'register' ? 'SignUp' : 'Login',
      });
    }
    return {
      token: mint(x),
      flushing: async () => {
        if (queued.length && !(await sendEvents(s, app, x, queued))) stats.eventsRejected++;
      },
      after: async (succeeded) => {
        if (!app.events) return;
        const closing: AppEvent[] = [];
        if (succeeded && s.userId)
          closing.push(
            { type: 'identify', user_id: s.userId, user_signature: signature(s.userId) },
            ...app.screens.map((name) => ({ type: 'screen', name })),
          );
        closing.push({ type: 'app_closed' });
        if (!(await sendEvents(s, app, sessions.get(storageOf(app)) ?? x, closing))) stats.eventsRejected++;
      },
      stats,
    };
  };

  const run = async (s: Step): Promise<Outcome> => {
    const app = s.context.app;
    // An old release of the app, from before it embedded the mobile client: headers only.
    if (o.publishableKey && app && !app.client)
      return { ...(await verdicts(s, null)), app: { session: 'none', eventsRejected: 0 } };
    const opened = o.publishableKey && app ? await appOpens(s, app) : null;
    const token = opened ? opened.token : await collect(s);
    const [out] = await Promise.all([verdicts(s, token), opened?.flushing()]);
    // Logged in (a challenge is answered by the user, never by an attacker): the app identifies
    // the user and goes on; the page's next view names the user.
    const v = out.main;
    const succeeded =
      v !== null && (v.action === 'allow' || (s.scenario === 'legit' && v.action === 'challenge'));
    if (opened) {
      await opened.after(succeeded);
      out.app = opened.stats;
    } else if (token && o.publishableKey && succeeded && s.userId && !s.context.scripted && !app) {
      await pageView(s, token, 'Account', '/account', s.userId);
    }
    const p = pages.get(s);
    if (p) {
      out.page = p;
      pages.delete(s);
    }
    return out;
  };

  const verdicts = async (s: Step, token: string | null): Promise<Outcome> => {
    if (token && s.context.replayedFrom) {
      // The victim's own session used the token first (the phishing proxy forwarded it).
      await post('/v1/authenticate', {
        event: '$login.attempted',
        properties: { email: s.email },
        context: { ip: s.context.replayedFrom, headers: s.context.headers, client_id: token },
        timestamp: new Date(s.at - 5000).toISOString(),
      });
    }
    const ts = (offsetMs = 0) => new Date(s.at + offsetMs).toISOString();
    const context = { ip: s.context.ip, headers: s.context.headers };
    const out: Outcome = {
      scenario: s.scenario,
      kind: s.kind,
      channel: s.channel,
      ...(s.duringWave ? { duringWave: true } : {}),
      ...(s.newOperator !== undefined ? { newOperator: s.newOperator } : {}),
      history: s.userId ? (successes.get(s.userId) ?? 0) : 0,
      preauth: null,
      main: null,
      stopped: false,
      risk: 0,
      errors: 0,
      degraded: 0,
    };
    const legit = s.scenario === 'legit';
    const note = (v: Verdict | null, status: number) => {
      if (v?.degraded) out.degraded++;
      if (!v) {
        out.errors += status >= 400 || status === 0 ? 1 : 0;
        return;
      }
      out.risk = Math.max(out.risk, v.risk);
      if (v.action !== 'allow') out.stopped = true;
    };
    const answer = async (v: Verdict | null, offset: number) => {
      if (!o.feedback || v?.action !== 'challenge' || !s.userId) return;
      await post('/v1/track', {
        event: legit ? '$challenge.succeeded' : '$challenge.failed',
        user_id: s.userId,
        context,
        timestamp: ts(offset),
      });
    };

    if (s.kind === 'register') {
      if (s.userId) signedUp.add(s.userId);
      const filter = await post('/v1/filter', {
        type: '$registration',
        status: '$attempted',
        params: { email: s.email },
        ...(token ? { request_token: token } : {}),
        context,
        timestamp: ts(),
      });
      out.preauth = verdictOf(filter.json);
      note(out.preauth, filter.status);
      if (out.preauth?.action === 'deny' || (!legit && out.preauth?.action === 'challenge')) return out;
      const risk = await post('/v1/risk', {
        type: '$registration',
        status: '$succeeded',
        user: { id: s.userId, email: s.email, registered_at: ts(1000) },
        ...(token ? { request_token: token } : {}),
        context,
        timestamp: ts(1000),
      });
      out.main = verdictOf(risk.json);
      note(out.main, risk.status);
      await answer(out.main, 30_000);
      if (s.userId && out.main && (out.main.action === 'allow' || (legit && out.main.action === 'challenge')))
        successes.set(s.userId, out.history + 1);
      return out;
    }

    // An attacker logging in to an account whose sign-up Rampart stopped: there is no such account.
    const exists = !(s.userId && !legit && signedUp.has(s.userId) && !successes.has(s.userId));
    if (!exists) out.moot = true;
    const userId = exists ? s.userId : null;
    // A failed login: tracked, or (without the pre-auth check) filtered, its verdict acted on.
    const failed = async (offset: number): Promise<Verdict | null> => {
      if (withPreauth) {
        await post('/v1/track', {
          event: '$login.failed',
          ...(userId ? { user_id: userId } : {}),
          properties: { email: s.email },
          context,
          timestamp: ts(offset),
        });
        return null;
      }
      const r = await post('/v1/filter', {
        type: '$login',
        status: '$failed',
        ...(userId ? { user: { id: userId, email: s.email } } : {}),
        params: { email: s.email },
        context,
        timestamp: ts(offset),
      });
      const v = verdictOf(r.json);
      note(v, r.status);
      return v;
    };
    if (s.typo && s.userId) {
      const v = await failed(-20_000);
      // A person asked to prove themselves after a typo does (a CAPTCHA, a code); a denial stops them.
      if (v?.action === 'deny') return out;
    }
    if (s.preauth && withPreauth) {
      const pre = await post('/v1/authenticate', {
        event: '$login.attempted',
        properties: { email: s.email },
        context: { ...context, ...(token ? { client_id: token } : {}) },
        timestamp: ts(),
      });
      out.preauth = verdictOf(pre.json);
      note(out.preauth, pre.status);
      // A bot stops at a pre-auth challenge (a CAPTCHA); a person solves it.
      if (out.preauth?.action === 'deny' || (!legit && out.preauth?.action === 'challenge')) return out;
    }
    if (!userId || !s.passwordCorrect) {
      const v = await failed(2000);
      // Without the pre-auth check, the failed login's verdict stands in its place.
      if (!withPreauth) out.preauth = v;
      return out;
    }
    const risk = await post('/v1/risk', {
      type: '$login',
      status: '$succeeded',
      user: { id: userId, email: s.email },
      ...(token ? { request_token: token } : {}),
      context,
      timestamp: ts(2000),
    });
    out.main = verdictOf(risk.json);
    note(out.main, risk.status);
    await answer(out.main, 60_000);
    if (legit && out.main && out.main.action !== 'deny') successes.set(userId, out.history + 1);
    return out;
  };

  const outcomes: Outcome[] = [];
  let i = 0;
  while (i < steps.length) {
    // A batch of steps of distinct accounts, run together; the next batch waits for it.
    const batch: Step[] = [];
    const keys = new Set<string>();
    while (i < steps.length && batch.length < o.concurrency) {
      const s = steps[i] as Step;
      const key = s.userId ?? s.email;
      // One install's session serves its steps in order too (an attacker's phone, many accounts).
      const install = s.context.app ? `install:${s.context.app.mobile.installId}` : null;
      if (keys.has(key) || (install && keys.has(install))) break;
      keys.add(key);
      if (install) keys.add(install);
      batch.push(s);
      i++;
    }
    outcomes.push(...(await Promise.all(batch.map(run))));
    o.onProgress?.(i, steps.length);
  }
  agent.destroy();
  return outcomes;
}
