// Order entry in the gateway: starts the OrderService on the gateway's engine
// and device (journal under state.dir, trades and book levels on the feed
// when the feed runs), registers it as the provider of 'trading' and 'risk'
// sessions, exports its order → ack latency as `order_ack` (the SLOs on it
// start being evaluated) and its counters on /metrics, and takes part in
// shutdown: answers in flight drain, then the journal is flushed and the
// sessions closed before the feed and the device go.
import type { Engine } from '../native/engine.js';
import { LatencyCounts } from '../native/latency-counts.js';
import { OrderService } from '../orders/service.js';
import { OrderSessionProvider } from '../orders/provider.js';
import { orderMetrics } from '../orders/metrics.js';
import type { ControlExtension, GatewayState } from './state.js';

/** The order service's part in the gateway's lifecycle (no routes of its own: /v1/sessions serves it). */
export type OrdersLifecycle = Required<Pick<ControlExtension, 'summary' | 'drain' | 'close'>> & { readonly service: OrderService };

export function startOrders(state: GatewayState): OrdersLifecycle | undefined {
  const { config, device } = state;
  if (!config.orders.enabled || device === undefined) return undefined;
  const log = state.logger.child({ component: 'orders' });
  const service = new OrderService(state.engine as Engine, device, config.orders, {
    stateDir: config.state.dir,
    feeds: config.feeds,
    publisher: state.feedService?.publisher,
  });
  service.start();
  const stats = service.stats();
  log.info(
    {
      journal: service.nativeConfig.journal.path,
      fsync: config.orders.journal.fsync,
      instruments: service.nativeConfig.instruments.map((i) => ({ id: i.id, channel: i.channel ?? null })),
      accounts: service.nativeConfig.accounts.length,
      publishing: service.publisher !== undefined,
      journalRecords: stats?.journalRecords ?? 0,
    },
    'order entry serving',
  );
  const synthetic = config.feeds.enabled && config.feeds.synthetic.enabled ? config.feeds.instruments : undefined;
  if (synthetic && service.publisher) {
    const last = synthetic.firstId + synthetic.count - 1;
    const shared = service.nativeConfig.instruments.filter((i) => i.id >= synthetic.firstId && i.id <= last).map((i) => i.id);
    if (shared.length > 0) {
      log.warn({ instruments: shared }, 'order-entry instruments are also quoted by the synthetic source: their feed book mixes both');
    }
  }

  state.sessionProviders.push(new OrderSessionProvider(service));
  const unregister = state.latency.registerLatency(
    'order_ack',
    'Order to ack latency: the receive completion seen by the engine to the Ack (or Reject) posted, journal write included.',
    () => {
      const counts = service.running ? service.ackLatencyCounts() : undefined;
      return counts ? LatencyCounts.fromDense(counts) : LatencyCounts.EMPTY;
    },
  );
  state.metricSources.push(orderMetrics(service));

  return {
    service,
    summary: () => {
      const s = service.stats();
      return {
        journal: service.nativeConfig.journal.path,
        fsync: config.orders.journal.fsync,
        instruments: service.nativeConfig.instruments.length,
        accounts: service.nativeConfig.accounts.length,
        received: s?.received ?? 0,
        acks: s?.acks ?? 0,
        rejects: s?.rejects ?? 0,
        fills: s?.fills ?? 0,
        openOrders: Number(s?.['openOrders'] ?? 0),
      };
    },
    drain: async (timeoutMs: number) => {
      // Answers waiting for the journal or a send slot go out before the sessions close.
      const end = Date.now() + timeoutMs;
      while (service.running && Number(service.stats()?.['pendingMessages'] ?? 0) > 0 && Date.now() < end) {
        await new Promise((r) => setTimeout(r, 5));
      }
    },
    close: async () => {
      const before = service.running ? service.stats() : undefined;
      service.close();
      unregister();
      log.info({ journalRecords: before?.journalRecords ?? null, durablePosition: before?.durablePosition ?? null }, 'order entry closed, journal flushed');
    },
  };
}
