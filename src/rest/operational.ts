/**
 * The routes that take no credential: the machinery beside Rampart (the kubelet's probes
 * /healthz and /readyz, Prometheus's /metrics, with its own bearer token when one is set), the
 * OpenAPI document, and the listener's root, for people who typed the host name.
 */
import type { FastifyInstance } from 'fastify';
import { safeEqual } from '../core/crypto';
import { Unauthorized } from '../core/errors';
import type { DatabaseStatus } from '../doors/outage';
import { openApiDocument, type OpenApiOptions } from './openapi';

/** Longest the readiness probe waits for the database's ping (it must answer within 500 ms). */
const READY_TIMEOUT_MS = 400;

export interface OperationalOptions {
  /** Readiness probe (database ping). */
  ready?: () => Promise<boolean>;
  /** Why the service should get no new work now, or null: /readyz 503 with it. */
  notReady?: () => string | null;
  database?: DatabaseStatus;
  /** GET /metrics (with `Authorization: Bearer <token>` when a token is set). */
  metrics?: {
    expose(): Promise<{ contentType: string; body: string }>;
    token?: string;
  };
  /** What the OpenAPI document says of the listener. */
  openapi: Omit<OpenApiOptions, 'metrics'>;
}

export async function operationalRoutes(app: FastifyInstance, o: OperationalOptions): Promise<void> {
  const metrics = o.metrics;
  if (metrics) {
    app.get('/metrics', async (req, reply) => {
      if (metrics.token !== undefined) {
        const presented = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
        if (!safeEqual(presented, metrics.token))
          throw new Unauthorized('metrics need the bearer token (RAMPART_METRICS_TOKEN)');
      }
      const { contentType, body } = await metrics.expose();
      return reply.code(200).header('content-type', contentType).send(body);
    });
  }

  // The OpenAPI document of the REST routes, generated once from the schemas that validate them.
  let openapi: string | null = null;
  app.get('/v1/openapi.json', async (_req, reply) => {
    openapi ??= JSON.stringify(
      openApiDocument({ ...o.openapi, metrics: metrics ? { token: metrics.token !== undefined } : null }),
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
}
