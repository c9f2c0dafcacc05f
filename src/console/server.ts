/**
 * The web console's door, on the REST listener: the single-page application at /console (built by
 * scripts/build-console.js into dist/console/) and its sign-in session at /console/session. The
 * page itself talks only to the public GraphQL API (/graphql), with the session cookie and its
 * CSRF token in place of a credential, so it can do nothing the API would refuse.
 *
 *  - POST /console/session `{key}`: verifies an analyst key or API secret as GraphQL does
 *    (constant time, the failed-authentication throttle, the rate limit), opens a session and
 *    sets it in an HttpOnly, SameSite=Strict cookie (Secure over TLS). Answers the environment,
 *    the kind of credential and the CSRF token the page sends back in `x-rampart-csrf`.
 *  - GET /console/session: the same answer for the cookie's session (401 when there is none).
 *  - DELETE /console/session (with the CSRF header): signs out.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { BadRequest, Forbidden } from '../core/errors';
import type { Principal } from '../core/model';
import type { Services } from '../core/services';
import type { Session } from '../core/sessions/service';
import { CSRF_HEADER, SESSION_COOKIE, headerValue, sessionFromCookie } from '../doors/credentials';
import { httpErrorHandler, type HttpErrorStyle } from '../doors/errors';
import { jsonObject } from '../doors/json-body';
import type { Logger } from '../doors/logger';
import { PROJECT_ROOT } from '../paths';

export interface ConsoleOptions {
  services: Services;
  log: Logger;
  /** Where the built console is (default dist/console under the project). */
  dir?: string;
}

/** The built files the console serves, with their content types. */
const ASSETS: Readonly<Record<string, string>> = {
  'app.js': 'text/javascript; charset=utf-8',
  'app.css': 'text/css; charset=utf-8',
  'favicon.svg': 'image/svg+xml',
};

/** The page runs only its own script, talks only to its own origin, and is never framed. */
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/** Errors answer through the serialiser REST uses (doors/errors.ts), never cached. */
const CONSOLE_ERRORS: HttpErrorStyle = { headers: { 'cache-control': 'no-store' } };

const secure = (req: FastifyRequest) => req.protocol === 'https';

function cookie(req: FastifyRequest, value: string, maxAgeSeconds: number): string {
  return `${SESSION_COOKIE}=${value}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAgeSeconds}${secure(req) ? '; Secure' : ''}`;
}

function sessionJson(principal: Principal, session: Session, csrf: string) {
  return {
    environment: { id: principal.env.id, name: principal.env.name, sandbox: principal.env.sandbox },
    credentialKind: principal.kind === 'secret' ? 'SECRET' : 'ANALYST',
    canMutate: principal.kind === 'secret',
    csrfToken: csrf,
    expiresAt: session.expiresAt.toISOString(),
    absoluteExpiresAt: session.absoluteExpiresAt.toISOString(),
  };
}

/**
 * A request that changes a session must come from the console's own origin: a browser sends
 * `Origin` on such requests, and it must name this host.
 */
async function assertSameOrigin(req: FastifyRequest): Promise<void> {
  const origin = headerValue(req.headers.origin);
  if (origin === null) return;
  let host: string;
  try {
    host = new URL(origin).host;
  } catch {
    throw new Forbidden('cross-origin request refused');
  }
  if (host !== req.headers.host) throw new Forbidden('cross-origin request refused');
}

/** Registers the console on the listener (a plugin: its own error style and body parsing). */
export function registerConsole(app: FastifyInstance, o: ConsoleOptions): void {
  void app.register(consoleRoutes, o);
}

export async function consoleRoutes(app: FastifyInstance, o: ConsoleOptions): Promise<void> {
  const { services, log } = o;
  const dir = o.dir ?? path.join(PROJECT_ROOT, 'dist', 'console');
  const files = new Map<string, Buffer>();
  const read = (name: string): Buffer | null => {
    let body = files.get(name);
    if (body === undefined) {
      const file = path.join(dir, name);
      if (!existsSync(file)) return null;
      body = readFileSync(file);
      files.set(name, body);
    }
    return body;
  };

  // What a route throws, and what Fastify refuses while reading a body (over the listener's
  // limit: 413), answers through the one serialiser, in the console's style.
  app.setErrorHandler(httpErrorHandler(log, CONSOLE_ERRORS));
  // A JSON body (the sign-in's) is parsed by Fastify, with the reader REST's routes use, within the
  // listener's body limit; an empty one is an empty object. Other types stay raw bytes (the
  // listener's parser), which the sign-in refuses.
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_req, body, done) => {
    try {
      done(null, (body as Buffer).length === 0 ? {} : jsonObject(body));
    } catch (err) {
      done(err as Error, undefined);
    }
  });

  const page = async (_req: FastifyRequest, reply: FastifyReply) => {
    const html = read('index.html');
    if (!html)
      return reply
        .code(503)
        .header('content-type', 'application/json; charset=utf-8')
        .send({ type: 'service_unavailable', message: 'the console is not built (npm run build)' });
    return reply
      .code(200)
      .header('content-type', 'text/html; charset=utf-8')
      .header('cache-control', 'no-store')
      .header('content-security-policy', CSP)
      .header('x-frame-options', 'DENY')
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
      .send(html);
  };
  // One page: its views are routed in the URL's fragment (#/events?ip=…), which never reaches the server.
  app.get('/console', page);

  app.get('/console/assets/:file', async (req, reply) => {
    const name = (req.params as { file: string }).file;
    const type = ASSETS[name];
    const body = type ? read(name) : null;
    if (!type || !body)
      return reply
        .code(404)
        .header('content-type', 'application/json; charset=utf-8')
        .send({ type: 'not_found', message: 'no such file' });
    return reply
      .code(200)
      .header('content-type', type)
      .header('cache-control', 'no-cache')
      .header('x-content-type-options', 'nosniff')
      .send(body);
  });

  // A request that changes a session is checked for its origin before its body is read.
  app.post('/console/session', { onRequest: assertSameOrigin }, async (req, reply) => {
    // (A JSON type Fastify's parser did not take, such as `application/json-seq`, arrives as bytes.)
    if (!/^application\/json\b/i.test(req.headers['content-type'] ?? '') || Buffer.isBuffer(req.body))
      throw new BadRequest('send {"key": "…"} as application/json');
    const key = (req.body as { key?: unknown } | undefined)?.key;
    const opened = await services.sessions.signIn(key, req.ip ?? null);
    const maxAge = Math.floor((opened.session.absoluteExpiresAt.getTime() - Date.now()) / 1000);
    return reply
      .code(201)
      .header('set-cookie', cookie(req, opened.token, Math.max(1, maxAge)))
      .header('cache-control', 'no-store')
      .send(sessionJson(opened.principal, opened.session, opened.csrf));
  });

  app.get('/console/session', async (req, reply) => {
    const r = await services.sessions.resolve(sessionFromCookie(req.headers.cookie), null, {
      source: req.ip ?? null,
      requireCsrf: false,
    });
    return reply
      .code(200)
      .header('cache-control', 'no-store')
      .send(sessionJson(r.principal, r.session, r.csrf));
  });

  app.delete('/console/session', { onRequest: assertSameOrigin }, async (req, reply) => {
    const token = sessionFromCookie(req.headers.cookie);
    const csrf = headerValue(req.headers[CSRF_HEADER]);
    if (token && (csrf === null || !services.sessions.csrfMatches(token, csrf)))
      throw new Forbidden('missing or wrong CSRF token (x-rampart-csrf)');
    await services.sessions.signOut(token);
    return reply
      .code(204)
      .header('set-cookie', cookie(req, '', 0))
      .header('cache-control', 'no-store')
      .send();
  });
}
