/**
 * The scoring routes: verdicts (`/v1/authenticate`, `/v1/risk`, `/v1/filter`) and feedback
 * (`/v1/track`, `/v1/log`), with the API secret. A request whose caller left while it waited to be
 * read is dropped before its credential is checked (rest/request.ts).
 */
import type { FastifyInstance } from 'fastify';
import type { Services } from '../core/services';
import { requireApiSecret } from './auth';
import { eventCommand } from './event-command';
import { authenticateJson, filterJson, riskJson } from './mappers';
import { callerOf, dropIfLeft, jsonBody } from './request';

export async function scoringRoutes(
  app: FastifyInstance,
  o: { services: Services; bodyLimit: number },
): Promise<void> {
  const { services } = o;
  // JSON bodies are read raw as every body is (rest/server.ts), by a parser named for the type:
  // Fastify keeps a named type's parser by the header's text, and looks the catch-all up afresh
  // (a parsed content type) for every request.
  app.addContentTypeParser(
    'application/json',
    { parseAs: 'buffer', bodyLimit: o.bodyLimit },
    (_req, body, done) => done(null, body),
  );
  app.addHook('preHandler', dropIfLeft);
  requireApiSecret(app, services);

  for (const endpoint of ['authenticate', 'risk', 'filter'] as const) {
    const encode =
      endpoint === 'authenticate' ? authenticateJson : endpoint === 'risk' ? riskJson : filterJson;
    app.post(`/v1/${endpoint}`, async (req, reply) => {
      const verdict = await services.verdicts.evaluate(
        req.principal,
        endpoint,
        eventCommand(jsonBody(req)),
        callerOf(req),
      );
      return reply.code(201).send(encode(verdict));
    });
  }

  for (const path of ['/v1/track', '/v1/log']) {
    app.post(path, async (req, reply) => {
      // Answered once the event is written (acknowledged means stored).
      await services.track.receive(
        req.principal,
        {
          decode: () => eventCommand(jsonBody(req)),
          raw: Buffer.isBuffer(req.body) ? req.body.toString('utf8') : '',
        },
        { caller: callerOf(req) },
      );
      return reply.code(204).send();
    });
  }
}
