// GET /v1/device: what `ibv_devinfo` and `ibstat` would tell about the
// gateway's device, plus where the engine thread runs and why.
import type { FastifyInstance } from 'fastify';
import { loadAddon } from '../../../native/addon.js';
import type { GatewayState } from '../../state.js';

export async function deviceRoutes(app: FastifyInstance, opts: { state: GatewayState }): Promise<void> {
  const { state } = opts;
  app.get('/device', async () => ({
    backend: state.config.backend.kind,
    device: state.config.backend.device,
    address: state.config.backend.address,
    features: loadAddon().features,
    engine: {
      running: state.engine.running,
      placement: state.engine.placement(),
      stats: state.engine.stats(),
    },
  }));
}
