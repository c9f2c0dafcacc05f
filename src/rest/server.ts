/**
 * The REST door: Castle's v1 surface over HTTP(S) with fastify. Each route decodes the request,
 * calls one core service and encodes the answer; errors go through one table (rest/errors.ts).
 */
import Fastify, { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { randomUUID } from 'node:crypto';
import type { Duplex } from 'node:stream';
import { BadRequest, PayloadTooLarge, RouteNotFound, Unauthorized, Unavailable } from '../core/errors';
import { safeEqual } from '../core/crypto';
import type { Principal } from '../core/model';
import type { Services } from '../core/services';
import type { Caller } from '../core/work-limiter';
import { secretFromAuthorization } from '../doors/credentials';
import { sendHttpError, type HttpErrorStyle } from '../doors/errors';
import type { Logger } from '../doors/logger';
import { HTTP_TYPE } from './errors';
import { authenticateJson, deviceJson, filterJson, privacyAccessJson, riskJson } from './mappers';
import { subjectOfIdentifier, type PrivacySubject } from '../core/privacy/service';
import { registerClientPages } from './client-pages';
import { openApiDocument } from './openapi';
import { cutOnOutage, type DatabaseStatus } from '../doors/outage';
import { EXPORT_ROUTE } from './privacy-links';
import { eventCommand } from './event-command';
import { registerListRoutes } from './lists';
import { proxyTrust, type TrustedProxies } from '../doors/proxies';

export interface RestOptions {
  services: Services;
  log: Logger;
  bodyLimit: number;
  tls?: { cert: Buffer; key: Buffer };
  /**
   * Proxies whose `X-Forwarded-For`, `-Proto` and `-Host` are believed (false or empty: none). A
   * request's address (`req.ip`) is then the right-most forwarded hop that is not one of them.
   */
  trustProxy: TrustedProxies | false;
  /** Reject requests that did not arrive over HTTPS (production behind a trusted proxy), but for /healthz, /readyz and /metrics. */
  requireHttps: boolean;
  /** Hook for other doors that share the listener (GraphQL at /graphql). */
  register?: (app: FastifyInstance) => Promise<void>;
  /** Readiness probe (database ping). */
  ready?: () => Promise<boolean>;
  /** Why the service should get no new work now (writes stuck, new work refused), or null: /readyz 503 with it. */
  notReady?: () => string | null;
  /**
   * Why new requests are refused at once now (the process too far behind: app/loop-lag.ts), or
   * null: every route but /healthz, /readyz and /metrics answers 503 with `Retry-After` meanwhile.
   */
  overloaded?: () => string | null;
  /**
   * Whether the database answers (store/health.ts): routes that need it answer 503 at once while
   * it is down, and those waiting on it when it goes down answer 503 then.
   */
  database?: DatabaseStatus;
  /** Prometheus metrics: GET /metrics, and one observation per answered request. */
  metrics?: RestMetrics;
  /** Serve the browser client's demo page (development). */
  demo?: boolean;
}

export interface RestMetrics {
  expose(): Promise<{ contentType: string; body: string }>;
  /** One answered request: its door (the console's routes and GraphQL share this listener), route template, status. */
  request(door: 'rest' | 'graphql' | 'console', route: string, status: number, seconds: number): void;
  /** When set, GET /metrics needs `Authorization: Bearer <token>`. */
  token?: string;
}

const MAX_JSON_DEPTH = 32;
/** Castle's error types, and an internal error's correlation id in the body. */
const REST_ERRORS: HttpErrorStyle = { types: HTTP_TYPE, correlationId: true };
/** The routes that need the database to answer (see `RestOptions.database`). */
const NEEDS_DATABASE = /^\/v1\/(users\/|devices\/|privacy\/|lists(\/|$))/;
/** Longest the readiness probe waits for the database's ping (it must answer within 500 ms). */
const READY_TIMEOUT_MS = 400;

/**
 * Routes for the machinery beside Rampart (the kubelet's probes, a container's health check,
 * Prometheus), answered over plain HTTP even where the API requires HTTPS: they carry no API
 * credential, and probes and scrapers reach each instance directly, not through the proxy.
 */
const OPERATIONAL_ROUTES = new Set(['/healthz', '/readyz', '/metrics']);

/** Longest path parameter the router matches; a longer one answers 404 route_not_found. */
const MAX_PARAM_LENGTH = 512;

declare module 'fastify' {
  interface FastifyRequest {
    rawBody?: Buffer;
  }
}

/** The largest body POST /v1/client/events takes, whatever the service's own limit (an endpoint any page or app may call). */
export const CLIENT_EVENTS_BODY_LIMIT = 256 * 1024;

/** Whether the client of `req` has gone: its socket closed, or its side of it ended. */
function gone(req: FastifyRequest): boolean {
  const socket = req.raw.socket as (Duplex & { readableEnded?: boolean }) | null;
  // (Not the request stream's own `destroyed`: Node destroys it once its body is read.)
  return !socket || socket.destroyed || socket.readableEnded === true;
}

/** Drops a request whose client is gone: no answer (nobody would read it), its connection closed. True when it did. */
function droppedIfGone(req: FastifyRequest, reply: FastifyReply): boolean {
  if (!gone(req)) return false;
  reply.hijack();
  req.raw.socket?.destroy();
  return true;
}

export async function buildRestServer(o: RestOptions): Promise<FastifyInstance> {
  const trusted = o.trustProxy && o.trustProxy.length > 0 ? proxyTrust(o.trustProxy) : null;
  const options = {
    logger: false,
    // A request Fastify cannot route (a path that is not valid percent-encoding) gets the same
    // `{type, message}` body as every other error.
    frameworkErrors: (err: Error, _req: FastifyRequest, reply: FastifyReply) => {
      void reply
        .code(400)
        .header('content-type', 'application/json; charset=utf-8')
        .send({ type: HTTP_TYPE.bad_request, message: err.message });
    },
    // So does one Node's HTTP parser refuses before Fastify sees it (malformed, headers too large).
    clientErrorHandler: (err: Error & { code?: string }, socket: Duplex) => {
      // A connection the client reset, or one already closing, gets no answer.
      if (err.code === 'ECONNRESET' || !socket.writable) return socket.destroy();
      const status =
        err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
      const reason =
        status === 431
          ? 'Request Header Fields Too Large'
          : status === 408
            ? 'Request Timeout'
            : 'Bad Request';
      const body = JSON.stringify({
        type: HTTP_TYPE.bad_request,
        message:
          status === 431
            ? 'request headers (or the URL) are too large'
            : status === 408
              ? 'the request took too long to arrive'
              : 'malformed HTTP request',
      });
      socket.end(
        `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    },
    bodyLimit: o.bodyLimit,
    // Fastify walks the chain from the socket's peer leftwards while each hop is trusted, and
    // reads X-Forwarded-Proto and -Host only from a trusted peer.
    trustProxy: trusted ? (address: string) => trusted(address) : false,
    // While the server closes, new requests answer 503 in Rampart's own body (the hook below),
    // not Fastify's `{error, statusCode}`.
    return503OnClosing: false,
    genReqId: () => randomUUID(),
    routerOptions: {
      ignoreDuplicateSlashes: true,
      ignoreTrailingSlash: true,
      maxParamLength: MAX_PARAM_LENGTH,
    },
    ...(o.tls ? { https: { cert: o.tls.cert, key: o.tls.key, minVersion: 'TLSv1.2' as const } } : {}),
  };
  // With `https` fastify types the instance for an HTTPS server; the routes are the same.
  const app = Fastify(options) as unknown as FastifyInstance;

  // Bodies are read raw: authentication comes before parsing, and track must see malformed bodies.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: o.bodyLimit }, (_req, body, done) =>
    done(null, body),
  );

  const { services, log } = o;

  const sendError = (reply: FastifyReply, err: unknown) => sendHttpError(reply, err, log, REST_ERRORS);

  // Shutting down: what arrives once the close began (on a connection kept alive, or pipelined)
  // is refused at once, with the connection closed so that the client goes elsewhere.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  // A callback hook, not an async one: every request passes it, and it has nothing to await.
  app.addHook('onRequest', (req, reply, done) => {
    // A request whose caller already went away (it timed out while the request waited in the
    // socket's buffer: an overloaded process reads late) gets no work: nobody would read the
    // answer, and after an overload the backlog of such requests drains at once.
    if (droppedIfGone(req, reply)) return;
    if (!closing) {
      const overloaded = o.overloaded?.() ?? null;
      if (overloaded === null || OPERATIONAL_ROUTES.has(req.routeOptions.url ?? '')) return done();
      void sendError(reply, new Unavailable(overloaded));
      return;
    }
    reply.header('connection', 'close');
    void sendError(reply, new Unavailable('the service is shutting down'));
  });

  app.setErrorHandler((err: Error & { code?: string; statusCode?: number }, req, reply) => {
    if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE' || err.statusCode === 413)
      return sendError(
        reply,
        new PayloadTooLarge(
          `request body is larger than ${req.routeOptions?.bodyLimit ?? o.bodyLimit} bytes`,
        ),
      );
    if (
      err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' ||
      (err.statusCode && err.statusCode >= 400 && err.statusCode < 500)
    ) {
      return sendError(reply, new BadRequest(err.message));
    }
    return sendError(reply, err);
  });
  app.setNotFoundHandler((req, reply) =>
    sendError(reply, new RouteNotFound(`no route for ${req.method} ${req.url.split('?')[0]}`)),
  );

  const metrics = o.metrics;
  if (metrics) {
    // Labelled by route pattern (never the raw path), so the number of series stays fixed.
    app.addHook('onResponse', async (req, reply) => {
      const route = req.routeOptions.url ?? 'unmatched';
      metrics.request(doorOf(route), route, reply.statusCode, reply.elapsedTime / 1000);
    });
  }

  if (o.requireHttps) {
    app.addHook('onRequest', async (req, reply) => {
      if (req.protocol !== 'https' && !OPERATIONAL_ROUTES.has(req.routeOptions.url ?? '')) {
        return sendError(reply, new BadRequestHttps());
      }
    });
  }

  // Routes that cannot answer without the database (device and user reads and changes, privacy)
  // answer 503 while it is known to be down, rather than after the driver gives up (seconds, past
  // every SDK's timeout). Verdicts answer from memory and track queues (both bounded), so they are
  // not among them; GraphQL does the same on its own route.
  if (o.database)
    cutOnOutage(
      app,
      o.database,
      (req) => NEEDS_DATABASE.test(req.routeOptions.url ?? ''),
      (reply, e) => sendError(reply, e),
    );

  const principal = (req: FastifyRequest): Promise<Principal> =>
    services.access.caller(secretFromAuthorization(req.headers.authorization), 'api', {
      source: req.ip ?? null,
    });

  /**
   * The connection a request came on, as the core watches it: gone once the client closed its
   * side (a caller that timed out; Node aborts a request whose client sent its FIN) or the socket
   * is closed. An overloaded process reads requests late, and those whose callers left get no work.
   */
  const callerOf = (req: FastifyRequest): Caller => {
    const socket = req.raw.socket;
    return {
      get gone() {
        return gone(req);
      },
      onGone(listener) {
        let called = false;
        const once = () => {
          if (called) return;
          called = true;
          listener();
        };
        socket.once('end', once);
        socket.once('close', once);
        return () => {
          socket.off('end', once);
          socket.off('close', once);
        };
      },
    };
  };

  const jsonBody = (req: FastifyRequest): unknown => {
    const raw = req.body;
    if (!Buffer.isBuffer(raw) || raw.length === 0) throw new BadRequest('request body must be a JSON object');
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw.toString('utf8'));
    } catch {
      throw new BadRequest('request body is not valid JSON');
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
      throw new BadRequest('request body must be a JSON object');
    if (depthExceeds(parsed, MAX_JSON_DEPTH))
      throw new BadRequest(`request body is nested deeper than ${MAX_JSON_DEPTH} levels`);
    return parsed;
  };

  /**
   * True once the request's client is seen to have left, the request then dropped unanswered.
   * A client that gave up while its request waited to be read (an overloaded process reads late)
   * has its FIN right behind the request, and Node reads it one turn of the event loop after the
   * request: two turns are given before any work (credentials, parsing, the verdict), so that such
   * a request costs next to nothing instead of a verdict nobody reads.
   */
  const left = async (req: FastifyRequest, reply: FastifyReply): Promise<boolean> => {
    await new Promise<void>((resolve) => setImmediate(() => setImmediate(resolve)));
    return droppedIfGone(req, reply);
  };

  const route =
    (handler: (req: FastifyRequest, reply: FastifyReply) => Promise<unknown>) =>
    async (req: FastifyRequest, reply: FastifyReply) => {
      try {
        return await handler(req, reply);
      } catch (err) {
        return sendError(reply, err);
      }
    };

  for (const endpoint of ['authenticate', 'risk', 'filter'] as const) {
    const encode =
      endpoint === 'authenticate' ? authenticateJson : endpoint === 'risk' ? riskJson : filterJson;
    app.post(
      `/v1/${endpoint}`,
      route(async (req, reply) => {
        if (await left(req, reply)) return reply;
        const p = await principal(req);
        const verdict = await services.verdicts.evaluate(
          p,
          endpoint,
          eventCommand(jsonBody(req)),
          callerOf(req),
        );
        return reply.code(201).send(encode(verdict));
      }),
    );
  }

  for (const path of ['/v1/track', '/v1/log']) {
    app.post(
      path,
      route(async (req, reply) => {
        if (await left(req, reply)) return reply;
        const p = await principal(req);
        // Answered once the event is written (acknowledged means stored).
        await services.track.receive(
          p,
          {
            decode: () => eventCommand(jsonBody(req)),
            raw: Buffer.isBuffer(req.body) ? req.body.toString('utf8') : '',
          },
          { caller: callerOf(req) },
        );
        return reply.code(204).send();
      }),
    );
  }

  // The browser client's collector: called from the application's pages (another origin), with
  // the environment's publishable key, never a secret. The script posts `text/plain` so that the
  // browser needs no preflight; a preflight is answered anyway for clients that send JSON.
  const cors = (req: FastifyRequest, reply: FastifyReply) => {
    const origin = req.headers.origin;
    if (typeof origin === 'string' && origin.length <= 512)
      reply.header('access-control-allow-origin', origin).header('vary', 'Origin');
  };
  for (const path of ['/v1/client/token', '/v1/client/challenge', '/v1/client/events']) {
    app.options(path, async (req, reply) => {
      cors(req, reply);
      return reply
        .code(204)
        .header('access-control-allow-methods', 'POST')
        .header('access-control-allow-headers', 'content-type')
        .header('access-control-max-age', '600')
        .send();
    });
  }
  /** A page's call to the collector (no secret): CORS for it, its body, the page's origin and address. */
  const collectorCall = (req: FastifyRequest, reply: FastifyReply) => {
    cors(req, reply);
    return {
      body: jsonBody(req) as Record<string, unknown>,
      origin: typeof req.headers.origin === 'string' ? req.headers.origin : null,
      ip: req.ip ?? null,
    };
  };
  // A challenge for the next token (docs/client.md, "What a token costs"): optional, a second step
  // before /v1/client/token for clients that prove work.
  app.post(
    '/v1/client/challenge',
    route(async (req, reply) => {
      const { body, origin, ip } = collectorCall(req, reply);
      const c = await services.client.challenge({
        publishableKey: body.publishable_key,
        origin,
        ip,
        app: body.app,
      });
      return reply.code(201).header('cache-control', 'no-store').send({
        challenge: c.challenge,
        salt: c.salt,
        difficulty: c.difficulty,
        expires_in: c.expiresInSeconds,
      });
    }),
  );
  app.post(
    '/v1/client/token',
    route(async (req, reply) => {
      const { body, origin, ip } = collectorCall(req, reply);
      const collected = await services.client.collect({
        publishableKey: body.publishable_key,
        origin,
        ip,
        components: body.components,
        mobile: body.mobile,
        proof: body.proof,
        behaviour: body.behaviour,
      });
      const session = collected.session
        ? {
            session: collected.session.session,
            session_key: collected.session.key,
            session_expires_in: collected.session.expiresInSeconds,
            server_time: collected.session.serverTime,
          }
        : {};
      return reply
        .code(201)
        .header('cache-control', 'no-store')
        .send({ token: collected.token, expires_in: collected.expiresInSeconds, ...session });
    }),
  );

  // Client events: native apps' batches (docs/mobile.md), with the publishable key and the session
  // the collector gave the install; pages' castle-js 2.x events (docs/client.md), with a request
  // token the collector gave the page, CORS as for the collector. A body is at most the service's
  // limit, and never more than 256 KiB.
  app.post(
    '/v1/client/events',
    { bodyLimit: Math.min(CLIENT_EVENTS_BODY_LIMIT, o.bodyLimit) },
    route(async (req, reply) => {
      const { body, origin, ip } = collectorCall(req, reply);
      const received = await services.clientEvents.receive({ body, ip, origin });
      return reply.code(202).send({
        accepted: received.accepted,
        dropped: received.dropped,
        signed: received.signed,
        verified: received.verified,
      });
    }),
  );

  registerClientPages(app, { services, demo: o.demo ?? false, sendError });
  registerListRoutes(app, { services, principal, jsonBody, route });

  app.get(
    '/v1/users/:userId/devices',
    route(async (req, reply) => {
      const p = await principal(req);
      const { userId } = req.params as { userId: string };
      const q = req.query as Record<string, unknown>;
      const devices = await services.devices.listForUser(p.env, userId, [q.cid, q.client_id]);
      return reply
        .code(200)
        .send({ total_count: devices.length, data: devices.map((d) => deviceJson(d.device, d.current)) });
    }),
  );

  app.get(
    '/v1/devices/:token',
    route(async (req, reply) => {
      const p = await principal(req);
      const { token } = req.params as { token: string };
      return reply.code(200).send(deviceJson(await services.devices.get(p.env.id, token)));
    }),
  );
  app.put(
    '/v1/devices/:token/approve',
    route(async (req, reply) => {
      const p = await principal(req);
      const { token } = req.params as { token: string };
      return reply.code(200).send(deviceJson(await services.devices.approve(p.env.id, token)));
    }),
  );
  app.put(
    '/v1/devices/:token/report',
    route(async (req, reply) => {
      const p = await principal(req);
      const { token } = req.params as { token: string };
      return reply.code(200).send(deviceJson(await services.devices.report(p.env, token)));
    }),
  );

  // Privacy: by path (`/v1/privacy/users/{id}`) or by body (`{identifier, identifier_type}`).
  const privacySubject = (req: FastifyRequest): PrivacySubject => {
    const { userId } = (req.params ?? {}) as { userId?: string };
    if (userId !== undefined) return subjectOfIdentifier(userId, '$id', 'user_id');
    const body = jsonBody(req) as Record<string, unknown>;
    return subjectOfIdentifier(body.identifier, body.identifier_type);
  };
  for (const path of ['/v1/privacy/users/:userId', '/v1/privacy/users']) {
    app.post(
      path,
      route(async (req, reply) => {
        const p = await principal(req);
        const jobs = await services.privacy.requestAccessFor(p.env, privacySubject(req));
        return reply.code(202).send(privacyAccessJson(jobs));
      }),
    );
    app.delete(
      path,
      route(async (req, reply) => {
        const p = await principal(req);
        await services.privacy.purgeFor(p.env, privacySubject(req));
        return reply.code(202).send({ status: 'purged' });
      }),
    );
  }
  app.get(
    EXPORT_ROUTE,
    route(async (req, reply) => {
      const { jobId } = req.params as { jobId: string };
      const q = req.query as Record<string, unknown>;
      const file = await services.privacy.download(jobId, String(q.expires ?? ''), String(q.signature ?? ''));
      return reply
        .code(200)
        .header('content-type', 'application/json; charset=utf-8')
        .header('content-disposition', `attachment; filename="${file.filename}"`)
        .header('cache-control', 'no-store')
        .send(file.json);
    }),
  );

  if (metrics) {
    app.get('/metrics', async (req, reply) => {
      if (metrics.token !== undefined) {
        const presented = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
        if (!safeEqual(presented, metrics.token))
          return sendError(reply, new Unauthorized('metrics need the bearer token (RAMPART_METRICS_TOKEN)'));
      }
      const { contentType, body } = await metrics.expose();
      return reply.code(200).header('content-type', contentType).send(body);
    });
  }

  // The OpenAPI document of the routes above, generated once from the schemas that validate them.
  let openapi: string | null = null;
  app.get('/v1/openapi.json', async (_req, reply) => {
    openapi ??= JSON.stringify(
      openApiDocument({
        bodyLimit: o.bodyLimit,
        maxParamLength: MAX_PARAM_LENGTH,
        demo: o.demo ?? false,
        metrics: metrics ? { token: metrics.token !== undefined } : null,
      }),
    );
    return reply
      .code(200)
      .header('content-type', 'application/json; charset=utf-8')
      .header('cache-control', 'no-cache')
      .send(openapi);
  });

  // The listener's root is for people who typed the host name: the web console (on this listener).
  app.get('/', async (_req, reply) => reply.redirect('/console', 302));
  app.get('/healthz', async (_req, reply) => reply.code(200).send({ status: 'ok' }));
  app.get('/readyz', async (_req, reply) => {
    // A database known to be down answers at once; one that stopped answering must not make the
    // probe hang: not ready after READY_TIMEOUT_MS.
    const down = o.database?.down();
    if (down) return reply.code(503).send({ status: 'unavailable', reason: down });
    const behind = o.notReady?.() ?? null;
    if (behind) return reply.code(503).send({ status: 'unavailable', reason: behind });
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), READY_TIMEOUT_MS);
    });
    const ok = o.ready
      ? await Promise.race([o.ready().catch(() => false), late]).finally(() => clearTimeout(timer))
      : true;
    return reply.code(ok ? 200 : 503).send({ status: ok ? 'ready' : 'unavailable' });
  });

  if (o.register) await o.register(app);
  return app;
}

/** Which door a route of this listener belongs to. */
function doorOf(route: string): 'rest' | 'graphql' | 'console' {
  if (route === '/graphql') return 'graphql';
  return route === '/console' || route.startsWith('/console/') ? 'console' : 'rest';
}

class BadRequestHttps extends BadRequest {
  constructor() {
    super('HTTPS is required');
  }
}

/** Whether a parsed JSON value nests deeper than `max` (iterative, so hostile input cannot overflow the stack). */
export function depthExceeds(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length) {
    const [v, d] = stack.pop() as [unknown, number];
    if (typeof v !== 'object' || v === null) continue;
    if (d > max) return true;
    for (const child of Object.values(v as Record<string, unknown>)) stack.push([child, d + 1]);
  }
  return false;
}
