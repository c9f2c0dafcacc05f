#!/usr/bin/env node
/*
 * Drives Castle's official Node SDK (@castleio/sdk 0.4.x) against Rampart.
 *
 *   RAMPART_URL=http://127.0.0.1:3000 RAMPART_SECRET=... node test/compat/node/drive_castle.js authenticate_login
 *
 * Only the SDK's public API is used (new Castle({...}), authenticate(), track(), EVENTS).
 * 0.4.x offers nothing else: no risk/filter/log, no device API, no privacy, no webhook helper;
 * those scenarios print {"skipped": "..."}.
 *
 * Exactly ONE JSON object is printed on stdout (last line):
 *   {"sdk":"castle-node","sdk_version":"0.4.7","scenario":"...","ok":true,"result":...}
 *   {"sdk":...,"scenario":...,"ok":false,"error":{"class":"Error","message":"..."}}
 *   {"sdk":...,"scenario":...,"skipped":"reason"}
 * Exit status: 0 when a JSON object was printed for a known scenario, 2 for usage errors.
 *
 * Environment (optional except RAMPART_URL / RAMPART_SECRET):
 *   RAMPART_URL        base URL with or without /v1 (the Node SDK appends /v1/...; stripped here)
 *   RAMPART_SECRET     API secret; RAMPART_BAD_SECRET for bad_secret_* (default: secret + "-wrong")
 *   RAMPART_TIMEOUT_MS SDK `timeout` in ms (default 5000; the SDK default is 750)
 *   RAMPART_FAILOVER   SDK `failoverStrategy`: allow (SDK default) | deny | challenge | none
 *   RAMPART_SDK_LOG_LEVEL  SDK pino level (default "silent"; other levels log to stdout!)
 *   RAMPART_USER_ID, RAMPART_EMAIL, RAMPART_IP, RAMPART_USER_AGENT, RAMPART_CLIENT_ID,
 *   RAMPART_TIMESTAMP (sent as created_at), RAMPART_DEVICE_TOKEN (track_* device scenarios)
 *   RAMPART_CID_COOKIE, RAMPART_CID_HEADER (*_from_request: the browser's `__cid` cookie and
 *   `X-Castle-Client-Id` header, as Castle's web client or Rampart's script with Castle's names sets them)
 *
 * The *_from_request scenarios play an Express application too: a loopback HTTP server whose login
 * handler builds the context from `req` as the SDK's 0.4.x README shows (`ip: req.ip`,
 * `client_id: req.cookies['__cid']`, `headers: req.headers`, with cookie-parser and `trust proxy`),
 * and a browser's request to it (its headers, its cookies, the address a proxy forwarded).
 */
'use strict';

const sdkPkg = require('@castleio/sdk/package.json');

const { Castle, EVENTS } = require('@castleio/sdk');

const env = (name, dflt) => (process.env[name] !== undefined ? process.env[name] : dflt);
const SCENARIO = process.argv[2] || '';
const USER_ID = env('RAMPART_USER_ID', 'compat-user-1');
const EMAIL = env('RAMPART_EMAIL', 'compat-user-1@example.com');
const IP = env('RAMPART_IP', '203.0.113.7');
const USER_AGENT = env(
  'RAMPART_USER_AGENT',
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36',
);
const CLIENT_ID = env('RAMPART_CLIENT_ID', '');

function emit(payload, code = 0) {
  const out = Object.assign({ sdk: 'castle-node', sdk_version: sdkPkg.version, scenario: SCENARIO }, payload);
  process.stdout.write(`${JSON.stringify(out)}\n`, () => process.exit(code));
}

function errorInfo(err) {
  return {
    class: (err && err.constructor && err.constructor.name) || typeof err,
    name: err && err.name,
    message: err && err.message !== undefined ? err.message : String(err),
  };
}

async function attempt(fn) {
  try {
    const result = await fn();
    return { ok: true, result: result === undefined ? null : result };
  } catch (err) {
    return { ok: false, error: errorInfo(err) };
  }
}

class Skip extends Error {}

function client(secret) {
  const url = env('RAMPART_URL');
  const apiSecret = secret !== undefined ? secret : env('RAMPART_SECRET');
  if (!url || !apiSecret) {
    emit(
      { ok: false, error: { class: 'UsageError', message: 'RAMPART_URL and RAMPART_SECRET are required' } },
      2,
    );
    return null;
  }
  // The SDK builds `${apiUrl}/v1/authenticate`: the base must not carry /v1 or a trailing slash.
  const apiUrl = url.replace(/\/+$/, '').replace(/\/v1$/, '');
  return new Castle({
    apiSecret,
    apiUrl,
    timeout: Number(env('RAMPART_TIMEOUT_MS', '5000')),
    failoverStrategy: env('RAMPART_FAILOVER', 'allow'),
    logLevel: env('RAMPART_SDK_LOG_LEVEL', 'silent'),
  });
}

function context(ip = IP) {
  const ctx = {
    ip,
    headers: {
      'User-Agent': USER_AGENT,
      Accept: 'text/html,application/xhtml+xml',
      'Accept-Language': 'en-US,en;q=0.9',
      Host: 'app.example.com',
      Cookie: 'session=abc', // the SDK always scrubs Cookie to `true`
    },
  };
  if (CLIENT_ID) ctx.client_id = CLIENT_ID;
  return ctx;
}

function withTimestamp(params) {
  if (env('RAMPART_TIMESTAMP')) params.created_at = env('RAMPART_TIMESTAMP');
  return params;
}

const badSecret = () => env('RAMPART_BAD_SECRET', `${env('RAMPART_SECRET', '')}-wrong`);

const loginSucceeded = (ip) =>
  withTimestamp({
    event: EVENTS.LOGIN_SUCCEEDED,
    user_id: USER_ID,
    user_traits: { email: EMAIL },
    context: context(ip),
  });

function trackDevice(event) {
  const token = env('RAMPART_DEVICE_TOKEN');
  if (!token) throw new Skip('RAMPART_DEVICE_TOKEN is required');
  const c = client();
  // context is mandatory for the SDK (it reads context.client_id); an empty one is enough.
  return attempt(() => c.track({ event, device_token: token, context: {} }));
}

/** `req.cookies` as cookie-parser makes it: the first value of each name, percent-decoded. */
function parseCookies(header) {
  const cookies = {};
  for (const part of (header || '').split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const name = part.slice(0, eq).trim();
    let value = part.slice(eq + 1).trim();
    if (value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
    if (name && !(name in cookies)) {
      try {
        cookies[name] = decodeURIComponent(value);
      } catch {
        cookies[name] = value;
      }
    }
  }
  return cookies;
}

/**
 * An Express-style application with one login route, calling the SDK from its handler with the
 * context taken from the request; a browser's request to it. Resolves with what the handler got.
 */
function fromRequest(call) {
  const http = require('node:http');
  const { URLSearchParams } = require('node:url');
  return new Promise((resolve, reject) => {
    const server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', async () => {
        // What Express adds: req.ip (with `trust proxy`: the client end of X-Forwarded-For), req.cookies (cookie-parser).
        const forwarded = String(req.headers['x-forwarded-for'] || '')
          .split(',')[0]
          .trim();
        req.ip = forwarded || req.socket.remoteAddress;
        req.cookies = parseCookies(req.headers.cookie);
        req.body = Object.fromEntries(new URLSearchParams(body));
        const outcome = await attempt(() => call(req));
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(outcome));
      });
    });
    server.listen(0, '127.0.0.1', async () => {
      try {
        const cookies = ['session=abc'];
        if (env('RAMPART_CID_COOKIE')) cookies.push(`__cid=${env('RAMPART_CID_COOKIE')}`);
        const headers = {
          'User-Agent': USER_AGENT,
          Accept: 'text/html,application/xhtml+xml',
          'Accept-Language': 'en-US,en;q=0.9',
          'Content-Type': 'application/x-www-form-urlencoded',
          Cookie: cookies.join('; '),
          'X-Forwarded-For': `${IP}, 10.0.0.2`,
        };
        if (env('RAMPART_CID_HEADER')) headers['X-Castle-Client-Id'] = env('RAMPART_CID_HEADER');
        const { port } = server.address();
        resolve(
          await browserPost(
            port,
            headers,
            new URLSearchParams({ email: EMAIL, password: 'correct horse' }).toString(),
          ),
        );
      } catch (err) {
        reject(err);
      } finally {
        server.close();
      }
    });
  });
}

/** The browser's request to the application: a form post, answered with JSON. */
function browserPost(port, headers, body) {
  const http = require('node:http');
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        path: '/login',
        method: 'POST',
        headers: { ...headers, 'Content-Length': Buffer.byteLength(body) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (text += c));
        res.on('end', () => {
          try {
            resolve(JSON.parse(text));
          } catch (err) {
            reject(err);
          }
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** The context as the 0.4.x README builds it from an Express request. */
const contextFromRequest = (req) => ({ ip: req.ip, client_id: req.cookies['__cid'], headers: req.headers });

const notOffered = (what) => () => {
  throw new Skip(`${what} is not offered by @castleio/sdk ${sdkPkg.version} (authenticate and track only)`);
};

const SCENARIOS = {
  authenticate_login: () => {
    const c = client();
    return attempt(() => c.authenticate(loginSucceeded()));
  },
  authenticate_registration: () => {
    const c = client();
    return attempt(() =>
      c.authenticate(
        withTimestamp({
          event: '$registration.attempted',
          user_traits: { email: EMAIL },
          context: context(),
        }),
      ),
    );
  },
  bad_secret_authenticate: () => {
    const c = client(badSecret());
    return attempt(() => c.authenticate(loginSucceeded()));
  },
  invalid_ip_authenticate: () => {
    const c = client();
    return attempt(() => c.authenticate(loginSucceeded('999.1.1.1')));
  },
  track_login_failed: () => {
    const c = client();
    return attempt(() =>
      c.track(
        withTimestamp({
          event: EVENTS.LOGIN_FAILED,
          user_id: USER_ID,
          properties: { email: EMAIL },
          context: context(),
        }),
      ),
    );
  },
  bad_secret_track: () => {
    const c = client(badSecret());
    return attempt(() =>
      c.track({
        event: EVENTS.LOGIN_FAILED,
        user_id: USER_ID,
        properties: { email: EMAIL },
        context: context(),
      }),
    );
  },
  authenticate_from_request: () => {
    const c = client();
    return fromRequest((req) =>
      c.authenticate({
        event: EVENTS.LOGIN_SUCCEEDED,
        user_id: USER_ID,
        user_traits: { email: req.body.email },
        context: contextFromRequest(req),
      }),
    );
  },
  track_from_request: () => {
    const c = client();
    return fromRequest((req) =>
      c.track({
        event: EVENTS.LOGIN_FAILED,
        user_id: USER_ID,
        properties: { email: req.body.email },
        context: contextFromRequest(req),
      }),
    );
  },
  track_challenge_succeeded: () => trackDevice(EVENTS.CHALLENGE_SUCCEEDED),
  track_review_escalated: () => trackDevice(EVENTS.REVIEW_ESCALATED),
  risk_login: notOffered('risk()'),
  filter_registration: notOffered('filter()'),
  log_event: notOffered('log()'),
  devices: notOffered('the device API'),
  privacy_purge: notOffered('the privacy API'),
  privacy_request: notOffered('the privacy API'),
  bad_secret_risk: notOffered('risk() (see bad_secret_authenticate)'),
  invalid_ip_risk: notOffered('risk() (see invalid_ip_authenticate)'),
  invalid_request_token_risk: notOffered('risk()'),
  webhook_verify: notOffered('a webhook verification helper'),
};

async function main() {
  if (SCENARIO === 'list') return emit({ ok: true, result: Object.keys(SCENARIOS).sort() });
  const fn = SCENARIOS[SCENARIO];
  if (!fn) {
    return emit(
      {
        ok: false,
        error: {
          class: 'UsageError',
          message: `unknown scenario '${SCENARIO}'; known: ${Object.keys(SCENARIOS).sort().join(', ')}`,
        },
      },
      2,
    );
  }
  try {
    return emit(await fn());
  } catch (err) {
    if (err instanceof Skip) return emit({ skipped: err.message });
    return emit({ ok: false, error: errorInfo(err), driver_error: true });
  }
}

// The SDK's track() can leave a rejected logging promise behind on network errors; report, don't crash.
process.on('unhandledRejection', (err) =>
  process.stderr.write(`drive_castle: unhandled rejection: ${err && err.stack}\n`),
);

main();
