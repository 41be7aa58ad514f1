// Liveness and readiness, for orchestrators and the Dockerfile's HEALTHCHECK.
// /healthz: the process serves requests and the engine completes duty cycles
//           (its heartbeat is younger than control.health.engineStaleMs).
// /readyz:  /healthz, every component has started, shutdown has not begun,
//           and every readiness check passes (the order journal has not failed).
// Both answer 503 with the reason otherwise.
import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
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

const Health = Type.Object(
  {
    status: Type.String({ description: '"ok", or why not: "engine stalled: no duty cycle completed for N ms (limit M ms)", "engine stopped"' }),
    version: Type.String(),
    uptimeSeconds: Type.Integer(),
    engineHeartbeatAgeMs: Type.Integer({ description: 'time since the engine last completed a duty cycle' }),
  },
  { additionalProperties: false },
);
const Ready = Type.Object(
  {
    status: Type.Union([Type.Literal('ready'), Type.Literal('not ready')]),
    reason: Type.Optional(Type.String({ description: 'why not ready: "engine stalled ...", "starting or shutting down", "order journal failed: ..."' })),
  },
  { additionalProperties: false },
);
// The health probes answer their own document for 503 too (orchestrators read `status`), not the error shape.
const healthSchema = (summary: string, description: string, body: typeof Health | typeof Ready) => ({
  tags: ['health'],
  summary,
  description: `Open: no token needed. ${description}`,
  security: [],
  response: { 200: { ...body, description: 'healthy / ready' }, 503: { ...body, description: 'not healthy / not ready: the reason in status or reason' } },
});

export async function healthRoutes(app: FastifyInstance, opts: { state: GatewayState }): Promise<void> {
  const { state } = opts;
  app.get('/healthz', { schema: healthSchema(
    'liveness: the process serves and the engine completes duty cycles',
    '200 while the engine\'s duty-cycle heartbeat is fresh (control.health.engineStaleMs); 503 answers the same document with the reason in `status` ("engine stalled: no duty cycle completed for N ms (limit M ms)" or "engine stopped"); `engineHeartbeatAgeMs` in both.',
    Health,
  ) }, async (_request, reply) => {
    const problem = state.heartbeat.problem();
    return reply.code(problem === undefined ? 200 : 503).send({
      status: problem ?? 'ok',
      version: state.version,
      uptimeSeconds: Math.round((Date.now() - state.startedAt.getTime()) / 1000),
      engineHeartbeatAgeMs: Math.round(state.heartbeat.ageMs()),
    });
  });
  app.get('/readyz', { schema: healthSchema(
    'readiness: healthy, started, not shutting down, the order journal not failed',
    '503 answers the same document with the reason in `reason` ("engine stalled ...", "starting or shutting down", "order journal failed: ...").',
    Ready,
  ) }, async (_request, reply) => {
    const problem = notReadyReason(state);
    return reply.code(problem === undefined ? 200 : 503).send({ status: problem === undefined ? 'ready' : 'not ready', ...(problem ? { reason: problem } : {}) });
  });
}
