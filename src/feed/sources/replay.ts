// The replay source: publishes a tick file (recording.ts, made by `qpgate
// record`) again, with the recording's pacing scaled by `speed` (1 = as
// recorded, 2 = twice as fast, 0 = as fast as the publisher takes them),
// once or in a loop. Each message goes out on its recorded channel when the
// publisher has it, else on its instrument's channel; snapshot messages of
// the recording are skipped (the publisher builds its own snapshots).
// Nothing is decoded: the bodies go out as they were received.
import type { FeedPublisher } from '../publisher.js';
import type { TickFile, TickRecord } from '../recording.js';

export interface ReplayOptions {
  /** The tick file, read already (replay-file.ts: confined to feeds.replay.dir, asynchronously). */
  readonly file: TickFile;
  /** 1 = the recorded pacing; 0 = no pacing. */
  readonly speed?: number;
  readonly loop?: boolean;
  /** Called once the last record went out (not when looping). */
  readonly onEnd?: () => void;
}

export interface ReplayStats {
  records: number;
  published: number;
  skippedSnapshot: number;
  /** Records whose channel and instrument the publisher has no channel for. */
  unroutable: number;
  loops: number;
  truncatedBytes: number;
  done: boolean;
}

export class ReplaySource {
  readonly #pub: FeedPublisher;
  readonly #records: TickRecord[];
  readonly #speed: number;
  readonly #loop: boolean;
  readonly #onEnd: (() => void) | undefined;
  readonly #stats: ReplayStats;
  #timer: NodeJS.Timeout | undefined;
  #next = 0;
  #startNs = 0n;

  constructor(publisher: FeedPublisher, options: ReplayOptions) {
    const speed = options.speed ?? 1;
    if (!(speed >= 0) || !Number.isFinite(speed)) throw new RangeError(`replay source: speed must be a finite number >= 0, got ${speed}`);
    const file = options.file;
    this.#pub = publisher;
    this.#records = file.records;
    this.#speed = speed;
    this.#loop = options.loop ?? false;
    this.#onEnd = options.onEnd;
    this.#stats = { records: file.records.length, published: 0, skippedSnapshot: 0, unroutable: 0, loops: 0, truncatedBytes: file.truncatedBytes, done: false };
  }

  get running(): boolean {
    return this.#timer !== undefined;
  }

  stats(): ReplayStats {
    return { ...this.#stats };
  }

  start(): void {
    if (this.#timer !== undefined || this.#stats.done) return;
    this.#startNs = process.hrtime.bigint();
    // 1 ms ticks, as the synthetic source: each publishes everything due.
    this.#timer = setInterval(() => this.#tick(), 1);
    this.#tick();
  }

  stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  #tick(): void {
    const elapsed = process.hrtime.bigint() - this.#startNs;
    const byChannel = new Map<number, TickRecord[]>();
    let taken = 0;
    while (this.#next < this.#records.length && taken < 10_000) {
      const r = this.#records[this.#next]!;
      if (this.#speed > 0 && Number(r.atNs) / this.#speed > Number(elapsed)) break;
      ++this.#next;
      ++taken;
      if (r.snapshot) {
        ++this.#stats.skippedSnapshot;
        continue;
      }
      const channel = this.#pub.channels.includes(r.channel) ? r.channel : this.#pub.channelOf(r.instrumentId);
      if (channel === undefined) {
        ++this.#stats.unroutable;
        continue;
      }
      let list = byChannel.get(channel);
      if (list === undefined) byChannel.set(channel, (list = []));
      list.push(r);
    }
    for (const [channel, list] of byChannel) {
      this.#pub.publish(channel, list);
      this.#stats.published += list.length;
    }
    if (this.#next < this.#records.length) return;
    if (this.#loop && this.#records.length > 0) {
      this.#next = 0;
      ++this.#stats.loops;
      this.#startNs = process.hrtime.bigint();
      return;
    }
    this.stop();
    this.#stats.done = true;
    this.#onEnd?.();
  }
}
