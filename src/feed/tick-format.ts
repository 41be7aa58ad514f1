// What `qpgate subscribe` prints for each message. A price on the wire is an
// int64 mantissa with the instrument's price_exponent (proto/qpgate/
// marketdata/v1/marketdata.proto), learnt from the InstrumentDefinition that
// the snapshot (--recovery) or the live feed carries. Text shows prices as
// exact decimals ("101.25"); until the definition is seen, the mantissa with
// "e?" ("10125e?"). --json keeps exact integers: mantissas as decimal strings
// with the exponent beside them, never a float.
import { jsonLine } from '../common/json.js';
import { MessageType, md, toBigInt, type MarketDataMessage } from './messages.js';
import type { FeedMessage } from './subscriber.js';

type Int64Field = number | { toString(): string } | null | undefined;

const typeNames = new Map<number, string>(
  Object.entries(MessageType)
    .filter(([, v]) => typeof v === 'number')
    .map(([k, v]) => [v as number, k.replace(/^MESSAGE_TYPE_/, '')]),
);
const sideNames: Record<number, string> = { [md.Side.SIDE_BID]: 'BID', [md.Side.SIDE_ASK]: 'ASK' };
const actionNames: Record<number, string> = { 1: 'ADD', 2: 'MODIFY', 3: 'DELETE' };

/** mantissa × 10^exponent as an exact decimal: (10125, -2) → "101.25", (-5, -3) → "-0.005", (7, 2) → "700". */
export function formatPrice(mantissa: bigint, exponent: number): string {
  if (exponent >= 0) return (mantissa * 10n ** BigInt(exponent)).toString();
  const sign = mantissa < 0n ? '-' : '';
  const digits = (mantissa < 0n ? -mantissa : mantissa).toString().padStart(1 - exponent, '0');
  return `${sign}${digits.slice(0, exponent)}.${digits.slice(exponent)}`;
}

/** The price exponent of each instrument whose definition went by. */
export class PriceExponents {
  readonly #byInstrument = new Map<number, number>();

  /** Learns from a decoded InstrumentDefinition; other messages are ignored. */
  learn(d: MarketDataMessage | undefined): void {
    if (d?.type === MessageType.MESSAGE_TYPE_INSTRUMENT_DEFINITION) this.#byInstrument.set(d.value.instrumentId ?? 0, d.value.priceExponent ?? 0);
  }

  of(instrumentId: number): number | undefined {
    return this.#byInstrument.get(instrumentId);
  }

  /** A price field for people: the decimal, or the mantissa and "e?" while the exponent is unknown. */
  price(instrumentId: number, mantissa: Int64Field): string {
    const e = this.of(instrumentId);
    return e === undefined ? `${toBigInt(mantissa)}e?` : formatPrice(toBigInt(mantissa), e);
  }
}

function decoded(m: FeedMessage): { d: MarketDataMessage | undefined; error?: string } {
  try {
    return { d: m.decode() };
  } catch (err) {
    return { d: undefined, error: (err as Error).message };
  }
}

/** The body in words, prices with their exponent; JSON for the types without prices. */
function describe(d: MarketDataMessage, px: PriceExponents, instrumentId: number): string {
  const p = (mantissa: Int64Field) => px.price(instrumentId, mantissa);
  switch (d.type) {
    case MessageType.MESSAGE_TYPE_QUOTE: {
      const q = d.value;
      return `bid ${toBigInt(q.bidSize)} @ ${p(q.bidPrice)} (${q.bidOrderCount ?? 0}) ask ${toBigInt(q.askSize)} @ ${p(q.askPrice)} (${q.askOrderCount ?? 0})`;
    }
    case MessageType.MESSAGE_TYPE_TRADE: {
      const t = d.value;
      return `${toBigInt(t.size)} @ ${p(t.price)} aggressor ${sideNames[t.aggressorSide ?? 0] ?? '-'} trade ${toBigInt(t.tradeId)}`;
    }
    case MessageType.MESSAGE_TYPE_BOOK_LEVEL_UPDATE: {
      const b = d.value;
      return `${actionNames[b.action ?? 0] ?? b.action} ${sideNames[b.side ?? 0] ?? b.side} level ${b.level ?? 0}: ${toBigInt(b.size)} @ ${p(b.price)} (${b.orderCount ?? 0})`;
    }
    case MessageType.MESSAGE_TYPE_INSTRUMENT_DEFINITION: {
      const i = d.value;
      return `${i.symbol} price exponent ${i.priceExponent ?? 0}, tick ${p(i.tickSize)}, lot ${toBigInt(i.lotSize)} ${i.currency}, depth ${i.bookDepth ?? 0}`;
    }
    default:
      return jsonLine(d.value);
  }
}

/** One line per message: channel, sequence, type, instrument and the body, prices with their exponent. */
export function formatTick(m: FeedMessage, px: PriceExponents): string {
  const { d, error } = decoded(m);
  px.learn(d);
  const body = error !== undefined ? `undecodable: ${error}` : d === undefined ? `${m.body.length} bytes` : describe(d, px, m.instrumentId);
  const flags = [m.snapshot ? 'snapshot' : '', m.recovered ? 'recovered' : ''].filter(Boolean).join(',');
  return `ch ${m.channel} seq ${m.seq} ${typeNames.get(m.type) ?? `type ${m.type}`} instrument ${m.instrumentId}${flags ? ` [${flags}]` : ''} ${body}`;
}

const PRICED = new Set<number>([MessageType.MESSAGE_TYPE_QUOTE, MessageType.MESSAGE_TYPE_TRADE, MessageType.MESSAGE_TYPE_BOOK_LEVEL_UPDATE]);

/** One JSON object per message (--json): int64 fields as decimal strings, and a priced body's exponent (null until known). */
export function tickJson(m: FeedMessage, px: PriceExponents): string {
  const { d, error } = decoded(m);
  px.learn(d);
  const body = error !== undefined ? { undecodable: error } : (d?.value ?? null);
  const exponent = PRICED.has(m.type) ? { priceExponent: px.of(m.instrumentId) ?? null } : {};
  const type = typeNames.get(m.type) ?? m.type;
  return jsonLine({ channel: m.channel, seq: m.seq, type, instrumentId: m.instrumentId, snapshot: m.snapshot, recovered: m.recovered, ...exponent, body });
}
