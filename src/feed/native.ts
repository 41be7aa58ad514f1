// The feed bindings of the addon (native/src/addon/feed_wrap.h) and how a
// device given by the caller reaches them.
import { loadAddon, type NativeEngine } from '../native/addon.js';
import type {
  FeedChannelCounterValues,
  FeedPublisherCounterValues,
  FeedRecoveryClientCounterValues,
  FeedRecoveryReportCounterValues,
  FeedRecoverySessionCounterValues,
  FeedSubscriberChannelCounterValues,
  FeedSubscriberCounterValues,
} from '../declared/feed-counters.js';
import type { Engine } from '../native/engine.js';
import type { SessionDevice } from '../common/session-provider.js';
import { Device, kNativeDevice, openNativeDevice, type OpenDeviceOptions, type OpenIbvDeviceOptions, type QpAttr, type RcPathInfo } from '../native/verbs.js';

/** The publisher's declared counters (native/src/feed/feed_counters.def), then its channels'. */
export interface NativePublisherStats extends FeedPublisherCounterValues {
  publishLatencyCount: number;
  channels: Array<FeedChannelCounterValues & { readonly id: number }>;
}

/** A subscriber channel's declared counters (native/src/feed/feed_counters.def) and its frame counters. */
export interface NativeSubscriberChannelStats extends FeedSubscriberChannelCounterValues {
  readonly id: number;
  latencyCount: number;
  rejectedFrames: number;
  frameCounters: Record<string, number>;
}

export interface NativeSubscriberStats extends FeedSubscriberCounterValues {
  /** Present with a recovery connection. */
  recovery?: FeedRecoveryClientCounterValues;
  channels: NativeSubscriberChannelStats[];
}

/** One side of an RC connection, as the control-plane handshake carries it (docs/protocol.md §3.1). */
export interface RcEndpointInfo {
  qpn: number;
  psn: number;
  gid: string;
  mtu: number;
  /** The alternate path's GID: given by a side with a second address; answered when the path is armed (else null). */
  alternateGid?: string | null;
}

/** Per-session limits of the gateway's recovery service. */
export interface RecoveryLimits {
  /** Messages served per RetransmitRequest (default 4096). */
  maxMessages?: number;
  /** Token bucket in messages (defaults 1,000,000/s, burst 65,536). */
  messagesPerSecond?: number;
  burstMessages?: number;
  /** Largest reply (one RC SEND; default 65536). */
  replyBytes?: number;
  sendSlots?: number;
  recvSlots?: number;
  /** A session that reported and then stays silent this long is ended (QP to ERR; default 10000, 0 = never). */
  silenceTimeoutMs?: number;
}

/** A recovery session the gateway serves: its declared counters (feed_counters.def) and what the addon adds. */
export interface NativeRecoverySession extends RcPathInfo, FeedRecoverySessionCounterValues {
  session: number;
  publisher: number;
  /** The gateway's device the session runs on: 'alternate' after a subscriber failed over (docs/protocol.md §1.11). */
  device: SessionDevice;
  qpn: number;
  state: string;
  channels: number[];
  /** Replies THROTTLED and RANGE_GONE (byStatus has every status). */
  throttled: number;
  rangeGone: number;
  /** Replies by status name (ok, range_gone, throttled, not_entitled, unknown_session, invalid_range, malformed, unknown_channel). */
  byStatus: Record<string, number>;
  /** The subscriber's last SubscriberReport: its lag (queued), drops and losses. */
  subscriber: FeedRecoveryReportCounterValues;
}

export interface NativeFeedPublisher {
  readonly id: number;
  readonly session: number;
  stats(): NativePublisherStats;
  latencyCounts(): Float64Array;
  setLineMask(mask: number): void;
  /** The publisher's UD QP (query() attributes, qpNum, soft transport counters); throws once closed. */
  qp(): PublisherQpReport;
  /** Line B's UD QP on the alternate device; null without one. */
  qp(device: SessionDevice): PublisherQpReport | null;
  /** device 'alternate': on the publisher's alternate device (throws without one). */
  openRecoverySession(options: {
    session: number;
    channels: number[];
    remote: RcEndpointInfo;
    limits?: RecoveryLimits;
    device?: SessionDevice;
  }): RcEndpointInfo & { regions: never[] };
  closeRecoverySession(session: number): boolean;
  recoverySessions(): NativeRecoverySession[];
  close(): void;
}

export type PublisherQpReport = QpAttr & { readonly counters: Readonly<Record<string, number>> };

export interface NativeFeedSubscriber {
  readonly id: number;
  /** Created with an alternate device (line B on it; renewRecovery('alternate') possible). */
  readonly hasAlternateDevice: boolean;
  stats(): NativeSubscriberStats;
  latencyCounts(channelIndex?: number): Float64Array;
  /** Our side of the recovery connection (null without config.recovery). */
  recoveryLocal(): RcEndpointInfo | null;
  connectRecovery(gateway: RcEndpointInfo): void;
  /**
   * A new recovery QP in place of the old one (after the gateway restarted, or the QP failed): our new side, to
   * connect with connectRecovery. On the alternate device with 'alternate' (throws without one).
   */
  renewRecovery(device?: SessionDevice): RcEndpointInfo;
  /** The path the recovery connection runs on; null without one or before it is connected. */
  recoveryPath(): RcPathInfo | null;
  /** The application's queue, reported to the gateway over the recovery connection. */
  reportConsumer(load: { queued: number; dropped: number; conflated: number }): void;
  close(): void;
}

/** The addon's Device object (verbs.openDevice's result, before verbs.ts wraps it). */
export type NativeDevice = object;

interface NativeFeed {
  /** alternateDevice: line B leaves from it, and recovery sessions may open on it. */
  createPublisher(engine: NativeEngine, device: NativeDevice, config: Record<string, unknown>, alternateDevice?: NativeDevice): NativeFeedPublisher;
  /** alternateDevice: line B is received on it, and the recovery connection may move to it. */
  createSubscriber(engine: NativeEngine, device: NativeDevice, config: Record<string, unknown>, alternateDevice?: NativeDevice): NativeFeedSubscriber;
}

interface NativeVerbsForFeed {
  openDevice(engine: NativeEngine, options: Record<string, unknown>): NativeDevice;
  Device: abstract new (...args: never[]) => object;
}

export function nativeFeed(): NativeFeed {
  const addon = loadAddon() as unknown as { feed?: NativeFeed };
  if (addon.feed === undefined) throw new Error('qpgate: this build of the native addon has no feed bindings (rebuild: npm run build:native)');
  return addon.feed;
}

function nativeVerbs(): NativeVerbsForFeed {
  return (loadAddon() as unknown as { verbs: NativeVerbsForFeed }).verbs;
}

// Devices opened through openFeedDevice: the verbs.ts Device keeps its native
// object private, so the feed remembers it here.
const natives = new WeakMap<object, NativeDevice>();

/**
 * Opens a device (soft or ibv) on `engine` (as verbs.openDevice does) whose native
 * handle the feed can use. Returns the usual verbs Device.
 */
export function openFeedDevice(engine: Engine, options: OpenDeviceOptions | OpenIbvDeviceOptions): Device {
  const native = openNativeDevice(engine.native, options);
  const device = new Device(native as ConstructorParameters<typeof Device>[0]);
  natives.set(device, native);
  return device;
}

/** A device the feed can use: a Device from openFeedDevice, one that exposes `native`, or the addon's own object. */
export type FeedDevice = Device | NativeDevice;

export function nativeDeviceOf(device: FeedDevice): NativeDevice {
  const remembered = natives.get(device) ?? (device instanceof Device ? (device[kNativeDevice] as NativeDevice) : undefined);
  if (remembered !== undefined) return remembered;
  const exposed = (device as { native?: unknown }).native;
  if (typeof exposed === 'object' && exposed !== null) return exposed;
  if (device instanceof nativeVerbs().Device) return device;
  throw new TypeError(
    'qpgate feed: the device must come from openFeedDevice(engine, {address}) (or be a verbs Device that exposes its native handle)',
  );
}
