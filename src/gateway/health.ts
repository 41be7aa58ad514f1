// The engine's heartbeat and the gateway's readiness, for /healthz and /readyz.
//
// Heartbeat: the engine counts every duty cycle it completes
// (stats().dutyCycles, an atomic the JS thread reads without calling into the
// engine). An idle engine still cycles at least every engine.backoff.maxParkNs
// (it parks with that timeout), so a counter that has not moved for
// control.health.engineStaleMs means the engine thread is stuck in one cycle.
// A timer samples it, so the age is measured from the last change seen, not
// from the last request.
import type { EngineStats } from '../native/addon.js';
import type { Engine } from '../native/engine.js';

const SAMPLE_MS = 50;

export class EngineHeartbeat {
  readonly #engine: Engine;
  readonly staleMs: number;
  #cycles = -1;
  #movedAt = 0;
  #timer: NodeJS.Timeout | undefined;

  constructor(engine: Engine, staleMs: number) {
    this.#engine = engine;
    this.staleMs = staleMs;
  }

  start(): void {
    this.sample();
    this.#timer ??= setInterval(() => this.sample(), Math.min(SAMPLE_MS, this.staleMs / 4)).unref();
  }

  stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** Reads the duty-cycle counter; notes the time when it moved. */
  sample(now = performance.now()): void {
    if (!this.#engine.running) return;
    const cycles = this.#engine.stats().dutyCycles;
    if (cycles !== this.#cycles) {
      this.#cycles = cycles;
      this.#movedAt = now;
    }
  }

  /** Milliseconds since the duty-cycle counter last moved. */
  ageMs(): number {
    const now = performance.now();
    this.sample(now);
    return now - this.#movedAt;
  }

  /** Why the engine is not healthy, or undefined when it is. */
  problem(): string | undefined {
    if (!this.#engine.running) return 'engine stopped';
    const age = this.ageMs();
    if (age > this.staleMs) return `engine stalled: no duty cycle completed for ${Math.round(age)} ms (limit ${this.staleMs} ms)`;
    return stoppedAgentProblem(this.#engine.stats());
  }
}

/**
 * An agent that threw is no longer run (the engine goes on with the others),
 * so the part of the gateway it drives — the device, the feed, order entry —
 * is dead while the duty cycles still tick: not healthy.
 */
export function stoppedAgentProblem(stats: Pick<EngineStats, 'agentsStopped' | 'faults'>): string | undefined {
  if (stats.agentsStopped === 0) return undefined;
  const first = stats.faults.find((f) => f.stopped);
  const which = first === undefined ? '' : `: ${first.agent}: ${first.message}`;
  return `engine agent stopped after an exception (${stats.agentsStopped} stopped${which})`;
}
