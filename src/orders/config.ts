// The order-entry configuration (the `orders` section the gateway embeds):
// one TypeBox schema for validation and the static type, with defaults that
// make the embedded default trade out of the box: eight instruments priced
// like the synthetic feed's (price exponent -2, tick 1) on ids of their own
// (1001..1008, so the order books' trades and book levels never mix with the
// synthetic source's quotes of instruments 1..100), on the feed's channels
// (the same instrument → channel rule), four accounts, and a journal under
// state.dir that survives a process crash (fsync none: written before every
// answer, never fdatasync'ed).
//
// resolveOrderService() turns it into the native service's config
// (addon.orders.createService), validateOrdersConfig() checks what the schema
// cannot (bands, duplicates, u64 ranges, channels that exist).
import { isAbsolute, join } from 'node:path';
import { Type, type Static } from '@sinclair/typebox';
import { instrumentChannel, type FeedsConfig } from '../feed/config.js';
import { ORDERS_LIMITS } from '../declared/orders-config.js';

const strict = { additionalProperties: false } as const;

/** An unsigned 64-bit integer: a YAML integer, or a decimal string when it is beyond 2^53. */
export const U64 = Type.Union([Type.Integer({ minimum: 0 }), Type.String({ pattern: '^(0|[1-9][0-9]{0,19})$' })], {
  description: 'an unsigned 64-bit integer (a number, or a decimal string beyond 2^53)',
});
export const U64_MAX = (1n << 64n) - 1n;

export const SelfMatchPolicy = Type.Union([Type.Literal('cancel-newest'), Type.Literal('cancel-oldest'), Type.Literal('cancel-both')], {
  description: "one of 'cancel-newest' (the aggressor's remainder), 'cancel-oldest' (the resting order), 'cancel-both'",
});

export const CollarConfig = Type.Object(
  {
    mode: Type.Union([Type.Literal('none'), Type.Literal('ticks'), Type.Literal('bps')], {
      default: 'bps',
      description: "one of 'none', 'ticks', 'bps'",
    }),
    width: Type.Integer({ minimum: 0, maximum: 1_000_000, default: 500, description: 'ticks, or basis points of the reference price' }),
    referencePrice: Type.Integer({
      minimum: 0,
      default: 10_000,
      description: 'the reference until the first trade (then the last trade price); 0 = no collar until a trade',
    }),
  },
  { ...strict, default: {} },
);

export const OrderInstrumentConfig = Type.Object(
  {
    id: Type.Integer({ minimum: 1, maximum: 0xffffffff }),
    symbol: Type.Optional(Type.String({ minLength: 1, maxLength: 32 })),
    tickSize: Type.Integer({ minimum: 1, default: 1, description: 'price mantissas are multiples of it' }),
    minPrice: Type.Integer({ minimum: 1, default: 1, description: 'lowest price the book holds (a tick multiple)' }),
    maxPrice: Type.Integer({ minimum: 1, default: 20_000, description: 'highest price the book holds (a tick multiple)' }),
    maxQuantity: Type.Integer({ minimum: 1, default: 1_000_000 }),
    selfMatch: Type.Optional(SelfMatchPolicy),
    collar: CollarConfig,
    bookDepth: Type.Integer({ minimum: 1, maximum: 255, default: 10, description: 'levels per side published on the feed' }),
    channel: Type.Optional(
      Type.Integer({ minimum: 0, maximum: 65535, description: "the feed channel of its trades and book levels; default: the feed's instrument map" }),
    ),
  },
  strict,
);

export const AccountConfig = Type.Object(
  {
    account: U64,
    creditLimit: Type.Union([Type.Integer({ minimum: 0 }), Type.String({ pattern: '^(0|[1-9][0-9]{0,19})$' })], {
      description: 'the initial credit limit: max open notional (price mantissa × lots), a u64',
    }),
  },
  strict,
);

const defaultInstruments = Array.from({ length: 8 }, (_, i) => ({ id: 1001 + i }));
const defaultAccounts = [1, 2, 3, 4].map((account) => ({ account, creditLimit: 10_000_000_000 }));

export const OrdersConfig = Type.Object(
  {
    enabled: Type.Boolean({ default: true }),
    journal: Type.Object(
      {
        file: Type.String({ minLength: 1, default: 'orders.journal', description: 'the journal file; a relative path is under state.dir' }),
        fsync: Type.Union([Type.Literal('none'), Type.Literal('interval'), Type.Literal('every')], {
          default: 'none',
          description:
            "'none' (written before each answer, never fdatasync'ed: survives a process crash), 'interval' (group commit: " +
            "fdatasync before answers go out, at most intervalUs after the first unsynced record) or 'every' (fdatasync per record)",
        }),
        intervalUs: Type.Integer({
          minimum: 0,
          maximum: 10_000_000,
          default: 0,
          description: 'fsync interval: how long a record may wait for its fdatasync (0 = once per engine duty cycle)',
        }),
        groupMaxRecords: Type.Integer({ minimum: 1, maximum: 1 << 20, default: 64, description: 'fsync interval: sync at the latest after this many records' }),
      },
      { ...strict, default: {} },
    ),
    instruments: Type.Array(OrderInstrumentConfig, { minItems: 1, default: defaultInstruments }),
    accounts: Type.Array(AccountConfig, { default: defaultAccounts }),
    sessions: Type.Object(
      {
        throttle: Type.Object(
          {
            ordersPerSecond: Type.Integer({ minimum: 0, maximum: 10_000_000, default: 10_000, description: 'per session; 0 = unlimited' }),
            burst: Type.Integer({ minimum: 1, maximum: 10_000_000, default: 1000 }),
          },
          { ...strict, default: {} },
        ),
        cancelOnDisconnect: Type.Boolean({ default: true, description: "a trading session's QP leaving RTS cancels its resting orders" }),
        recvDepth: Type.Integer({ ...ORDERS_LIMITS.recvDepth }),
        sendDepth: Type.Integer({ ...ORDERS_LIMITS.sendDepth }),
        maxMessageBytes: Type.Integer({ ...ORDERS_LIMITS.maxMessageBytes }),
        backPressureMessages: Type.Integer({ ...ORDERS_LIMITS.backPressureMessages }),
        resendCapacity: Type.Integer({ ...ORDERS_LIMITS.resendCapacity }),
        maxQueuedMessages: Type.Integer({ ...ORDERS_LIMITS.maxQueuedMessages }),
        stallTimeoutMs: Type.Integer({ ...ORDERS_LIMITS.stallTimeoutMs }),
        ackTimeout: Type.Integer({ ...ORDERS_LIMITS.ackTimeout }),
        retryCnt: Type.Integer({ ...ORDERS_LIMITS.retryCnt }),
        maxClientOrderIds: Type.Integer({ ...ORDERS_LIMITS.maxClientOrderIds }),
      },
      { ...strict, default: {} },
    ),
    orderCapacity: Type.Integer({ ...ORDERS_LIMITS.orderCapacity }),
    clientOrderIdCapacity: Type.Integer({ ...ORDERS_LIMITS.clientOrderIdCapacity }),
    publishToFeed: Type.Boolean({ default: true, description: 'publish trades and book levels on the feed when feeds run' }),
    handlers: Type.Array(
      Type.Object(
        {
          module: Type.String({
            minLength: 1,
            description: "'drop-copy' (every order event as a JSON line), or the path of an ES module exporting createOrderHandler(context)",
          }),
          options: Type.Record(Type.String(), Type.Unknown(), { default: {}, description: "handed to the handler as context.options" }),
        },
        strict,
      ),
      { default: [], description: 'TS order handlers that see every order event after the built-in book (src/orders/handler.ts)' },
    ),
  },
  { ...strict, default: {} },
);

export type OrdersConfig = Static<typeof OrdersConfig>;
/** One entry of `orders.handlers`. */
export type OrderHandlerSpec = OrdersConfig['handlers'][number];
export type OrderInstrumentConfig = Static<typeof OrderInstrumentConfig>;

/** A u64 config value (number or decimal string) as a bigint. */
export function u64(v: number | string): bigint {
  return BigInt(v);
}

// Levels are 24 bytes per tick per side (native/src/orders/order_book.h): keep a band below ~48 MB.
export const MAX_BAND_TICKS = 1_000_000;

/**
 * What the schema cannot check. Each problem names the key, what was
 * expected and the value given (`origin(key)` adds where the key came from).
 */
export function validateOrdersConfig(orders: OrdersConfig, feeds: FeedsConfig, origin: (key: string) => string = () => ''): string[] {
  const problems: string[] = [];
  const ids = new Map<number, number>();
  orders.instruments.forEach((ins, i) => {
    const key = `orders.instruments.${i}`;
    const o = origin(key);
    const first = ids.get(ins.id);
    if (first !== undefined) problems.push(`${key}.id${o}: expected an id not used by orders.instruments.${first}, got ${ins.id}`);
    ids.set(ins.id, i);
    if (ins.minPrice % ins.tickSize !== 0) problems.push(`${key}.minPrice${o}: expected a multiple of tickSize ${ins.tickSize}, got ${ins.minPrice}`);
    if (ins.maxPrice % ins.tickSize !== 0) problems.push(`${key}.maxPrice${o}: expected a multiple of tickSize ${ins.tickSize}, got ${ins.maxPrice}`);
    if (ins.maxPrice <= ins.minPrice) problems.push(`${key}.maxPrice${o}: expected more than minPrice ${ins.minPrice}, got ${ins.maxPrice}`);
    const ticks = Math.floor((ins.maxPrice - ins.minPrice) / ins.tickSize) + 1;
    if (ticks > MAX_BAND_TICKS) {
      problems.push(`${key}.maxPrice${o}: expected a band of at most ${MAX_BAND_TICKS} ticks above minPrice, got ${ticks} ticks (${ins.maxPrice})`);
    }
    const ref = ins.collar.referencePrice;
    if (ins.collar.mode !== 'none' && ref !== 0 && (ref < ins.minPrice || ref > ins.maxPrice || ref % ins.tickSize !== 0)) {
      problems.push(
        `${key}.collar.referencePrice${o}: expected 0 or a tick multiple within [${ins.minPrice}, ${ins.maxPrice}], got ${ref}`,
      );
    }
    if (ins.channel !== undefined && feeds.enabled && !feeds.channels.some((c) => c.id === ins.channel)) {
      problems.push(`${key}.channel${o}: expected one of the feed channels (${feeds.channels.map((c) => c.id).join(', ')}), got ${ins.channel}`);
    }
  });
  const accounts = new Map<bigint, number>();
  orders.accounts.forEach((a, i) => {
    const key = `orders.accounts.${i}`;
    const o = origin(key);
    for (const field of ['account', 'creditLimit'] as const) {
      if (u64(a[field]) > U64_MAX) problems.push(`${key}.${field}${o}: expected at most 2^64-1, got ${a[field]}`);
    }
    const id = u64(a.account);
    if (id === 0n) problems.push(`${key}.account${o}: expected a non-zero account, got 0`);
    const first = accounts.get(id);
    if (first !== undefined) problems.push(`${key}.account${o}: expected an account not configured by orders.accounts.${first}, got ${a.account}`);
    accounts.set(id, i);
  });
  const sessions = orders.sessions;
  if (sessions.maxQueuedMessages < sessions.backPressureMessages || sessions.maxQueuedMessages > sessions.resendCapacity) {
    // Below backPressureMessages a session would be ended before it is slowed; above resendCapacity its queue could
    // outgrow what a reconnect can have resent.
    problems.push(
      `orders.sessions.maxQueuedMessages${origin('orders.sessions.maxQueuedMessages')}: expected between backPressureMessages ` +
        `${sessions.backPressureMessages} and resendCapacity ${sessions.resendCapacity}, got ${sessions.maxQueuedMessages}`,
    );
  }
  if (sessions.maxClientOrderIds > orders.clientOrderIdCapacity) {
    problems.push(
      `orders.sessions.maxClientOrderIds${origin('orders.sessions.maxClientOrderIds')}: expected at most ` +
        `orders.clientOrderIdCapacity ${orders.clientOrderIdCapacity}, got ${sessions.maxClientOrderIds}`,
    );
  }
  return problems;
}

// ---- the native service's config (addon.orders.createService) -----------------

export type NativeSyncPolicy = 'every' | 'group' | 'none';

export interface NativeOrderServiceConfig {
  journal: { path: string; sync: NativeSyncPolicy; groupMaxRecords: number; groupMaxDelayUs: number };
  instruments: Array<{
    id: number;
    tickSize: number;
    minPrice: number;
    maxPrice: number;
    maxQuantity: number;
    selfMatch: Static<typeof SelfMatchPolicy>;
    collar: { mode: 'none' | 'ticks' | 'bps'; width: number; referencePrice: number };
    bookDepth: number;
    channel?: number;
  }>;
  accounts: Array<{ account: bigint; creditLimit: bigint }>;
  orderCapacity: number;
  clientOrderIdCapacity: number;
  maxClientOrderIds: number;
  recvDepth: number;
  sendDepth: number;
  maxMessageBytes: number;
  backPressureMessages: number;
  resendCapacity: number;
  maxQueuedMessages: number;
  stallTimeoutMs: number;
  ackTimeout: number;
  retryCnt: number;
  feedPublisherId?: number;
}

/** The fsync policy of the config, as the native journal's sync policy. */
export const SYNC_POLICY: Readonly<Record<OrdersConfig['journal']['fsync'], NativeSyncPolicy>> = {
  none: 'none',
  interval: 'group',
  every: 'every',
};

/** The journal's path: `journal.file`, under `stateDir` unless absolute. */
export function journalPath(orders: OrdersConfig, stateDir: string): string {
  return isAbsolute(orders.journal.file) ? orders.journal.file : join(stateDir, orders.journal.file);
}

/**
 * The native service's config. `feeds` gives each instrument its channel
 * (unless set) by the feed's own instrument → channel rule; `feedPublisherId`
 * makes the service publish trades and book levels on that publisher.
 */
export function nativeServiceConfig(
  orders: OrdersConfig,
  stateDir: string,
  feeds: FeedsConfig,
  feedPublisherId?: number,
): NativeOrderServiceConfig {
  const channelOf = instrumentChannel(feeds);
  return {
    journal: {
      path: journalPath(orders, stateDir),
      sync: SYNC_POLICY[orders.journal.fsync],
      groupMaxRecords: orders.journal.groupMaxRecords,
      groupMaxDelayUs: orders.journal.intervalUs,
    },
    instruments: orders.instruments.map((ins) => ({
      id: ins.id,
      tickSize: ins.tickSize,
      minPrice: ins.minPrice,
      maxPrice: ins.maxPrice,
      maxQuantity: ins.maxQuantity,
      selfMatch: ins.selfMatch ?? 'cancel-newest',
      collar: { ...ins.collar },
      bookDepth: ins.bookDepth,
      channel: ins.channel ?? channelOf(ins.id),
    })),
    accounts: orders.accounts.map((a) => ({ account: u64(a.account), creditLimit: u64(a.creditLimit) })),
    orderCapacity: orders.orderCapacity,
    clientOrderIdCapacity: orders.clientOrderIdCapacity,
    maxClientOrderIds: orders.sessions.maxClientOrderIds,
    recvDepth: orders.sessions.recvDepth,
    sendDepth: orders.sessions.sendDepth,
    maxMessageBytes: orders.sessions.maxMessageBytes,
    backPressureMessages: orders.sessions.backPressureMessages,
    resendCapacity: orders.sessions.resendCapacity,
    maxQueuedMessages: orders.sessions.maxQueuedMessages,
    stallTimeoutMs: orders.sessions.stallTimeoutMs,
    ackTimeout: orders.sessions.ackTimeout,
    retryCnt: orders.sessions.retryCnt,
    ...(feedPublisherId === undefined ? {} : { feedPublisherId }),
  };
}
