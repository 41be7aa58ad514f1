// GET /v1/slo: every objective, its state (ok | violated | no data source |
// pending) and per window the observed percentile, compliance and burn rate.
// POST /v1/slo/evaluate (admin): evaluate now instead of at the next tick.
import type { FastifyInstance } from 'fastify';
import type { GatewayState } from '../../state.js';

export async function sloRoutes(app: FastifyInstance, opts: { state: GatewayState }): Promise<void> {
  const { state } = opts;
  app.get('/slo', async () => ({ ...state.slo.report(), latencySources: state.latency.names() }));
  app.post('/slo/evaluate', { config: { scope: 'admin' } }, async () => ({ ...state.slo.evaluate(), latencySources: state.latency.names() }));
}
