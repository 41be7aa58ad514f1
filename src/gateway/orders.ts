// Order entry in the gateway: starts the OrderService on the gateway's engine
// and device (journal under state.dir, trades and book levels on the feed
// when the feed runs), registers it as the provider of 'trading' and 'risk'
// sessions, exports its order → ack latency as `order_ack` (the SLOs on it
// start being evaluated) and its counters on /metrics, attaches the TS order
// handlers of `orders.handlers` (src/orders/handler.ts), and takes part in
// shutdown: answers in flight drain, the handlers are closed after their last
// event, then the journal is flushed and the sessions closed before the feed
// and the device go.
import type { Engine } from '../native/engine.js';
import { LatencyCounts } from '../native/latency-counts.js';
import { OrderService } from '../orders/service.js';
import { OrderSessionProvider } from '../orders/provider.js';
import { orderMetrics } from '../orders/metrics.js';
import { attachOrderHandler, HANDLER_CLOSE_TIMEOUT_MS, loadOrderHandler, type AttachedOrderHandler } from '../orders/handler.js';
import type { ControlExtension, GatewayState } from './state.js';

/** The order service's part in the gateway's lifecycle (no routes of its own: /v1/sessions serves it). */
export type OrdersLifecycle = Required<Pick<ControlExtension, 'summary' | 'drain' | 'close'>> & { readonly service: OrderService };

// long because: the order service's start in order (service, synthetic-feed overlap, handlers with
// their undo on failure, latency and rebuild logs) and the lifecycle it returns, over one closure.
export async function startOrders(state: GatewayState): Promise<OrdersLifecycle | undefined> {
  const { config, device } = state;
  if (!config.orders.enabled || device === undefined) return undefined;
  const log = state.logger.child({ component: 'orders' });
  const service = new OrderService(state.engine as Engine, device, config.orders, {
    stateDir: config.state.dir,
    feeds: config.feeds,
    publisher: state.feedService?.publisher,
    alternateDevice: state.alternateDevice,
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

  const handlers: AttachedOrderHandler[] = [];
  const detachHandlers = async (): Promise<void> => {
    for (const h of handlers.splice(0)) {
      const closed = await h.detach().catch((err: unknown) => void log.error({ err, handler: h.name }, 'order handler close failed'));
      if (closed === false) log.warn({ handler: h.name, timeoutMs: HANDLER_CLOSE_TIMEOUT_MS }, 'order handler close() did not finish in time; shutdown goes on');
    }
  };
  try {
    for (const [i, spec] of config.orders.handlers.entries()) {
      const key = `orders.handlers.${i}.module`;
      const handlerLog = log.child({ handler: spec.module });
      const plugin = await loadOrderHandler(spec, key, { options: spec.options, stateDir: config.state.dir, logger: handlerLog });
      handlers.push(
        attachOrderHandler(service, plugin, (err, event) =>
          handlerLog.error({ err, kind: event.kind, session: event.session, orderId: String(event.orderId) }, 'order handler threw; the gateway goes on'),
        ),
      );
      log.info({ handler: plugin.name, module: spec.module }, 'order handler attached');
    }
  } catch (err) {
    await detachHandlers();
    service.close();
    throw err;
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
  state.metricSources.push(orderMetrics(service, () => handlers));
  state.readinessChecks.push(() => journalProblem(service));
  const stopRebuildLog = logRebuildFailures(service, log);

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
        handlers: handlers.map((h) => h.name),
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
      stopRebuildLog();
      await detachHandlers();
      const before = service.running ? service.stats() : undefined;
      service.close();
      unregister();
      log.info({ journalRecords: before?.journalRecords ?? null, durablePosition: before?.durablePosition ?? null }, 'order entry closed, journal flushed');
    },
  };
}

/** "order journal failed: ..." once the journal refused a write (answers are held), else undefined. */
export function journalProblem(service: OrderService): string | undefined {
  if (!service.running) return undefined;
  const s = service.stats();
  if (s === undefined || Number(s['journalFailed'] ?? 0) === 0) return undefined;
  return `order journal failed: ${String(s['journalFailure'] ?? '') || 'see the gateway log'}`;
}

const REBUILD_CHECK_MS = 1000;

/**
 * Logs, once a second at most, that resend rebuilds failed and why (the
 * engine counts them; the reason of the last one comes with its stats).
 * Returns the function that stops it.
 */
function logRebuildFailures(service: OrderService, log: GatewayState['logger']): () => void {
  let seen = 0;
  const timer = setInterval(() => {
    const s = service.running ? service.stats() : undefined;
    const failures = Number(s?.resendRebuildFailures ?? 0);
    if (failures <= seen) return;
    log.warn({ failures: failures - seen, reason: s?.lastRebuildFailure }, 'resend rebuild from the journal failed: the session gets resend gaps');
    seen = failures;
  }, REBUILD_CHECK_MS).unref();
  return () => clearInterval(timer);
}
