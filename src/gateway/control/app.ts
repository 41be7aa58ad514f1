// The Fastify control plane. Each capability is a plugin registered here;
// /healthz, /readyz and /metrics are open (the plane binds to loopback by
// default and Prometheus must scrape), everything under /v1 needs a token.
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Logger } from '../log.js';
import { requireToken, TokenStore, type Token } from './auth.js';
import { healthRoutes } from './routes/health.js';
import { deviceRoutes } from './routes/device.js';
import { metricsRoutes } from './routes/metrics.js';
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
    disableRequestLogging: true,
    bodyLimit: 64 * 1024,
    ajv: { customOptions: { allErrors: false, removeAdditional: false, coerceTypes: false } },
  });
  const store = new TokenStore(options.tokens);

  await app.register(healthRoutes, { state: options.state });
  await app.register(metricsRoutes, { state: options.state });
  await app.register(
    async (v1) => {
      v1.addHook('onRequest', requireToken(store));
      await v1.register(deviceRoutes, { state: options.state });
    },
    { prefix: '/v1' },
  );

  app.setNotFoundHandler((request, reply) => {
    void reply.code(404).send({ error: 'not_found', message: `no route ${request.method} ${request.url}` });
  });
  app.setErrorHandler((error: { statusCode?: number; validation?: unknown; message: string }, request, reply) => {
    const status = error.statusCode && error.statusCode >= 400 ? error.statusCode : 500;
    if (status >= 500) request.log.error({ err: error }, 'request failed');
    void reply.code(status).send({
      error: error.validation ? 'bad_request' : status >= 500 ? 'internal' : 'bad_request',
      message: status >= 500 ? 'internal error; see the gateway log' : error.message,
    });
  });
  return app;
}
