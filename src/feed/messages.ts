// Market-data message bodies: protobuf through the statically generated code
// (src/generated/qpgate.js, from proto/ by `npm run build:proto`; no
// reflection), paired with the fixed message-header fields the native core
// keys on. The header's key and action are derived here from the body, so the
// two never disagree.
import protobuf from 'protobufjs/minimal.js';

import { qpgate } from '../generated/qpgate.js';
import { BookAction, bookKey, type MessageInput, type MessageView } from './frame.js';

export const md = qpgate.marketdata.v1;
export const MessageType = qpgate.marketdata.v1.MessageType;
export type MessageType = qpgate.marketdata.v1.MessageType;

export type MarketDataMessage =
  | { type: typeof MessageType.MESSAGE_TYPE_HEARTBEAT; value: qpgate.marketdata.v1.IHeartbeat }
  | { type: typeof MessageType.MESSAGE_TYPE_INSTRUMENT_DEFINITION; value: qpgate.marketdata.v1.IInstrumentDefinition }
  | { type: typeof MessageType.MESSAGE_TYPE_QUOTE; value: qpgate.marketdata.v1.IQuote }
  | { type: typeof MessageType.MESSAGE_TYPE_TRADE; value: qpgate.marketdata.v1.ITrade }
  | { type: typeof MessageType.MESSAGE_TYPE_BOOK_LEVEL_UPDATE; value: qpgate.marketdata.v1.IBookLevelUpdate }
  | { type: typeof MessageType.MESSAGE_TYPE_TRADING_STATUS; value: qpgate.marketdata.v1.ITradingStatus }
  | { type: typeof MessageType.MESSAGE_TYPE_SNAPSHOT_BEGIN; value: qpgate.marketdata.v1.ISnapshotBegin }
  | { type: typeof MessageType.MESSAGE_TYPE_SNAPSHOT_END; value: qpgate.marketdata.v1.ISnapshotEnd };

/** Encodes a message body and the header fields that go with it. */
export function encodeMessage(m: MarketDataMessage): MessageInput {
  switch (m.type) {
    case MessageType.MESSAGE_TYPE_HEARTBEAT:
      return { type: m.type, instrumentId: 0, body: md.Heartbeat.encode(m.value).finish() };
    case MessageType.MESSAGE_TYPE_INSTRUMENT_DEFINITION:
      return { type: m.type, instrumentId: m.value.instrumentId ?? 0, body: md.InstrumentDefinition.encode(m.value).finish() };
    case MessageType.MESSAGE_TYPE_QUOTE:
      return { type: m.type, instrumentId: m.value.instrumentId ?? 0, body: md.Quote.encode(m.value).finish() };
    case MessageType.MESSAGE_TYPE_TRADE:
      return { type: m.type, instrumentId: m.value.instrumentId ?? 0, body: md.Trade.encode(m.value).finish() };
    case MessageType.MESSAGE_TYPE_BOOK_LEVEL_UPDATE: {
      const side = m.value.side ?? md.Side.SIDE_UNSPECIFIED;
      if (side !== md.Side.SIDE_BID && side !== md.Side.SIDE_ASK) {
        throw new RangeError(`a BookLevelUpdate needs side BID or ASK, got ${side}`);
      }
      const action = m.value.action ?? 0;
      if (action < BookAction.ADD || action > BookAction.DELETE) {
        throw new RangeError(`a BookLevelUpdate needs action ADD, MODIFY or DELETE, got ${action}`);
      }
      return {
        type: m.type,
        instrumentId: m.value.instrumentId ?? 0,
        key: bookKey(side === md.Side.SIDE_ASK, m.value.level ?? 0),
        action,
        body: md.BookLevelUpdate.encode(m.value).finish(),
      };
    }
    case MessageType.MESSAGE_TYPE_TRADING_STATUS:
      return { type: m.type, instrumentId: m.value.instrumentId ?? 0, body: md.TradingStatus.encode(m.value).finish() };
    case MessageType.MESSAGE_TYPE_SNAPSHOT_BEGIN:
      return { type: m.type, instrumentId: 0, body: md.SnapshotBegin.encode(m.value).finish() };
    case MessageType.MESSAGE_TYPE_SNAPSHOT_END:
      return { type: m.type, instrumentId: 0, body: md.SnapshotEnd.encode(m.value).finish() };
  }
}

export class BodyDecodeError extends Error {
  constructor(readonly type: number, cause: unknown) {
    super(`cannot decode the body of a message of type ${type}: ${cause instanceof Error ? cause.message : String(cause)}`);
    this.name = 'BodyDecodeError';
  }
}

/**
 * Decodes a message's protobuf body on demand. Unknown types give undefined
 * (newer publishers may send types this build does not know); a body that is
 * not valid protobuf throws BodyDecodeError.
 */
export function decodeMessage(m: Pick<MessageView, 'type' | 'body'>): MarketDataMessage | undefined {
  try {
    switch (m.type) {
      case MessageType.MESSAGE_TYPE_HEARTBEAT:
        return { type: m.type, value: md.Heartbeat.decode(m.body) };
      case MessageType.MESSAGE_TYPE_INSTRUMENT_DEFINITION:
        return { type: m.type, value: md.InstrumentDefinition.decode(m.body) };
      case MessageType.MESSAGE_TYPE_QUOTE:
        return { type: m.type, value: md.Quote.decode(m.body) };
      case MessageType.MESSAGE_TYPE_TRADE:
        return { type: m.type, value: md.Trade.decode(m.body) };
      case MessageType.MESSAGE_TYPE_BOOK_LEVEL_UPDATE:
        return { type: m.type, value: md.BookLevelUpdate.decode(m.body) };
      case MessageType.MESSAGE_TYPE_TRADING_STATUS:
        return { type: m.type, value: md.TradingStatus.decode(m.body) };
      case MessageType.MESSAGE_TYPE_SNAPSHOT_BEGIN:
        return { type: m.type, value: md.SnapshotBegin.decode(m.body) };
      case MessageType.MESSAGE_TYPE_SNAPSHOT_END:
        return { type: m.type, value: md.SnapshotEnd.decode(m.body) };
      default:
        return undefined;
    }
  } catch (e) {
    throw new BodyDecodeError(m.type, e);
  }
}

/** An int64 field as decoded (number or Long) as an exact bigint. */
export function toBigInt(v: number | { toString(): string } | null | undefined): bigint {
  if (v === null || v === undefined) return 0n;
  return typeof v === 'number' ? BigInt(v) : BigInt(v.toString());
}

/** What the generated code takes for an int64/uint64 field: a number (exact up to 2^53) or a Long. */
export type Int64 = NonNullable<qpgate.marketdata.v1.IQuote['bidPrice']>;

/** An exact 64-bit value for an int64 (unsigned = false) or uint64 field, from a bigint or decimal string. */
export function int64(v: bigint | string, unsigned = false): Int64 {
  const Long = protobuf.util.Long as unknown as { fromString(s: string, unsigned?: boolean): Int64 };
  return Long.fromString(v.toString(), unsigned);
}
