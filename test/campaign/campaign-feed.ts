// The campaign's three feed subscribers, each with recovery, on its own soft
// device in the clients' namespace. A subscriber's recovery session belongs
// to one gateway process (its RC QP is connected to that process's QP), so
// after a restart the campaign subscribes again, as an application must
// today; each (subscriber, gateway life) gets its own ledger.
import { Engine } from '../../src/native/engine.js';
import { openFeedDevice, type FeedDevice } from '../../src/feed/native.js';
import { httpRecoveryHandshake } from '../../src/feed/recovery-handshake.js';
import { subscribe, type FeedSubscriber } from '../../src/feed/subscriber.js';
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
  /** The native subscriber's own counts for this life. */
  stats: { received: number; recovered: number; unrecoverable: number; gaps: number; snapshots: number; recoveryFailures: number; rejectedFrames: number; ringFullDrops: number };
}

export class FeedSide {
  readonly #engine = new Engine({ toEngineCapacity: 1 << 20, fromEngineCapacity: 1 << 23, hugePages: false, idle: 'backoff' });
  #devices: FeedDevice[] = [];
  #subs: Array<{ sub: FeedSubscriber; ledger: FeedLedger }> = [];
  #life = 0;
  readonly records: LifeRecord[] = [];

  constructor(readonly options: FeedSideOptions) {}

  async start(): Promise<void> {
    await this.#engine.start();
    this.#devices = this.options.addresses.map((address) => openFeedDevice(this.#engine, { address }));
  }

  /** Subscribes all three to the gateway at `url` (gateway life `life`). */
  async join(url: string, life: number): Promise<void> {
    this.#life = life;
    this.#subs = await Promise.all(
      this.#devices.map(async (device, i) => {
        const ledger = new FeedLedger();
        const sub = await subscribe({
          engine: this.#engine,
          device,
          channels: [{ id: 1, groupA: this.options.group }],
          recvSlots: 2048,
          onMessage: (m) => ledger.onMessage(m),
          onGap: (g) => ledger.onGap(g),
          recovery: { name: `campaign-sub-${i + 1}`, handshake: httpRecoveryHandshake({ url, token: this.options.token, timeoutMs: HTTP_TIMEOUT_MS }), requestTimeoutMs: 3000 },
        });
        return { sub, ledger };
      }),
    );
  }

  /** One past the highest sequence any subscriber of this life accounted for. */
  highestSeen(): bigint {
    return this.#subs.reduce((m, s) => (s.ledger.summary().next > m ? s.ledger.summary().next : m), 0n);
  }

  /** Live messages delivered so far in this life, per subscriber. */
  liveNow(): number[] {
    return this.#subs.map((s) => s.ledger.summary().live);
  }

  /** Ends this life's subscriptions; `publishedEnd` is one past the last sequence the gateway is known to have sent. */
  async leave(publishedEnd: bigint): Promise<void> {
    const end = publishedEnd > this.highestSeen() ? publishedEnd : this.highestSeen();
    for (const [i, { sub, ledger }] of this.#subs.entries()) {
      const st = sub.stats();
      const c = st.channels[0]!;
      this.records.push({
        life: this.#life,
        subscriber: i + 1,
        summary: ledger.summary(end),
        stats: {
          received: c.received,
          recovered: c.recovered,
          unrecoverable: c.unrecoverable,
          gaps: c.gaps,
          snapshots: c.snapshots,
          recoveryFailures: c.recoveryFailures,
          rejectedFrames: c.rejectedFrames,
          ringFullDrops: st.ringFullDrops,
        },
      });
      await sub.close();
    }
    this.#subs = [];
  }

  async stop(): Promise<void> {
    await this.#engine.stop();
  }
}
