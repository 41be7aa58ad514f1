// Liveness and readiness, for orchestrators and the Dockerfile's HEALTHCHECK.
// /healthz: the process serves requests and the engine completes duty cycles
//           (its heartbeat is younger than control.health.engineStaleMs).
// /readyz:  /healthz, every component has started, shutdown has not begun,
//           and every readiness check passes (the order journal has not failed).
// Both answer 503 with the reason otherwise.
import type { FastifyInstance } from 'fastify';
import type { GatewayState } from '../../state.js';

/** Why the gateway is not ready, or undefined when it is. */
export function notReadyReason(state: GatewayState): string | undefined {
  const unhealthy = state.heartbeat.problem();
  if (unhealthy !== undefined) return unhealthy;
  if (!state.ready) return 'starting or shutting down';
  for (const check of state.readinessChecks) {
    const problem = check();
    if (problem !== undefined) return problem;
  }
  return undefined;
}

export async function healthRoutes(app: FastifyInstance, opts: { state: GatewayState }): Promise<void> {
  const { state } = opts;
  app.get('/healthz', async (_request, reply) => {
    const problem = state.heartbeat.problem();
    return reply.code(problem === undefined ? 200 : 503).send({
      status: problem ?? 'ok',
      version: state.version,
      uptimeSeconds: Math.round((Date.now() - state.startedAt.getTime()) / 1000),
      engineHeartbeatAgeMs: Math.round(state.heartbeat.ageMs()),
    });
  });
  app.get('/readyz', async (_request, reply) => {
    const problem = notReadyReason(state);
    return reply.code(problem === undefined ? 200 : 503).send({ status: problem === undefined ? 'ready' : 'not ready', ...(problem ? { reason: problem } : {}) });
  });
}
