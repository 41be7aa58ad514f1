// The fault campaign's account of one subscriber over one gateway life: which
// live sequences arrived, which ranges the subscriber reported lost ('gap'
// events), and, against what the gateway published, whether any message went
// missing without a report (silent loss). Messages arrive in sequence order
// (the native subscriber delivers in order), so a hole is a jump in seq.
import type { FeedGap, FeedMessage } from '../../src/feed/subscriber.js';

export interface SeqRange {
  from: bigint;
  /** One past the last sequence. */
  end: bigint;
}

export interface LedgerSummary {
  session: number;
  /** Where accounting starts: the first snapshot's resume point or the first live sequence (0n: nothing arrived). */
  first: bigint;
  /** One past the last sequence accounted for. */
  next: bigint;
  live: number;
  snapshots: number;
  recovered: number;
  /** Messages in reported gaps. */
  reported: bigint;
  /** Holes in [first, next) that no gap event covered: silent loss. */
  silent: SeqRange[];
  /** Messages between the last delivery and publishedEnd, not reported (see summary()). */
  tail: bigint;
  /** Sequences delivered twice or backwards. */
  outOfOrder: number;
  /** Messages of another session delivered to this ledger. */
  foreign: number;
}

export class FeedLedger {
  readonly #holes: SeqRange[] = [];
  readonly #gaps: SeqRange[] = [];
  #session = 0;
  #first = 0n;
  #next = 0n;
  #live = 0;
  #snapshots = 0;
  #recovered = 0;
  #outOfOrder = 0;
  #foreign = 0;

  onMessage(m: FeedMessage): void {
    if (this.#session === 0) this.#session = m.session;
    if (m.session !== this.#session) {
      this.#foreign++;
      return;
    }
    if (m.snapshot) {
      // State as of m.seq: live data resumes at m.seq + 1; what lay between is a hole.
      this.#snapshots++;
      this.#advance(m.seq + 1n);
      return;
    }
    if (m.recovered) this.#recovered++;
    this.#live++;
    if (this.#next !== 0n && m.seq < this.#next) {
      this.#outOfOrder++;
      return;
    }
    this.#advance(m.seq);
    this.#next = m.seq + 1n;
  }

  onGap(g: FeedGap): void {
    this.#gaps.push({ from: g.fromSeq, end: g.fromSeq + g.count });
  }

  /**
   * `publishedEnd`: one past the last sequence the gateway is known to have
   * published in this session (from /metrics or another subscriber). What
   * lies beyond the last delivery is the tail: reported apart, because after
   * a SIGKILL nothing tells a subscriber how far the session went.
   */
  summary(publishedEnd = 0n): LedgerSummary {
    const tail = publishedEnd > this.#next && this.#next !== 0n ? uncovered([{ from: this.#next, end: publishedEnd }], this.#gaps) : [];
    return {
      session: this.#session,
      first: this.#first,
      next: this.#next,
      live: this.#live,
      snapshots: this.#snapshots,
      recovered: this.#recovered,
      reported: this.#gaps.reduce((n, g) => n + (g.end - g.from), 0n),
      silent: uncovered(this.#holes, this.#gaps),
      tail: tail.reduce((n, r) => n + (r.end - r.from), 0n),
      outOfOrder: this.#outOfOrder,
      foreign: this.#foreign,
    };
  }

  /** Accounting starts at the first snapshot's resume point or the first live message; after that a jump is a hole. */
  #advance(to: bigint): void {
    if (this.#next === 0n) {
      this.#first = to;
      this.#next = to;
      return;
    }
    if (to > this.#next) {
      this.#holes.push({ from: this.#next, end: to });
      this.#next = to;
    }
  }
}

/** The parts of `holes` that no range in `covers` contains. */
export function uncovered(holes: readonly SeqRange[], covers: readonly SeqRange[]): SeqRange[] {
  const sorted = [...covers].sort((a, b) => (a.from < b.from ? -1 : a.from > b.from ? 1 : 0));
  const out: SeqRange[] = [];
  for (const h of holes) {
    let at = h.from;
    for (const c of sorted) {
      if (c.end <= at || c.from >= h.end) continue;
      if (c.from > at) out.push({ from: at, end: c.from });
      at = c.end > at ? c.end : at;
      if (at >= h.end) break;
    }
    if (at < h.end) out.push({ from: at, end: h.end });
  }
  return out;
}
