// A real gateway in this process for the generators that describe what a
// running gateway serves (routes, metrics): the embedded default with order
// entry and a feed on groups of its own, on a free port and loopback address
// (test/support/in-process-gateway.ts), stopped once `use` is done.
import type { Gateway } from '../../src/gateway/service.js';
import { startTestGateway } from '../../test/support/in-process-gateway.js';

const CONFIG = `orders:
  enabled: true
feeds:
  enabled: true
  channels: [{id: 1, groupA: 239.77.41.1, groupB: 239.77.41.2}]
`;

export async function withLiveGateway<T>(use: (gw: Gateway) => Promise<T>): Promise<T> {
  const gw = await startTestGateway(CONFIG);
  try {
    return await use(gw);
  } finally {
    await gw.close('docs generated');
  }
}
