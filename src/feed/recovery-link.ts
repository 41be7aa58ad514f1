// A subscriber's recovery session over the gateway's lives. The native
// subscriber's RC QP is connected to one gateway process's QP, so when that
// process is gone (SIGKILLed and restarted on its state dir, say) the
// session can never answer again. The link notices it either way a user
// would expect — the QP failed (RC retries exhausted: an error completion,
// stats.recovery.errors), or the feed shows a new session (a gateway draws a
// new one at every start, docs/protocol.md 2.4) — and makes a new session:
// a new QP (native renewRecovery), the handshake again, connect. Meanwhile
// what the channels need waits for the connection (bounded by bufferFrames,
// native/src/feed/subscriber_channel.h), so a late join or a gap after the
// restart is recovered. A refused or failed handshake is retried with a
// backoff until it succeeds or the subscriber closes; each failure is
// counted with its reason (stats().recovery).
//
// With an alternate device (a second link, on ibv: docs/protocol.md §1.11),
// a QP whose retries ran out (IBV_WC_RETRY_EXC_ERR: the link, or the
// gateway, is gone) is made again on the other device, towards the
// gateway's other device (the handshake's `device`): a failover, counted
// and timed. Other failures stay on the device they happened on.
import { setTimeout as sleep } from 'node:timers/promises';

import type { SessionDevice } from '../common/session-provider.js';
import type { FeedRecoveryClientCounterValues } from '../declared/feed-counters.js';
import type { NativeFeedSubscriber, RcEndpointInfo } from './native.js';
import type { RecoveryHandshake, RecoveryHandshakeAnswer } from './recovery-handshake.js';

/** Why a link renews, and how it fared. */
export interface RecoveryLinkStats {
  /** The gateway's recovery session id now (undefined while a renewal is under way). */
  session: number | undefined;
  /** Sessions made again after the first one. */
  renewals: number;
  /** The device the session is on: 'alternate' after an odd number of failovers. */
  device: SessionDevice;
  /** Renewals that moved to the other device, and how long the last took (the loss seen to connected again). */
  failovers: number;
  lastFailoverMs: number | undefined;
  /** Handshakes of a renewal that failed (each retried). */
  failedAttempts: number;
  /** What ended the last session, and the last failed attempt's error. */
  lastReason: string | undefined;
  lastError: string | undefined;
  /**
   * The native connection's counters (feed_counters.def, summed over the
   * renewals): requests, replies, errors, pathRearms (armed again after a path
   * migration, docs/protocol.md §1.10)...
   */
  connection: FeedRecoveryClientCounterValues | undefined;
}

export interface RecoveryLinkOptions {
  readonly name: string;
  readonly feed: string;
  readonly channels: readonly number[];
  readonly handshake: RecoveryHandshake;
  /** The subscriber has a device on a second link: fail over to it (and the gateway's) when the retries run out. */
  readonly alternateDevice?: boolean;
}

const RETRY_FIRST_MS = 250;
const RETRY_MAX_MS = 5000;

export class RecoveryLink {
  readonly #native: NativeFeedSubscriber;
  readonly #options: RecoveryLinkOptions;
  #answer: RecoveryHandshakeAnswer | undefined;
  #renewing: Promise<void> | undefined;
  #errorsAtConnect = 0;
  #retryExceededAtConnect = 0;
  #closed = false;
  readonly #stats: Omit<RecoveryLinkStats, 'connection'> = {
    session: undefined,
    renewals: 0,
    device: 'primary',
    failovers: 0,
    lastFailoverMs: undefined,
    failedAttempts: 0,
    lastReason: undefined,
    lastError: undefined,
  };

  constructor(native: NativeFeedSubscriber, options: RecoveryLinkOptions) {
    this.#native = native;
    this.#options = options;
  }

  /**
   * The first session: a refusal throws (subscribe() fails with it), as does
   * a gateway without the alternate device a failover would need: said at
   * once, not found out when the first link fails.
   */
  async connect(local: RcEndpointInfo): Promise<void> {
    await this.#handshake(local, 'primary');
    if (this.#options.alternateDevice === true && this.#answer !== undefined && (this.#answer.alternateDeviceGid ?? null) === null) {
      await this.close();
      throw new Error(
        `qpgate feed: recovery "${this.#options.name}": the subscriber has an alternate device but the gateway has none (backend.alternateDevice): its recovery session could not fail over`,
      );
    }
  }

  /** The gateway's recovery session id now (undefined while a renewal is under way). */
  get session(): number | undefined {
    return this.#stats.session;
  }

  stats(): RecoveryLinkStats {
    return { ...this.#stats, connection: this.#native.stats().recovery };
  }

  /**
   * Called periodically: an error completion since the connection means the
   * QP failed; retries run out with an alternate device, a failover.
   */
  check(): void {
    const c = this.#native.stats().recovery;
    if ((c?.errors ?? 0) <= this.#errorsAtConnect) return;
    if (this.#options.alternateDevice === true && (c?.retryExceeded ?? 0) > this.#retryExceededAtConnect) {
      const to = otherDevice(this.#stats.device);
      void this.renew(`the recovery connection's retries ran out (IBV_WC_RETRY_EXC_ERR): failing over to the ${to} device`, to);
      return;
    }
    void this.renew('the recovery connection failed (an error completion: the gateway is gone?)');
  }

  /** Makes a new session (once at a time; a call while one is under way joins it); on `device` (default: the same one). */
  renew(reason: string, device: SessionDevice = this.#stats.device): Promise<void> {
    if (this.#closed) return Promise.resolve();
    if (this.#renewing === undefined) {
      this.#stats.lastReason = reason;
      this.#renewing = this.#renewLoop(device).finally(() => (this.#renewing = undefined));
    }
    return this.#renewing;
  }

  async close(): Promise<void> {
    this.#closed = true;
    await this.#renewing;
    await this.#answer?.close();
    this.#answer = undefined;
  }

  async #renewLoop(device: SessionDevice): Promise<void> {
    const started = performance.now();
    const failover = device !== this.#stats.device;
    const old = this.#answer;
    this.#answer = undefined;
    this.#stats.session = undefined;
    // Ended first: the new session has the same name (and id), which a gateway refuses while the old one is up.
    // Not on a failover: the control plane's DELETE of a session on the lost link would only be
    // undone by the handshake on the other device, which closes it first (docs/protocol.md §1.11).
    if (!failover) await old?.close();
    for (let wait = RETRY_FIRST_MS; !this.#closed; wait = Math.min(2 * wait, RETRY_MAX_MS)) {
      try {
        await this.#handshake(this.#native.renewRecovery(device), device);
        this.#stats.renewals++;
        if (failover) {
          this.#stats.failovers++;
          this.#stats.lastFailoverMs = performance.now() - started;
        }
        return;
      } catch (e) {
        this.#stats.failedAttempts++;
        this.#stats.lastError = e instanceof Error ? e.message : String(e);
        await sleep(wait);
      }
    }
  }

  async #handshake(local: RcEndpointInfo, device: SessionDevice): Promise<void> {
    const o = this.#options;
    const answer = await o.handshake({ name: o.name, feed: o.feed, channels: o.channels, local, ...(device === 'alternate' ? { device } : {}) });
    if (this.#closed) {
      await answer.close();
      return;
    }
    try {
      const c = this.#native.stats().recovery;
      this.#errorsAtConnect = c?.errors ?? 0;
      this.#retryExceededAtConnect = c?.retryExceeded ?? 0;
      this.#native.connectRecovery({ qpn: answer.qpn, psn: answer.psn, gid: answer.gid, mtu: answer.mtu, alternateGid: answer.alternateGid ?? null });
    } catch (e) {
      await answer.close();
      throw e;
    }
    this.#answer = answer;
    this.#stats.session = answer.id;
    this.#stats.device = device;
  }
}

function otherDevice(device: SessionDevice): SessionDevice {
  return device === 'primary' ? 'alternate' : 'primary';
}
