// Liveness and readiness, for orchestrators and the Dockerfile's HEALTHCHECK.
// /healthz: the process serves requests and the engine thread is alive.
// /readyz: every component has started and shutdown has not begun.
import type { FastifyInstance } from 'fastify';
import type { GatewayState } from '../../state.js';

export async function healthRoutes(app: FastifyInstance, opts: { state: GatewayState }): Promise<void> {
  const { state } = opts;
  app.get('/healthz', async (_request, reply) => {
    const engineRunning = state.engine.running;
    return reply.code(engineRunning ? 200 : 503).send({
      status: engineRunning ? 'ok' : 'engine stopped',
      version: state.version,
      uptimeSeconds: Math.round((Date.now() - state.startedAt.getTime()) / 1000),
    });
  });
  app.get('/readyz', async (_request, reply) => {
    const ready = state.ready && state.engine.running;
    return reply.code(ready ? 200 : 503).send({ status: ready ? 'ready' : 'not ready' });
  });
}
