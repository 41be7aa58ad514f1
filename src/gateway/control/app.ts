// The Fastify control plane. Each capability is a plugin registered here;
// /healthz, /readyz and the status page's HTML shell at / are open, /metrics
// needs a token of any scope unless control.metricsAuth is 'none' (it names
// QPNs and session names), everything under /v1 needs a token: GET needs
// read, anything else admin. An unknown /v1 path is 401 before it is 404, so
// the routes are not probed without a token.
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type RouteOptions } from 'fastify';
import type { Registry } from 'prom-client';
import type { Logger } from '../log.js';
import { requireToken, TokenStore, type Token } from './auth.js';
import { healthRoutes } from './routes/health.js';
import { deviceRoutes } from './routes/device.js';
import { countControlRequests, countTlsHandshakeFailures, createRegistry, exportCertificateExpiry, metricsRoutes } from './routes/metrics.js';
import { refuseUnverifiedClients } from './client-certificates.js';
import { qpRoutes } from './routes/qps.js';
import { sloRoutes } from './routes/slo.js';
import { logLevelRoutes } from './routes/log-level.js';
import { extensionRoutes } from './routes/extensions.js';
import { statusPageRoutes, statusRoutes } from './routes/status.js';
import type { GatewayState } from '../state.js';
import { errorCode, sendError } from './errors.js';
import { documentV1Route, registerOpenApi } from './openapi.js';
import { EXTENSIONS, notEnabledMessage } from './routes/extensions.js';
import type { HttpsOptions } from './tls.js';

/** The largest request body the control plane reads; more is 413 payload_too_large. */
export const BODY_LIMIT = 64 * 1024;

export interface RegisteredRoute {
  method: string;
  url: string;
  /** Left out of /openapi.json (the status page, the docs UI, a feature's "not enabled" placeholder). */
  hidden: boolean;
}

const registeredRoutes = new WeakMap<FastifyInstance, RouteOptions[]>();
const metricsRegistries = new WeakMap<FastifyInstance, Registry>();

/** The registry GET /metrics serves (what the README's metrics table is made from: scripts/docs/metrics-table.ts). */
export function metricsRegistryOf(app: FastifyInstance): Registry | undefined {
  return metricsRegistries.get(app);
}

/** Every route the control plane registered, one row per method (what the OpenAPI test compares the document with). */
export function routesOf(app: FastifyInstance): RegisteredRoute[] {
  // Read when asked: the /v1 plugin's onRoute hook (documentV1Route) runs after the root's and may hide a route.
  return (registeredRoutes.get(app) ?? []).flatMap((route) =>
    (Array.isArray(route.method) ? route.method : [route.method]).map((method) => ({
      method: method.toUpperCase(),
      url: route.url,
      hidden: route.schema?.hide === true,
    })),
  );
}

/** What the document says this gateway does not serve. */
function notServed(state: GatewayState): string[] {
  return EXTENSIONS.filter((name) => state[name] === undefined).map(
    (name) => `This gateway does not serve /v1/${name} (${notEnabledMessage(name)}): every /v1/${name} path answers 404 not_enabled.`,
  );
}

export interface ControlPlaneOptions {
  state: GatewayState;
  tokens: Token[];
  logger: Logger;
  /** Serve https with these (control.tls, read by loadControlTls); absent: http. */
  https?: HttpsOptions;
  /** The certificate https serves, for its expiry metric. */
  certificate?: { subject: string; validTo: string };
}

export async function buildControlPlane(options: ControlPlaneOptions): Promise<FastifyInstance> {
  const app = Fastify({
    // Fastify types an https instance apart from an http one; the routes use neither's server type.
    ...(options.https ? { https: options.https } : {}),
    // pino's Logger is Fastify's logger; the cast only drops pino's extra generics.
    loggerInstance: options.logger.child({ component: 'control' }) as FastifyBaseLogger,
    // (the top-level disableRequestLogging option is deprecated since fastify 5.12)
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: BODY_LIMIT,
    // Fastify's default (10 s) is a start failure on a slow host: in the rdma-vm guest (qemu TCG, load 17)
    // @fastify/swagger-ui took longer to register and the gateway exited (test/campaign/campaign.test.ts).
    pluginTimeout: 120_000,
    ajv: { customOptions: { allErrors: false, removeAdditional: false, coerceTypes: false } },
  }) as unknown as FastifyInstance;
  // Response schemas are the document's (openapi.ts), not a serializer: answers stay JSON.stringify's,
  // as they were before the routes had response schemas, with every field a route sends.
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  const routes: RouteOptions[] = [];
  registeredRoutes.set(app, routes);
  app.addHook('onRoute', (route) => void routes.push(route));
  const store = new TokenStore(options.tokens);
  const registry = createRegistry(options.state);
  metricsRegistries.set(app, registry);
  countControlRequests(app, registry);
  const countTlsRefusal = countTlsHandshakeFailures(app, registry);
  exportCertificateExpiry(registry, options.certificate);
  // Before every route and the 404 handler: an unverified client reaches none of them.
  if (options.https?.requestCert) refuseUnverifiedClients(app, countTlsRefusal);
  // Before the plugins: Fastify gives each plugin the error handler set when it is registered.
  const authenticate = requireToken(store);
  const isV1 = (url: string): boolean => /^\/v1(\/|\?|$)/.test(url);
  app.setNotFoundHandler(async (request, reply) => {
    if (isV1(request.url)) {
      await authenticate(request, reply);
      if (reply.sent) return reply;
    }
    return sendError(reply, 404, `no route ${request.method} ${request.url}`);
  });
  app.setErrorHandler(async (error: { statusCode?: number; code?: string; validation?: unknown; message: string }, request, reply) => {
    // A /v1 request that failed before auth ran (a body too large for an unknown path) is 401 first:
    // without a token no /v1 answer tells what exists.
    if (isV1(request.url) && request.principal === undefined) {
      await authenticate(request, reply);
      if (reply.sent) return reply;
    }
    const status = error.statusCode && error.statusCode >= 400 && error.statusCode <= 599 ? error.statusCode : 500;
    if (status >= 500) request.log.error({ err: error }, 'request failed');
    let message = status >= 500 ? 'internal error; see the gateway log' : error.message;
    if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') message = `request body too large: limit ${request.routeOptions.bodyLimit ?? BODY_LIMIT} bytes`;
    return reply.code(status).send({ error: error.validation ? 'bad_request' : errorCode(status), message });
  });

  await registerOpenApi(app, { version: options.state.version, notes: notServed(options.state) });
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
      v1.addHook('onRoute', documentV1Route);
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
