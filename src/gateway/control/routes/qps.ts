// GET /v1/qps: every QP the gateway made — what `rdma res show qp` shows
// (LQPN, type, state, SQ/RQ PSN, destination QPN) and the transport counters
// behind `rdma statistic qp`, each under its one name (native/src/verbs/soft/qp_counters.def).
// GET /v1/qps/:qpn: one QP, with every counter.
import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import type { GatewayState } from '../../state.js';
import { errorResponses } from '../errors.js';

const Device = Type.Union([Type.Literal('primary'), Type.Literal('alternate')], {
  description: "the gateway's device the QP is on: backend.device ('primary') or backend.alternateDevice ('alternate'); QPNs are per device",
});

const QpRow = Type.Object(
  {
    qpn: Type.Integer(),
    device: Device,
    type: Type.String({ description: 'RC, UC, UD' }),
    state: Type.String({ description: 'RESET, INIT, RTR, RTS, SQD, SQE, ERR' }),
    owner: Type.String(),
    sqPsn: Type.Integer(),
    rqPsn: Type.Integer(),
    counters: Type.Object({}, { additionalProperties: true, description: 'every transport counter, under its qp_counters.def name' }),
  },
  { additionalProperties: true, description: 'a QP: QPN, type, state, PSNs, destination, and its counters' },
);

export const QpnParams = Type.Object(
  { qpn: Type.String({ pattern: '^(0x[0-9a-fA-F]{1,6}|[0-9]{1,8})$', description: 'a QP number, decimal or 0x hex' }) },
  { additionalProperties: false },
);

export async function qpRoutes(app: FastifyInstance, opts: { state: GatewayState }): Promise<void> {
  const { state } = opts;
  app.get(
    '/qps',
    {
      schema: {
        tags: ['qps'],
        summary: 'every QP the gateway made',
        description: 'Each QP: QPN, type, state, SQ/RQ PSN, destination, and counters: every transport counter under its qp_counters.def name (retransmitted_pkts, completer_retry, timeouts, rcvd_seq_err, rnr_naks_sent...).',
        response: {
          200: Type.Object(
            {
              device: Type.Union([Type.String(), Type.Null()], { description: 'backend.device' }),
              alternateDevice: Type.Union([Type.String(), Type.Null()], { description: 'backend.alternateDevice, null without one' }),
              count: Type.Integer(),
              qps: Type.Array(QpRow),
            },
            { additionalProperties: false },
          ),
        },
      },
    },
    async () => {
    const qps = state.qps.list();
    return { device: state.device?.name ?? null, alternateDevice: state.alternateDevice?.name ?? null, count: qps.length, qps };
    },
  );
  app.get<{ Params: { qpn: string }; Querystring: { device?: 'primary' | 'alternate' } }>(
    '/qps/:qpn',
    {
      schema: {
        tags: ['qps'],
        summary: 'one QP, with every counter',
        description: "The QPN in decimal or 0x hex, on the device ?device= names ('primary' by default): 404 if unknown, 400 if not a 24-bit QPN.",
        params: QpnParams,
        querystring: Type.Object({ device: Type.Optional(Device) }, { additionalProperties: false }),
        response: { 200: QpRow, ...errorResponses(404) },
      },
    },
    async (request, reply) => {
    const qpn = Number(request.params.qpn);
    if (qpn > 0xffffff) {
      return reply.code(400).send({ error: 'bad_request', message: `params/qpn must be at most 0xffffff (24 bits), got ${request.params.qpn}` });
    }
    const device = request.query.device ?? 'primary';
    const qp = state.qps.get(qpn, device);
    if (!qp) return reply.code(404).send({ error: 'not_found', message: `no QP ${qpn} on this gateway's ${device} device` });
    return qp;
    },
  );
}
