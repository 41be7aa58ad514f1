// The queue pairs the gateway has made, so /v1/qps and /metrics can list them.
//
// The verbs bindings have no "list every QP of a device" call (the soft
// device keeps its QP table inside the engine); until they do, whoever
// creates a QP in the gateway (feeds, order sessions) goes through this
// registry: `registry.createQp(pd, options, { owner: 'feed:md-a' })` or
// `registry.track(qp, meta)`. A destroyed QP drops out of the registry (by
// `destroy(qpn)`, or the next time it is listed and the binding says so), so
// per-QP metric labels exist only while the QP does.
//
// QPs made natively (the feed publisher's UD QP) are listed through a
// ListedQp their owner provides: query() throws once the owner has gone.
//
// QPNs are per device: an ibv gateway with backend.alternateDevice has QPs on
// both (a feed's line B leaves from the alternate), so a QP is known by its
// device and its QPN.
import type { SessionDevice } from '../../common/session-provider.js';
import type { CreateQpOptions, ProtectionDomain, QpAttr, QueuePair } from '../../native/verbs.js';

/** What the registry reads of a QP: a verbs QueuePair, or a native QP seen through its owner. */
export interface ListedQp {
  readonly qpNum: number;
  /** ibv_query_qp; may carry the counters too (then counters() is not called). */
  query(): QpAttr & { readonly counters?: Readonly<Record<string, number>> };
  counters(): Readonly<Record<string, number>>;
  /** ibv_destroy_qp; absent for a QP its owner destroys (the feed publisher's). */
  destroy?(): void;
}

export interface QpMeta {
  /** Who made it: 'feed:<name>', 'session:<id>', 'test'. */
  owner: string;
  /** Free text: what it is for. */
  label?: string;
  /** The gateway's device it is on (backend.device: 'primary', the default; backend.alternateDevice: 'alternate'). */
  device?: SessionDevice;
}

export interface TrackedQp {
  readonly qp: ListedQp;
  readonly meta: QpMeta;
  readonly createdAt: Date;
}

/** One row of /v1/qps: what `rdma res show qp` and `ibv_query_qp` tell. */
export interface QpView {
  qpn: number;
  device: SessionDevice;
  type: string;
  state: string;
  owner: string;
  label: string | null;
  sqPsn: number;
  rqPsn: number;
  destQpNum: number;
  destGid: string;
  pathMtu: number;
  qkey: number;
  /** Send WRs posted and not completed; receive WRs posted and not consumed (null where the backend does not say). */
  outstandingWrs: number | null;
  recvWrsPosted: number | null;
  cap: QpAttr['cap'];
  timeout: number;
  retryCnt: number;
  rnrRetry: number;
  createdAt: string;
  /**
   * Every transport counter of the QP, under its one name: qp_counters.def's
   * (src/declared/qp-counters.ts) for a soft QP; the row re-spells none of them.
   */
  counters: Readonly<Record<string, number>>;
}

export function qpView(t: TrackedQp): QpView {
  const a = t.qp.query();
  const k = a.counters ?? t.qp.counters();
  return {
    qpn: t.qp.qpNum,
    device: t.meta.device ?? 'primary',
    type: a.type,
    state: a.state,
    owner: t.meta.owner,
    label: t.meta.label ?? null,
    sqPsn: a.sqPsn,
    rqPsn: a.rqPsn,
    destQpNum: a.destQpNum,
    destGid: a.ahAttr.dgid,
    pathMtu: a.pathMtu,
    qkey: a.qkey,
    outstandingWrs: a.sendWrsOutstanding ?? null,
    recvWrsPosted: a.recvWrsPosted ?? null,
    cap: a.cap,
    timeout: a.timeout,
    retryCnt: a.retryCnt,
    rnrRetry: a.rnrRetry,
    createdAt: t.createdAt.toISOString(),
    counters: k,
  };
}

/** A QP's key: its device and its QPN (QPNs are per device). */
const keyOf = (qpn: number, device: SessionDevice = 'primary'): string => `${device}:${qpn}`;

export class QpRegistry {
  readonly #qps = new Map<string, TrackedQp>();

  /** ibv_create_qp through the registry: the QP is listed until destroy(qpn). */
  createQp(pd: ProtectionDomain, options: CreateQpOptions, meta: QpMeta): QueuePair {
    const qp = pd.createQp(options);
    this.track(qp, meta);
    return qp;
  }

  /** Lists a QP made elsewhere. Returns a function that stops listing it. */
  track(qp: ListedQp, meta: QpMeta): () => void {
    const key = keyOf(qp.qpNum, meta.device);
    this.#qps.set(key, { qp, meta: { ...meta }, createdAt: new Date() });
    return () => {
      if (this.#qps.get(key)?.qp === qp) this.#qps.delete(key);
    };
  }

  /** ibv_destroy_qp and forget it. False when no such QP is listed. */
  destroy(qpn: number, device: SessionDevice = 'primary'): boolean {
    return this.#destroyKey(keyOf(qpn, device));
  }

  #destroyKey(key: string): boolean {
    const t = this.#qps.get(key);
    if (!t) return false;
    this.#qps.delete(key);
    t.qp.destroy?.();
    return true;
  }

  /** Destroys every listed QP (shutdown). */
  destroyAll(): void {
    for (const key of [...this.#qps.keys()]) {
      try {
        this.#destroyKey(key);
      } catch {
        // already gone with its owner
      }
    }
  }

  get size(): number {
    return this.#qps.size;
  }

  /** Every live QP, the primary device's first, by QPN; QPs destroyed behind the registry's back drop out. */
  list(): QpView[] {
    const out: QpView[] = [];
    for (const [key, t] of this.#qps) {
      try {
        out.push(qpView(t));
      } catch {
        this.#qps.delete(key);
      }
    }
    return out.sort((a, b) => (a.device === b.device ? a.qpn - b.qpn : a.device === 'primary' ? -1 : 1));
  }

  get(qpn: number, device: SessionDevice = 'primary'): QpView | undefined {
    const key = keyOf(qpn, device);
    const t = this.#qps.get(key);
    if (!t) return undefined;
    try {
      return qpView(t);
    } catch {
      this.#qps.delete(key);
      return undefined;
    }
  }
}
