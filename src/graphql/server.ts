/**
 * The GraphQL door: Apollo Server at POST /graphql on the REST listener. The request body is
 * parsed here (the REST server reads every body raw, under the same size limit); the context
 * factory authenticates the API secret or analyst key (or a console session's cookie and CSRF token), applies the environment's rate limit and
 * creates this request's DataLoaders. Resolvers only translate to and from the core.
 */
import { ApolloServer } from '@apollo/server';
import { ApolloServerPluginLandingPageDisabled } from '@apollo/server/plugin/disabled';
import { fastifyApolloHandler } from '@as-integrations/fastify';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { BadRequest, PayloadTooLarge, type DomainError } from '../core/errors';
import type { Services } from '../core/services';
import { CSRF_HEADER, headerValue, secretFromAuthorization, sessionFromCookie } from '../doors/credentials';
import { normaliseError } from '../doors/errors';
import type { Logger } from '../doors/logger';
import type { GraphqlContext } from './context';
import { extensionsOf, formatError, GRAPHQL_ERRORS, requestError } from './errors';
import { typeDefs } from './generated/typedefs';
import { LIMITS, limitsPlugin } from './limits';
import { createLoaders } from './loaders';
import { cutOnOutage, type DatabaseStatus } from '../doors/outage';

import { resolvers } from './resolvers';

export interface GraphqlOptions {
  services: Services;
  log: Logger;
  /** Whether the database answers: every query needs it, so GraphQL answers 503 while it is down (see rest/server.ts `cutOnOutage`). */
  database?: DatabaseStatus;
}

const isJson = (contentType: string | undefined): boolean =>
  /^application\/(graphql-response\+)?json\b/i.test(contentType ?? '');

export async function registerGraphql(app: FastifyInstance, o: GraphqlOptions): Promise<void> {
  const { services, log } = o;
  const apollo = new ApolloServer<GraphqlContext>({
    typeDefs,
    resolvers,
    plugins: [ApolloServerPluginLandingPageDisabled(), limitsPlugin()],
    formatError: formatError(log),
    includeStacktraceInErrorResponses: false,
    introspection: true,
    persistedQueries: false,
    // Shutdown is ours: main.ts drains every door on SIGTERM. Apollo's own signal handler would
    // stop it a second time mid-drain and re-raise the signal.
    stopOnTerminationSignals: false,
    allowBatchedHttpRequests: false,
    csrfPrevention: true,
    parseOptions: { maxTokens: LIMITS.maxTokens },
    maxRecursiveSelections: true,
    logger: log,
  });
  await apollo.start();
  app.addHook('onClose', async () => {
    await apollo.stop();
  });

  const context = async (req: FastifyRequest): Promise<GraphqlContext> => {
    try {
      // A credential in Authorization, else a console session's cookie, which must come with the
      // session's CSRF token in a header (a page of another site cannot read or send it).
      const session = req.headers.authorization === undefined ? sessionFromCookie(req.headers.cookie) : null;
      const principal = session
        ? (
            await services.sessions.resolve(session, headerValue(req.headers[CSRF_HEADER]), {
              source: req.ip ?? null,
              requireCsrf: true,
            })
          ).principal
        : await services.access.caller(secretFromAuthorization(req.headers.authorization), 'read', {
            source: req.ip ?? null,
          });
      return { principal, services, loaders: createLoaders(principal.env.id, services) };
    } catch (err) {
      throw requestError(normaliseError(err, log));
    }
  };

  /** An error answered before Apollo runs (body too large, not JSON), in GraphQL's shape. */
  const sendError = (reply: FastifyReply, e: DomainError) =>
    reply
      .code(GRAPHQL_ERRORS[e.kind].status)
      .header('content-type', 'application/json; charset=utf-8')
      .send({ errors: [{ message: e.message, extensions: extensionsOf(e) }] });

  /** Bodies arrive as raw Buffers (see the REST server); JSON ones are parsed for Apollo here. */
  const parseBody = async (req: FastifyRequest, reply: FastifyReply) => {
    if (!Buffer.isBuffer(req.body)) return;
    if (!isJson(req.headers['content-type'])) {
      req.body = undefined;
      return;
    }
    try {
      req.body = req.body.length ? JSON.parse(req.body.toString('utf8')) : undefined;
    } catch {
      return sendError(reply, new BadRequest('request body is not valid JSON'));
    }
  };

  /** Errors fastify raises around the handler (e.g. reading the body). */
  const errorHandler = (err: FastifyError, _req: FastifyRequest, reply: FastifyReply) => {
    if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE' || err.statusCode === 413)
      return sendError(reply, new PayloadTooLarge('request body is larger than the limit'));
    if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500)
      return sendError(reply, new BadRequest(err.message));
    return sendError(reply, normaliseError(err, log));
  };

  if (o.database) cutOnOutage(app, o.database, (req) => req.routeOptions.url === '/graphql', sendError);
  app.route({
    method: 'POST',
    url: '/graphql',
    preValidation: parseBody,
    errorHandler,
    handler: fastifyApolloHandler(apollo, { context }),
  });
}
