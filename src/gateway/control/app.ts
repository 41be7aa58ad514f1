// The Fastify control plane. Each capability is a plugin registered here;
// /healthz, /readyz and the status page's HTML shell at / are open, /metrics
// needs a token of any scope unless control.metricsAuth is 'none' (it names
// QPNs and session names), everything under /v1 needs a token: GET needs
// read, anything else admin. An unknown /v1 path is 401 before it is 404, so
// the routes are not probed without a token.
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Logger } from '../log.js';
import { requireToken, TokenStore, type Token } from './auth.js';
import { healthRoutes } from './routes/health.js';
import { deviceRoutes } from './routes/device.js';
import { countControlRequests, createRegistry, metricsRoutes } from './routes/metrics.js';
import { qpRoutes } from './routes/qps.js';
import { sloRoutes } from './routes/slo.js';
import { logLevelRoutes } from './routes/log-level.js';
import { extensionRoutes } from './routes/extensions.js';
import { statusPageRoutes, statusRoutes } from './routes/status.js';
import type { GatewayState } from '../state.js';

export interface ControlPlaneOptions {
  state: GatewayState;
  tokens: Token[];
  logger: Logger;
}

export async function buildControlPlane(options: ControlPlaneOptions): Promise<FastifyInstance> {
  const app = Fastify({
    // pino's Logger is Fastify's logger; the cast only drops pino's extra generics.
    loggerInstance: options.logger.child({ component: 'control' }) as FastifyBaseLogger,
    // Requests are counted in metrics, not logged one by one (a scrape a second would flood the log).
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: 64 * 1024,
    ajv: { customOptions: { allErrors: false, removeAdditional: false, coerceTypes: false } },
  });
  const store = new TokenStore(options.tokens);
  const registry = createRegistry(options.state);
  countControlRequests(app, registry);
  // Before the plugins: Fastify gives each plugin the error handler set when it is registered.
  const authenticate = requireToken(store);
  app.setNotFoundHandler(async (request, reply) => {
    if (/^\/v1(\/|\?|$)/.test(request.url)) {
      await authenticate(request, reply);
      if (reply.sent) return reply;
    }
    return reply.code(404).send({ error: 'not_found', message: `no route ${request.method} ${request.url}` });
  });
  app.setErrorHandler((error: { statusCode?: number; validation?: unknown; message: string }, request, reply) => {
    const status = error.statusCode && error.statusCode >= 400 ? error.statusCode : 500;
    if (status >= 500) request.log.error({ err: error }, 'request failed');
    void reply.code(status).send({
      error: error.validation ? 'bad_request' : status >= 500 ? 'internal' : 'bad_request',
      message: status >= 500 ? 'internal error; see the gateway log' : error.message,
    });
  });

  await app.register(healthRoutes, { state: options.state });
  await app.register(metricsRoutes, {
    state: options.state,
    registry,
    ...(options.state.config.control.metricsAuth === 'token' ? { authenticate } : {}),
  });
  await app.register(statusPageRoutes);
  await app.register(
    async (v1) => {
      v1.addHook('onRequest', authenticate);
      await v1.register(deviceRoutes, { state: options.state });
      await v1.register(qpRoutes, { state: options.state });
      await v1.register(sloRoutes, { state: options.state });
      await v1.register(logLevelRoutes, { state: options.state });
      await v1.register(statusRoutes, { state: options.state });
      await v1.register(extensionRoutes, { state: options.state });
    },
    { prefix: '/v1' },
  );

  return app;
}
