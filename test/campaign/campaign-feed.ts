// The campaign's three feed subscribers, each with recovery, on its own soft
// device in the clients' namespace, subscribed once for the whole run, as an
// application would: across the gateway's SIGKILLs and restarts each one
// makes its recovery session again by itself (src/feed/recovery-link.ts),
// so a late join and the gaps after a restart are recovered. Each
// (subscriber, gateway life) gets its own ledger: a feed session is one
// gateway life, and the 'session' event switches to the next ledger.
import { Engine } from '../../src/native/engine.js';
import { openFeedDevice, type FeedDevice } from '../../src/feed/native.js';
import { httpRecoveryHandshake } from '../../src/feed/recovery-handshake.js';
import { subscribe, type FeedSubscriber, type SubscriberStats } from '../../src/feed/subscriber.js';
import { FeedLedger, type LedgerSummary } from './feed-ledger.js';

/** HTTP timeout of the control-plane calls (default 5 s; a gateway just started under TCG answers its first ones slowly). */
export const HTTP_TIMEOUT_MS = 60_000;

export interface FeedSideOptions {
  addresses: readonly string[];
  group: string;
  token: string;
}

export interface LifeRecord {
  life: number;
  subscriber: number;
  summary: LedgerSummary;
}

/** A subscriber's own counts over the whole run (its native counters are cumulative across lives). */
export interface SubscriberRecord {
  subscriber: number;
  stats: { received: number; recovered: number; unrecoverable: number; gaps: number; snapshots: number; recoveryRequests: number; rangeGone: number; throttled: number; recoveryFailures: number; rejectedFrames: number; ringFullDrops: number; bufferOverflows: number };
  recovery: SubscriberStats['recovery'];
}

interface Sub {
  sub: FeedSubscriber;
  /** One per gateway life, in order; the last is the current one. */
  ledgers: FeedLedger[];
}

export class FeedSide {
  readonly #engine = new Engine({ toEngineCapacity: 1 << 20, fromEngineCapacity: 1 << 23, hugePages: false, idle: 'backoff' });
  #devices: FeedDevice[] = [];
  #subs: Sub[] = [];
  /** One past the last sequence the gateway was known to have published, per life (leave()'s figure). */
  readonly #ends: bigint[] = [];

  constructor(readonly options: FeedSideOptions) {}

  async start(): Promise<void> {
    await this.#engine.start();
    this.#devices = this.options.addresses.map((address) => openFeedDevice(this.#engine, { address }));
  }

  /** Subscribes all three to the gateway at `url`, once for the run. */
  async join(url: string): Promise<void> {
    this.#subs = await Promise.all(
      this.#devices.map(async (device, i) => {
        const s: Sub = { sub: undefined as unknown as FeedSubscriber, ledgers: [new FeedLedger()] };
        s.sub = await subscribe({
          engine: this.#engine,
          device,
          channels: [{ id: 1, groupA: this.options.group }],
          recvSlots: 2048,
          onMessage: (m) => s.ledgers[s.ledgers.length - 1]!.onMessage(m),
          onGap: (g) => s.ledgers[s.ledgers.length - 1]!.onGap(g),
          // The old session's last gaps come before this event (subscriber_channel.h): they stay in its ledger.
          onSession: (c) => void (c.oldSession !== 0 && s.ledgers.push(new FeedLedger())),
          recovery: { name: `campaign-sub-${i + 1}`, handshake: httpRecoveryHandshake({ url, token: this.options.token, timeoutMs: HTTP_TIMEOUT_MS }), requestTimeoutMs: 3000 },
        });
        return s;
      }),
    );
  }

  /** One past the highest sequence any subscriber accounted for in the current life. */
  highestSeen(): bigint {
    return this.#subs.reduce((m, s) => {
      const next = s.ledgers[s.ledgers.length - 1]!.summary().next;
      return next > m ? next : m;
    }, 0n);
  }

  /** Live messages delivered so far in the current life, per subscriber. */
  liveNow(): number[] {
    return this.#subs.map((s) => s.ledgers[s.ledgers.length - 1]!.summary().live);
  }

  /** Recovery sessions made again so far, per subscriber. */
  renewals(): number[] {
    return this.#subs.map((s) => s.sub.stats().recovery?.renewals ?? 0);
  }

  /** Live frames each subscriber holds behind a recovery now. */
  held(): number[] {
    return this.#subs.map((s) => s.sub.stats().channels[0]!.held);
  }

  /** Every subscriber has a recovery session on the current gateway: made `renewals` times again, and up. */
  recoveryUp(renewals: number): boolean {
    return this.#subs.every((s) => (s.sub.stats().recovery?.renewals ?? 0) >= renewals && s.sub.recoverySessionId !== undefined);
  }

  /** A gateway life ended; `publishedEnd` is one past the last sequence it is known to have sent. */
  lifeEnded(publishedEnd: bigint): void {
    const seen = this.highestSeen();
    this.#ends.push(publishedEnd > seen ? publishedEnd : seen);
  }

  /** Each (subscriber, life)'s ledger, with a life's end where it is known. */
  lives(): LifeRecord[] {
    return this.#subs.flatMap((s, i) => s.ledgers.map((ledger, life) => ({ life, subscriber: i + 1, summary: ledger.summary(this.#ends[life] ?? 0n) })));
  }

  /** Ends the subscriptions; what each subscriber counted over the run. */
  async leave(): Promise<SubscriberRecord[]> {
    const out: SubscriberRecord[] = [];
    for (const [i, { sub }] of this.#subs.entries()) {
      const st = sub.stats();
      const c = st.channels[0]!;
      out.push({
        subscriber: i + 1,
        stats: {
          received: c.received,
          recovered: c.recovered,
          unrecoverable: c.unrecoverable,
          gaps: c.gaps,
          snapshots: c.snapshots,
          recoveryRequests: c.recoveryRequests,
          rangeGone: c.rangeGone,
          throttled: c.throttled,
          recoveryFailures: c.recoveryFailures,
          rejectedFrames: c.rejectedFrames,
          ringFullDrops: st.ringFullDrops,
          bufferOverflows: c.bufferOverflows,
        },
        recovery: st.recovery,
      });
      await sub.close();
    }
    this.#subs = [];
    return out;
  }

  async stop(): Promise<void> {
    await this.#engine.stop();
  }
}
