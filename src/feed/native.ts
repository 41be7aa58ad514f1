// The feed bindings of the addon (native/src/addon/feed_wrap.h) and how a
// device given by the caller reaches them.
import { loadAddon, type NativeEngine } from '../native/addon.js';
import type { Engine } from '../native/engine.js';
import { Device, kNativeDevice, type OpenDeviceOptions, type QpAttr } from '../native/verbs.js';

export interface NativePublisherStats {
  session: number;
  records: number;
  rejectedRecords: number;
  retries: number;
  postErrors: number;
  sendErrors: number;
  suppressed: number;
  publishLatencyCount: number;
  channels: Array<{
    id: number;
    frames: number;
    messages: number;
    bytes: number;
    heartbeats: number;
    nextSeq: number;
    ringFrames: number;
    snapshotSlots: number;
  }>;
}

export interface NativeSubscriberChannelStats {
  id: number;
  frames: number;
  messages: number;
  duplicates: number;
  gaps: number;
  unrecoverable: number;
  recovered: number;
  sessionChanges: number;
  session: number;
  expected: number;
  heartbeats: number;
  staleSession: number;
  lineAFrames: number;
  lineBFrames: number;
  latencyCount: number;
  rejectedFrames: number;
  frameCounters: Record<string, number>;
}

export interface NativeSubscriberStats {
  received: number;
  recvErrors: number;
  unknownGroup: number;
  snapshotFrames: number;
  ringFullDrops: number;
  channels: NativeSubscriberChannelStats[];
}

export interface NativeFeedPublisher {
  readonly id: number;
  readonly session: number;
  stats(): NativePublisherStats;
  latencyCounts(): Float64Array;
  setLineMask(mask: number): void;
  /** The publisher's UD QP (query() attributes, qpNum, soft transport counters); throws once closed. */
  qp(): PublisherQpReport;
  close(): void;
}

export type PublisherQpReport = QpAttr & { readonly counters: Readonly<Record<string, number>> };

export interface NativeFeedSubscriber {
  readonly id: number;
  stats(): NativeSubscriberStats;
  latencyCounts(channelIndex?: number): Float64Array;
  close(): void;
}

/** The addon's SoftDevice object (verbs.openDevice's result, before verbs.ts wraps it). */
export type NativeDevice = object;

interface NativeFeed {
  createPublisher(engine: NativeEngine, device: NativeDevice, config: Record<string, unknown>): NativeFeedPublisher;
  createSubscriber(engine: NativeEngine, device: NativeDevice, config: Record<string, unknown>): NativeFeedSubscriber;
}

interface NativeVerbsForFeed {
  openDevice(engine: NativeEngine, options: Record<string, unknown>): NativeDevice;
  SoftDevice: abstract new (...args: never[]) => object;
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
 * Opens a soft device on `engine` (as verbs.openDevice does) whose native
 * handle the feed can use. Returns the usual verbs Device.
 */
export function openFeedDevice(engine: Engine, options: OpenDeviceOptions): Device {
  const native = nativeVerbs().openDevice(engine.native, { ...options });
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
  if (device instanceof nativeVerbs().SoftDevice) return device;
  throw new TypeError(
    'qpgate feed: the device must come from openFeedDevice(engine, {address}) (or be a verbs Device that exposes its native handle)',
  );
}
