// Order events from the engine (fromEngine record type 24, docs/protocol.md
// 3.7): what the native order handler did to each order — accepted,
// replaced, filled, cancelled — after the journal had it and its answer was
// released to the session. They feed the TS order-handler plug-ins
// (handler.ts).
import { cancelReasonName, type Side, type TimeInForce } from './messages.js';

export type OrderEventKind = 'accepted' | 'replaced' | 'filled' | 'cancelled';

export interface OrderEvent {
  kind: OrderEventKind;
  /** The trading session (its id in /v1/sessions). */
  session: number;
  /** The gateway's order id. */
  orderId: bigint;
  /** The request's client order id (a fill's: the order's). */
  clientOrderId: bigint;
  /** Replaced/cancelled: the client order id of the order acted on; otherwise equal to clientOrderId. */
  origClientOrderId: bigint;
  account: bigint;
  instrumentId: number;
  side: Side;
  timeInForce: TimeInForce;
  /** accepted/replaced/cancelled: the limit; filled: the trade price (mantissa). */
  price: bigint;
  /** accepted/replaced: the order quantity; filled: the quantity traded; cancelled: the quantity cancelled. */
  quantity: bigint;
  /** Open quantity after this step. */
  leaves: bigint;
  /** filled: the trade (both sides' fills share it); otherwise 0n. */
  tradeId: bigint;
  /** cancelled: why (REQUESTED, IOC_REMAINDER, SELF_MATCH, DISCONNECT); otherwise undefined. */
  cancelReason: string | undefined;
  /** The app_seq of the answer the session got for this step. */
  appSeq: bigint;
  /** CLOCK_MONOTONIC ns at which the engine handed the event over (the same duty cycle that released the answer). */
  releasedNs: bigint;
}

export const ORDER_EVENTS_HEADER_BYTES = 8;
export const ORDER_EVENT_BYTES = 96;
const KINDS: readonly (OrderEventKind | undefined)[] = [undefined, 'accepted', 'replaced', 'filled', 'cancelled'];

/** The service id of a record, without decoding its events. */
export function orderEventsServiceId(p: Uint8Array): number {
  return new DataView(p.buffer, p.byteOffset, p.byteLength).getUint32(0, true);
}

/** Decodes one record's events. Throws RangeError on a record that does not match the layout. */
export function readOrderEvents(p: Uint8Array): OrderEvent[] {
  const dv = new DataView(p.buffer, p.byteOffset, p.byteLength);
  if (p.byteLength < ORDER_EVENTS_HEADER_BYTES) throw new RangeError(`order events record: ${p.byteLength} bytes, shorter than its header`);
  const count = dv.getUint32(4, true);
  if (p.byteLength !== ORDER_EVENTS_HEADER_BYTES + count * ORDER_EVENT_BYTES) {
    throw new RangeError(`order events record: ${p.byteLength} bytes for ${count} events`);
  }
  const out: OrderEvent[] = [];
  for (let i = 0, at = ORDER_EVENTS_HEADER_BYTES; i < count; i++, at += ORDER_EVENT_BYTES) {
    const kind = KINDS[dv.getUint8(at)];
    if (kind === undefined) throw new RangeError(`order events record: event ${i} has unknown kind ${dv.getUint8(at)}`);
    const reason = dv.getUint8(at + 3);
    out.push({
      kind,
      side: dv.getUint8(at + 1) as Side,
      timeInForce: dv.getUint8(at + 2) as TimeInForce,
      cancelReason: kind === 'cancelled' ? cancelReasonName(reason) : undefined,
      session: dv.getUint32(at + 4, true),
      instrumentId: dv.getUint32(at + 8, true),
      orderId: dv.getBigUint64(at + 16, true),
      clientOrderId: dv.getBigUint64(at + 24, true),
      origClientOrderId: dv.getBigUint64(at + 32, true),
      account: dv.getBigUint64(at + 40, true),
      price: dv.getBigInt64(at + 48, true),
      quantity: dv.getBigInt64(at + 56, true),
      leaves: dv.getBigInt64(at + 64, true),
      tradeId: dv.getBigUint64(at + 72, true),
      appSeq: dv.getBigUint64(at + 80, true),
      releasedNs: dv.getBigUint64(at + 88, true),
    });
  }
  return out;
}
