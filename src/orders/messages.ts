// Order-entry messages (proto/qpgate/orders/v1/orders.proto) through the
// statically generated protobuf code: client requests encoded, gateway
// answers decoded into plain objects. 64-bit ids, sequence numbers and
// accounts are bigints; prices and quantities are numbers (safe integers:
// mantissas and lots never come near 2^53).
import protobuf from 'protobufjs/minimal.js';
import type Long from 'long';
import { qpgate } from '../generated/qpgate.js';

// protobufjs's own Long (the `long` package it depends on; the generated types name it).
const LongClass = protobuf.util.Long as unknown as typeof Long;

export const ov1 = qpgate.orders.v1;
export const Side = qpgate.orders.v1.Side;
export type Side = qpgate.orders.v1.Side;
export const TimeInForce = qpgate.orders.v1.TimeInForce;
export type TimeInForce = qpgate.orders.v1.TimeInForce;
export const RejectReason = qpgate.orders.v1.RejectReason;
export type RejectReason = qpgate.orders.v1.RejectReason;
export const CancelReason = qpgate.orders.v1.CancelReason;
export type CancelReason = qpgate.orders.v1.CancelReason;
export const Liquidity = qpgate.orders.v1.Liquidity;
export type Liquidity = qpgate.orders.v1.Liquidity;

type Int64 = number | Long | null | undefined;

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** A u64 for the encoder: a number while it is exact, else a Long. */
function u64(v: bigint | number): number | Long {
  const b = BigInt(v);
  if (b < 0n || b > 0xffffffffffffffffn) throw new RangeError(`expected an unsigned 64-bit value, got ${b}`);
  return b <= MAX_SAFE ? Number(b) : LongClass.fromString(b.toString(), true);
}

function i64(v: number, what: string): number {
  if (!Number.isSafeInteger(v)) throw new RangeError(`${what}: expected a safe integer, got ${v}`);
  return v;
}

/** A decoded 64-bit field as a bigint (unsigned). */
export function toU64(v: Int64): bigint {
  if (v === null || v === undefined) return 0n;
  if (typeof v === 'number') return BigInt(v);
  return (BigInt(v.high >>> 0) << 32n) | BigInt(v.low >>> 0);
}

/** A decoded int64 field as a number. */
export function toI64(v: Int64): number {
  if (v === null || v === undefined) return 0;
  if (typeof v === 'number') return v;
  return Number(BigInt.asIntN(64, (BigInt(v.high >>> 0) << 32n) | BigInt(v.low >>> 0)));
}

// ---- client → gateway ---------------------------------------------------------

export interface NewOrderInput {
  clientOrderId: bigint | number;
  instrumentId: number;
  side: Side;
  price: number;
  quantity: number;
  /** Default DAY. */
  timeInForce?: TimeInForce;
  account: bigint | number;
}

export interface CancelInput {
  clientOrderId: bigint | number;
  origClientOrderId: bigint | number;
  instrumentId: number;
}

export interface ReplaceInput extends CancelInput {
  price: number;
  quantity: number;
}

export type ClientRequest =
  | { kind: 'newOrder'; value: NewOrderInput }
  | { kind: 'cancel'; value: CancelInput }
  | { kind: 'replace'; value: ReplaceInput };

export function encodeHello(lastAppSeq: bigint): Uint8Array {
  return ov1.OrderMessage.encode({ hello: { lastAppSeq: u64(lastAppSeq) } }).finish();
}

export function encodeRequest(r: ClientRequest): Uint8Array {
  switch (r.kind) {
    case 'newOrder': {
      const o = r.value;
      return ov1.OrderMessage.encode({
        newOrder: {
          clientOrderId: u64(o.clientOrderId),
          instrumentId: o.instrumentId,
          side: o.side,
          price: i64(o.price, 'price'),
          quantity: i64(o.quantity, 'quantity'),
          timeInForce: o.timeInForce ?? TimeInForce.TIME_IN_FORCE_DAY,
          account: u64(o.account),
        },
      }).finish();
    }
    case 'cancel': {
      const c = r.value;
      return ov1.OrderMessage.encode({
        cancel: { clientOrderId: u64(c.clientOrderId), origClientOrderId: u64(c.origClientOrderId), instrumentId: c.instrumentId },
      }).finish();
    }
    case 'replace': {
      const c = r.value;
      return ov1.OrderMessage.encode({
        replace: {
          clientOrderId: u64(c.clientOrderId),
          origClientOrderId: u64(c.origClientOrderId),
          instrumentId: c.instrumentId,
          price: i64(c.price, 'price'),
          quantity: i64(c.quantity, 'quantity'),
        },
      }).finish();
    }
  }
}

// ---- gateway → client ---------------------------------------------------------

export interface Welcome {
  kind: 'welcome';
  appSeq: bigint;
  resendFrom: bigint;
}
export interface Ack {
  kind: 'ack';
  appSeq: bigint;
  clientOrderId: bigint;
  orderId: bigint;
  possibleResend: boolean;
}
export interface Reject {
  kind: 'reject';
  appSeq: bigint;
  clientOrderId: bigint;
  reason: RejectReason;
  /** 'THROTTLED', 'KILL_SWITCH', ... (the enum name without REJECT_REASON_). */
  reasonName: string;
  text: string;
  possibleResend: boolean;
}
export interface Fill {
  kind: 'fill';
  appSeq: bigint;
  clientOrderId: bigint;
  orderId: bigint;
  instrumentId: number;
  side: Side;
  price: number;
  quantity: number;
  leavesQuantity: number;
  tradeId: bigint;
  liquidity: Liquidity;
}
export interface CancelAck {
  kind: 'cancelAck';
  appSeq: bigint;
  clientOrderId: bigint;
  origClientOrderId: bigint;
  orderId: bigint;
  reason: CancelReason;
  reasonName: string;
  cancelledQuantity: number;
  possibleResend: boolean;
}
export interface ReplaceAck {
  kind: 'replaceAck';
  appSeq: bigint;
  clientOrderId: bigint;
  origClientOrderId: bigint;
  orderId: bigint;
  price: number;
  quantity: number;
  priorityKept: boolean;
  possibleResend: boolean;
}

/** A gateway message with an app_seq (every one but Welcome). */
export type SequencedMessage = Ack | Reject | Fill | CancelAck | ReplaceAck;
export type GatewayMessage = Welcome | SequencedMessage;

const enumName = (values: Record<string, unknown>, prefix: string, v: number): string => {
  const name = Object.keys(values).find((k) => values[k] === v);
  return name ? name.slice(prefix.length) : String(v);
};

export const rejectReasonName = (r: number): string => enumName(RejectReason, 'REJECT_REASON_', r);
export const cancelReasonName = (r: number): string => enumName(CancelReason, 'CANCEL_REASON_', r);
export const sideName = (s: number): string => enumName(Side, 'SIDE_', s);
export const timeInForceName = (t: number): string => enumName(TimeInForce, 'TIME_IN_FORCE_', t);

/**
 * Decodes one gateway message. Throws RangeError for bytes that are not an
 * OrderMessage or carry a client-side body (Hello, NewOrder...).
 */
export function decodeGatewayMessage(bytes: Uint8Array): GatewayMessage {
  const m = ov1.OrderMessage.decode(bytes);
  if (m.welcome) return { kind: 'welcome', appSeq: toU64(m.welcome.appSeq), resendFrom: toU64(m.welcome.resendFrom) };
  if (m.ack) {
    const a = m.ack;
    return { kind: 'ack', appSeq: toU64(a.appSeq), clientOrderId: toU64(a.clientOrderId), orderId: toU64(a.orderId), possibleResend: a.possibleResend === true };
  }
  if (m.reject) {
    const r = m.reject;
    const reason = (r.reason ?? 0) as RejectReason;
    return {
      kind: 'reject',
      appSeq: toU64(r.appSeq),
      clientOrderId: toU64(r.clientOrderId),
      reason,
      reasonName: rejectReasonName(reason),
      text: r.text ?? '',
      possibleResend: r.possibleResend === true,
    };
  }
  if (m.fill) {
    const f = m.fill;
    return {
      kind: 'fill',
      appSeq: toU64(f.appSeq),
      clientOrderId: toU64(f.clientOrderId),
      orderId: toU64(f.orderId),
      instrumentId: f.instrumentId ?? 0,
      side: (f.side ?? 0) as Side,
      price: toI64(f.price),
      quantity: toI64(f.quantity),
      leavesQuantity: toI64(f.leavesQuantity),
      tradeId: toU64(f.tradeId),
      liquidity: (f.liquidity ?? 0) as Liquidity,
    };
  }
  if (m.cancelAck) {
    const c = m.cancelAck;
    const reason = (c.reason ?? 0) as CancelReason;
    return {
      kind: 'cancelAck',
      appSeq: toU64(c.appSeq),
      clientOrderId: toU64(c.clientOrderId),
      origClientOrderId: toU64(c.origClientOrderId),
      orderId: toU64(c.orderId),
      reason,
      reasonName: cancelReasonName(reason),
      cancelledQuantity: toI64(c.cancelledQuantity),
      possibleResend: c.possibleResend === true,
    };
  }
  if (m.replaceAck) {
    const r = m.replaceAck;
    return {
      kind: 'replaceAck',
      appSeq: toU64(r.appSeq),
      clientOrderId: toU64(r.clientOrderId),
      origClientOrderId: toU64(r.origClientOrderId),
      orderId: toU64(r.orderId),
      price: toI64(r.price),
      quantity: toI64(r.quantity),
      priorityKept: r.priorityKept === true,
      possibleResend: r.possibleResend === true,
    };
  }
  throw new RangeError('not a gateway message: the OrderMessage carries no gateway body (welcome, ack, reject, fill, cancel_ack, replace_ack)');
}
