// The order-handler plug-in point.
//
// The built-in handler is the native price-time book (native/src/orders):
// decode, checks, risk, journal and Ack all run on the engine thread, and the
// book matches right after the Ack. A deployment may add a TS handler that
// sees every accepted order right after its Ack — to forward it to an
// exchange, to hedge, to record it — under this contract:
//
//   - onOrder runs on the JS thread, after the Ack was posted and the order
//     journaled: it cannot delay or refuse the ack (the ack path never waits
//     for another thread), and the built-in book has already matched it.
//   - Calls come in the gateway's processing order (ascending orderId), once
//     per order, including after a restart only for orders accepted since.
//   - It must not block: heavy work goes to a queue of its own.
//   - A throwing handler is logged and counted; the gateway goes on.
//
// What exists today: the native service publishes what the book does (trades
// and book level changes) on the market-data feed, and exposes counters and
// risk words; it does not yet hand individual accepted orders to JS (no
// fromEngine record per order in addon.orders). attachOrderHandler() checks
// for that hook and refuses, naming what is missing, when the addon has none:
// nothing here pretends to deliver orders it cannot see.
import type { OrderService } from './service.js';
import type { Side, TimeInForce } from './messages.js';

/** The built-in handler's name. */
export const BUILT_IN_ORDER_HANDLER = 'native-book';

export interface AcceptedOrder {
  session: number;
  orderId: bigint;
  clientOrderId: bigint;
  account: bigint;
  instrumentId: number;
  side: Side;
  price: number;
  quantity: number;
  timeInForce: TimeInForce;
  /** CLOCK_MONOTONIC ns at which the Ack was posted. */
  ackedAtNs: bigint;
}

export interface OrderHandlerPlugin {
  readonly name: string;
  onOrder(order: AcceptedOrder): void;
}

/** The hook a native service with JS order events offers (not in addon.orders yet). */
interface NativeOrderEvents {
  onAcceptedOrders(callback: (orders: AcceptedOrder[]) => void): () => void;
}

export class OrderHandlerUnavailable extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'OrderHandlerUnavailable';
  }
}

/**
 * Attaches `handler` to the running service; returns the function that
 * detaches it. Throws OrderHandlerUnavailable when the native service offers
 * no per-order events.
 */
export function attachOrderHandler(service: OrderService, handler: OrderHandlerPlugin, onError: (err: unknown) => void = () => {}): () => void {
  const native = service.native as unknown as Partial<NativeOrderEvents>;
  if (typeof native.onAcceptedOrders !== 'function') {
    throw new OrderHandlerUnavailable(
      `order handler "${handler.name}": this build's native order service does not hand accepted orders to JS ` +
        `(addon.orders has no onAcceptedOrders hook); the built-in ${BUILT_IN_ORDER_HANDLER} handles every order, ` +
        'and its trades and book changes are on the market-data feed',
    );
  }
  return native.onAcceptedOrders((orders) => {
    for (const o of orders) {
      try {
        handler.onOrder(o);
      } catch (err) {
        onError(err);
      }
    }
  });
}
