/**
 * The REST door: Castle's v1 surface over HTTP(S) with fastify. This file builds the listener
 * (body parsing, the hooks every request passes, the one error handler) and registers the route
 * groups, each a Fastify plugin of its own file: scoring.ts, collector.ts, client-pages.ts,
 * lists.ts, devices.ts, privacy.ts, operational.ts. Each route decodes the request, calls one core
 * service and encodes the answer; errors go through one table (rest/errors.ts) and one serialiser
 * (doors/errors.ts).
 */
import Fastify, { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { randomUUID } from 'node:crypto';
import type { Duplex } from 'node:stream';
import { BadRequest, RouteNotFound, Unavailable } from '../core/errors';
import type { Services } from '../core/services';
import { httpErrorHandler, sendHttpError, type HttpErrorStyle } from '../doors/errors';
import type { Logger } from '../doors/logger';
import { cutOnOutage, type DatabaseStatus } from '../doors/outage';
import { proxyTrust, type TrustedProxies } from '../doors/proxies';
import { decoratePrincipal } from './auth';
import { clientPages } from './client-pages';
import { collectorRoutes } from './collector';
import { deviceRoutes } from './devices';
import { HTTP_TYPE } from './errors';
import { listRoutes } from './lists';
import { operationalRoutes } from './operational';
import { privacyRoutes } from './privacy';
import { droppedIfGone } from './request';
import { scoringRoutes } from './scoring';

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

/** Castle's error types, and an internal error's correlation id in the body. */
const REST_ERRORS: HttpErrorStyle = { types: HTTP_TYPE, correlationId: true };
/** The routes that need the database to answer (see `RestOptions.database`). */
const NEEDS_DATABASE = /^\/v1\/(users\/|devices\/|privacy\/|lists(\/|$))/;

/**
 * Routes for the machinery beside Rampart (the kubelet's probes, a container's health check,
 * Prometheus), answered over plain HTTP even where the API requires HTTPS: they carry no API
 * credential, and probes and scrapers reach each instance directly, not through the proxy.
 */
const OPERATIONAL_ROUTES = new Set(['/healthz', '/readyz', '/metrics']);

/** Longest path parameter the router matches; a longer one answers 404 route_not_found. */
const MAX_PARAM_LENGTH = 512;

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

  const { services, log } = o;

  // Bodies are read raw, parsed by the route that takes them (track must see a malformed body),
  // within the one body limit (a route may set a lower one); CSV bodies (list imports) reach their
  // route as the request stream, read a line at a time.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: o.bodyLimit }, (_req, body, done) =>
    done(null, body),
  );
  app.addContentTypeParser('text/csv', (_req, payload, done) => done(null, payload));

  // Every error a hook or a handler throws, and what Fastify refuses, answers through one
  // serialiser (doors/errors.ts), in Castle's words.
  const sendError = (reply: FastifyReply, err: unknown) => sendHttpError(reply, err, log, REST_ERRORS);
  app.setErrorHandler(httpErrorHandler(log, REST_ERRORS));
  app.setNotFoundHandler((req, reply) =>
    sendError(reply, new RouteNotFound(`no route for ${req.method} ${req.url.split('?')[0]}`)),
  );

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

  // The route groups. Those that take the API secret add the authentication hook to their own
  // context (rest/auth.ts), so that a handler finds its caller in `req.principal`.
  decoratePrincipal(app);
  await app.register(scoringRoutes, { services, bodyLimit: o.bodyLimit });
  await app.register(collectorRoutes, { services, bodyLimit: o.bodyLimit });
  await app.register(clientPages, { services, demo: o.demo ?? false });
  await app.register(listRoutes, { services });
  await app.register(deviceRoutes, { services });
  await app.register(privacyRoutes, { services });
  await app.register(operationalRoutes, {
    ready: o.ready,
    notReady: o.notReady,
    database: o.database,
    metrics,
    openapi: { bodyLimit: o.bodyLimit, maxParamLength: MAX_PARAM_LENGTH, demo: o.demo ?? false },
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
