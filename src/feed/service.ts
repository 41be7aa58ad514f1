// FeedService: the gateway's feed, from a FeedsConfig — a publisher on the
// given (started) engine and (opened) device (and line B on the alternate
// device, when given), and the synthetic or replay source when enabled. start() / stop(); stats() for /metrics and status.
import type { Engine } from '../native/engine.js';
import { instrumentChannel, resolveFeedsConfig, type FeedsConfig } from './config.js';
import type { FeedDevice } from './native.js';
import { createPublisher, type FeedPublisher, type PublisherStats } from './publisher.js';
import type { TickFile } from './recording.js';
import { ReplaySource, type ReplayStats } from './sources/replay.js';
import { SyntheticSource, type SyntheticStats } from './sources/synthetic.js';

export interface FeedServiceStats {
  running: boolean;
  publisher: PublisherStats | undefined;
  synthetic: SyntheticStats | undefined;
  replay: ReplayStats | undefined;
}

export class FeedService {
  readonly config: FeedsConfig;
  readonly #engine: Engine;
  readonly #device: FeedDevice;
  // Line B's device (an ibv gateway's backend.alternateDevice): see PublisherOptions.alternateDevice.
  readonly #alternateDevice: FeedDevice | undefined;
  #publisher: FeedPublisher | undefined;
  #source: SyntheticSource | ReplaySource | undefined;
  readonly #replayFile: TickFile | undefined;

  /**
   * `config` is validated and completed with defaults (resolveFeedsConfig).
   * A replay feed needs its tick file read beforehand (readReplayFile:
   * confined to feeds.replay.dir, off the event loop).
   */
  constructor(engine: Engine, device: FeedDevice, config: unknown = {}, options: { replayFile?: TickFile; alternateDevice?: FeedDevice } = {}) {
    this.config = resolveFeedsConfig(config);
    this.#engine = engine;
    this.#device = device;
    this.#alternateDevice = options.alternateDevice;
    this.#replayFile = options.replayFile;
    if (this.config.source === 'replay' && this.#replayFile === undefined) {
      throw new TypeError('qpgate feed: a replay feed needs its tick file, read with readReplayFile(feeds.replay.dir, feeds.replay.file)');
    }
  }

  get running(): boolean {
    return this.#publisher !== undefined;
  }
  get publisher(): FeedPublisher | undefined {
    return this.#publisher;
  }

  /** Needs a started engine. A new session every start. Idempotent. */
  start(): void {
    if (this.#publisher !== undefined || !this.config.enabled) return;
    if (!this.#engine.running) throw new Error('qpgate feed: start the engine before the feed');
    const channelOf = instrumentChannel(this.config);
    this.#publisher = createPublisher(this.#engine, this.#device, {
      channels: this.config.channels,
      instruments: channelOf,
      sendSlots: this.config.sendSlots,
      hopLimit: this.config.hopLimit,
      ...(this.#alternateDevice === undefined ? {} : { alternateDevice: this.#alternateDevice }),
    });
    if (this.config.source === 'replay') {
      const r = this.config.replay;
      this.#source = new ReplaySource(this.#publisher, { file: this.#replayFile!, speed: r.speed, loop: r.loop });
      this.#source.start();
      return;
    }
    const s = this.config.synthetic;
    if (s.enabled) {
      this.#source = new SyntheticSource(this.#publisher, {
        instruments: this.config.instruments.count,
        firstInstrumentId: this.config.instruments.firstId,
        ratePerSec: s.ratePerSec,
        burstProbability: s.burstProbability,
        burstMax: s.burstMax,
        bookDepth: s.bookDepth,
        ...(s.seed === undefined ? {} : { seed: s.seed }),
        channelOf,
      });
      this.#source.start();
    }
  }

  /** Stops the source, sends END_OF_SESSION and releases the publisher. Before the engine stops. Idempotent. */
  stop(): void {
    this.#source?.stop();
    this.#source = undefined;
    this.#publisher?.close();
    this.#publisher = undefined;
  }

  stats(): FeedServiceStats {
    const source = this.#source;
    return {
      running: this.running,
      publisher: this.#publisher?.stats(),
      synthetic: source instanceof SyntheticSource ? source.stats() : undefined,
      replay: source instanceof ReplaySource ? source.stats() : undefined,
    };
  }
}
