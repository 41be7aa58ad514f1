// GET /v1/device: what `ibv_devinfo` and `ibstat` would tell about the
// gateway's device (ports, port state, GIDs, MTU, limits), plus where the
// engine thread runs and why, how the device receives (net report) and its
// socket, wire and ingress counters.
import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import { looseObject } from '../openapi.js';
import { loadAddon } from '../../../native/addon.js';
import type { GatewayState } from '../../state.js';
import { describeDevice } from '../../device/device.js';

export function deviceReport(state: GatewayState) {
  const placement = state.engine.placement();
  const device = state.device;
  return {
    backend: state.config.backend.kind,
    device: state.config.backend.device,
    // The address the device sends from: backend.address (soft), its GID's IPv4 address (ibv).
    address: device?.address ?? state.config.backend.address,
    features: loadAddon().features,
    rdma: describeDevice(device),
    numaNode: placement.numaNode,
    engine: {
      running: state.engine.running,
      placement,
      // One engine thread today; a list so per-feed engines can join it.
      threads: [
        {
          role: 'engine',
          tid: placement.tid,
          cpu: placement.cpu,
          affinity: placement.affinity,
          pinned: placement.pinned,
          numaNode: placement.numaNode,
          idleStrategy: placement.idleStrategy,
          idleReason: placement.idleReason,
        },
      ],
      stats: state.engine.stats(),
    },
    net: device?.netReport() ?? null,
    // ESP (security): mode, algorithm, the SAs installed and the peers checked.
    security: state.security?.report() ?? null,
    counters: device?.counters() ?? null,
  };
}

export async function deviceRoutes(app: FastifyInstance, opts: { state: GatewayState }): Promise<void> {
  const DeviceReport = Type.Object(
    {
      backend: Type.Union([Type.Literal('soft'), Type.Literal('ibv')]),
      device: Type.String({ description: 'backend.device: a network interface (soft) or an RDMA device (ibv)' }),
      address: Type.String(),
      features: looseObject('what the native addon was built with (crc: isal | zlib, ibv, ...)'),
      rdma: looseObject('the verbs device: open, name, firmware, node GUID, limits, ports (state, MTU, GIDs)'),
      numaNode: Type.Integer(),
      engine: looseObject('running, placement (CPU, affinity, idle strategy and why), threads, stats'),
      net: Type.Union([looseObject('how the device receives (receiveMode, ...)'), Type.Null()]),
      counters: Type.Union([looseObject('socket, wire and ingress counters'), Type.Null()]),
      security: Type.Union([looseObject('ESP through xfrm: requireEncryption, mode, algorithm, sas (dir, src, dst, spi), peers (address, local, link, covered, reason)'), Type.Null()]),
    },
    { additionalProperties: true },
  );
  app.get(
    '/device',
    { schema: { tags: ['device'], summary: 'the backend, the RDMA device, its ports and the engine threads',
        description: 'The device (firmware, node GUID, limits), its ports (state, MTU, GIDs), its NUMA node, the engine threads with CPU, affinity and idle strategy, the net report and the socket, wire and ingress counters.',
        response: { 200: DeviceReport } } },
    async () => deviceReport(opts.state),
  );
}
