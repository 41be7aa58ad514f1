// GET /v1/slo: every objective, its state (ok | violated | too few events |
// no data source | pending) and per window the observed percentile, whether
// it had the events to be judged, compliance and burn rate.
// POST /v1/slo/evaluate (admin): evaluate now instead of at the next tick.
import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import type { GatewayState } from '../../state.js';

const SloReport = Type.Object(
  {
    objectives: Type.Array(Type.Object({}, { additionalProperties: true }), {
      description: "each objective: name, state (ok, violated, too few events, no data source, pending), minEvents, per window the observed percentile, events, judged (events >= minEvents), compliance, burn rate",
    }),
    latencySources: Type.Array(Type.String(), { description: 'the latency histograms the gateway has (tick_publish, order_ack)' }),
  },
  { additionalProperties: true },
);

export async function sloRoutes(app: FastifyInstance, opts: { state: GatewayState }): Promise<void> {
  const { state } = opts;
  app.get('/slo', { schema: { tags: ['slo'], summary: 'every SLO and its state', response: { 200: SloReport } } }, async () => ({ ...state.slo.report(), latencySources: state.latency.names() }));
  app.post('/slo/evaluate', { config: { scope: 'admin' }, schema: { tags: ['slo'], summary: 'evaluate the SLOs now, not at the next tick', response: { 200: SloReport } } }, async () => ({ ...state.slo.evaluate(), latencySources: state.latency.names() }));
}
