// Runs the SLO evaluator on a timer over the registered latency sources and
// keeps the latest report for /v1/slo, /metrics and the status page.
//
// An objective none of whose windows has minEvents events yet is "too few
// events": judged by nothing, neither ok nor violated.
//
// Each objective gets its own SloEvaluator, made when its latency source is
// registered (LatencyRegistry.registerLatency): until then it is listed with
// status "no data source" — not an error, the feed or order entry may simply
// not have started yet.
import type { Registry } from 'prom-client';
import { Gauge, Counter } from 'prom-client';
import type { SloConfig, SloObjectiveConfig } from '../config/schema.js';
import type { LatencyRegistry } from '../metrics/latency-registry.js';
import { defaultMinEvents, SloEvaluator, type SloStatus } from './evaluator.js';
import { LatencyCounts } from '../../native/latency-counts.js';
import { parseDurationMs } from './duration.js';

export type SloState = 'ok' | 'violated' | 'too few events' | 'no data source' | 'pending';

export interface SloWindowReport {
  /** As configured: "1m". */
  window: string;
  windowSeconds: number;
  coveredSeconds: number;
  events: number;
  slowEvents: number;
  observedUs: number;
  /** events ≥ the objective's minEvents; a window with fewer is compliant. */
  judged: boolean;
  compliant: boolean;
  burnRate: number;
}

export interface SloObjectiveReport {
  name: string;
  latency: string;
  percentile: number;
  thresholdUs: number;
  /** Events a window needs before it is judged. */
  minEvents: number;
  /** ok | violated | too few events (no window judged yet) | no data source | pending (source registered, not evaluated yet). */
  status: SloState;
  compliant: boolean | null;
  windows: SloWindowReport[];
}

export interface SloReport {
  evaluationIntervalSeconds: number;
  evaluatedAt: string | null;
  evaluations: number;
  objectives: SloObjectiveReport[];
}

interface Entry {
  config: SloObjectiveConfig;
  windowLabels: Map<number, string>;
  windowsSeconds: number[];
  /** config.minEvents, or the percentile's default: resolved once. */
  minEvents: number;
  evaluator?: SloEvaluator;
  status?: SloStatus;
}

export class SloService {
  readonly intervalMs: number;
  readonly #entries: Entry[];
  readonly #latency: LatencyRegistry;
  #timer: NodeJS.Timeout | undefined;
  #evaluatedAt: Date | null = null;
  #evaluations = 0;
  #onError: (err: unknown) => void;

  /** Throws a message naming the config key when the section is inconsistent. */
  constructor(config: SloConfig, latency: LatencyRegistry, onError: (err: unknown) => void = () => {}) {
    this.#latency = latency;
    this.#onError = onError;
    this.intervalMs = parseDurationMs(config.evaluationInterval);
    if (this.intervalMs < 100) throw new Error(`slo.evaluationInterval: at least 100ms, got ${config.evaluationInterval}`);
    const names = new Set<string>();
    this.#entries = config.objectives.map((o, i) => {
      if (names.has(o.name)) throw new Error(`slo.objectives.${i}.name: ${o.name} is used by another objective`);
      names.add(o.name);
      const windowLabels = new Map<number, string>();
      for (const [j, w] of o.windows.entries()) {
        const seconds = parseDurationMs(w) / 1000;
        if (seconds < 1) throw new Error(`slo.objectives.${i}.windows.${j}: at least 1s, got ${w}`);
        if (seconds * 1000 < this.intervalMs) {
          throw new Error(`slo.objectives.${i}.windows.${j}: ${w} is shorter than slo.evaluationInterval (${config.evaluationInterval})`);
        }
        if (windowLabels.has(seconds)) throw new Error(`slo.objectives.${i}.windows.${j}: ${w} repeats another window`);
        windowLabels.set(seconds, w);
      }
      return { config: o, windowLabels, windowsSeconds: [...windowLabels.keys()], minEvents: o.minEvents ?? defaultMinEvents(o.percentile) };
    });
    latency.onRegister(() => this.#attachSources(Date.now()));
    this.#attachSources(Date.now());
  }

  /** Evaluates every interval on an unref'd timer (it never keeps the process alive). */
  start(): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => {
      try {
        this.evaluate();
      } catch (err) {
        this.#onError(err);
      }
    }, this.intervalMs);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** Takes a snapshot of every latency used and re-evaluates now. */
  evaluate(nowMs: number = Date.now()): SloReport {
    this.#attachSources(nowMs);
    for (const e of this.#entries) {
      if (e.evaluator) e.status = e.evaluator.tick(nowMs)[0];
    }
    this.#evaluatedAt = new Date(nowMs);
    this.#evaluations++;
    return this.report();
  }

  report(): SloReport {
    return {
      evaluationIntervalSeconds: this.intervalMs / 1000,
      evaluatedAt: this.#evaluatedAt?.toISOString() ?? null,
      evaluations: this.#evaluations,
      objectives: this.#entries.map((e) => this.#objectiveReport(e)),
    };
  }

  /** Counts of events and of events slower than the threshold since start, per objective (for Prometheus-side burn rates). */
  eventTotals(): Array<{ name: string; percentile: number; events: number; slowEvents: number } | undefined> {
    return this.#entries.map((e) => {
      const counts = this.#latency.read(e.config.latency);
      if (!counts) return undefined;
      return { name: e.config.name, percentile: e.config.percentile, events: counts.total, slowEvents: counts.countAbove(e.config.thresholdUs * 1000) };
    });
  }

  /** Registers qpgate_slo_* in `registry`; values are read from the latest evaluation on scrape. */
  // long because: one declaration per qpgate_slo_* family over the same report walk.
  exportTo(registry: Registry): void {
    const each = (fn: (o: SloObjectiveReport, w: SloWindowReport) => void): void => {
      for (const o of this.report().objectives) for (const w of o.windows) fn(o, w);
    };
    new Gauge({
      name: 'qpgate_slo_compliant',
      help: 'Whether the objective held over the window at the last evaluation (1 yes, 0 no).',
      labelNames: ['slo', 'window'],
      registers: [registry],
      collect() {
        this.reset();
        each((o, w) => this.set({ slo: o.name, window: w.window }, w.compliant ? 1 : 0));
      },
    });
    new Gauge({
      name: 'qpgate_slo_burn_rate',
      help: 'Error-budget burn rate over the window: (slow events / events) / (1 - percentile/100); 1 spends the budget exactly.',
      labelNames: ['slo', 'window'],
      registers: [registry],
      collect() {
        this.reset();
        // A window with too few events to judge has no burn rate: one slow first order of three is not a page.
        each((o, w) => {
          if (w.judged) this.set({ slo: o.name, window: w.window }, w.burnRate);
        });
      },
    });
    new Gauge({
      name: 'qpgate_slo_observed_seconds',
      help: 'The objective percentile of the latency over the window, at the last evaluation.',
      labelNames: ['slo', 'window'],
      registers: [registry],
      collect() {
        this.reset();
        each((o, w) => this.set({ slo: o.name, window: w.window }, w.observedUs / 1e6));
      },
    });
    const entries = this.#entries;
    const latency = this.#latency;
    new Gauge({
      name: 'qpgate_slo_min_events',
      help: 'Events a window needs before the objective is judged over it; the burn-rate alerts want as many.',
      labelNames: ['slo'],
      registers: [registry],
      collect() {
        this.reset();
        for (const e of entries) this.set({ slo: e.config.name }, e.minEvents);
      },
    });
    new Gauge({
      name: 'qpgate_slo_objective_ratio',
      help: 'The fraction of events the objective wants at or below its threshold (percentile / 100).',
      labelNames: ['slo', 'latency'],
      registers: [registry],
      collect() {
        this.reset();
        for (const { config: o } of entries) this.set({ slo: o.name, latency: o.latency }, o.percentile / 100);
      },
    });
    new Gauge({
      name: 'qpgate_slo_threshold_seconds',
      help: 'The latency threshold of the objective.',
      labelNames: ['slo', 'latency'],
      registers: [registry],
      collect() {
        this.reset();
        for (const { config: o } of entries) this.set({ slo: o.name, latency: o.latency }, o.thresholdUs / 1e6);
      },
    });
    new Gauge({
      name: 'qpgate_slo_data_source',
      help: '1 when the objective\'s latency has a registered source, 0 while it has none.',
      labelNames: ['slo', 'latency'],
      registers: [registry],
      collect() {
        this.reset();
        for (const { config: o } of entries) this.set({ slo: o.name, latency: o.latency }, latency.has(o.latency) ? 1 : 0);
      },
    });
    const totals = () => this.eventTotals();
    new Counter({
      name: 'qpgate_slo_events_total',
      help: 'Events of the objective\'s latency since the gateway started.',
      labelNames: ['slo'],
      registers: [registry],
      collect() {
        this.reset();
        for (const t of totals()) if (t) this.inc({ slo: t.name }, t.events);
      },
    });
    new Counter({
      name: 'qpgate_slo_slow_events_total',
      help: 'Events slower than the objective\'s threshold since the gateway started.',
      labelNames: ['slo'],
      registers: [registry],
      collect() {
        this.reset();
        for (const t of totals()) if (t) this.inc({ slo: t.name }, t.slowEvents);
      },
    });
  }

  #attachSources(nowMs: number): void {
    for (const e of this.#entries) {
      if (!this.#latency.has(e.config.latency)) {
        // Unregistered: its history no longer means anything.
        e.evaluator = undefined;
        e.status = undefined;
        continue;
      }
      if (e.evaluator) continue;
      const name = e.config.latency;
      const latency = this.#latency;
      e.evaluator = new SloEvaluator(
        [{ name: e.config.name, latency: name, percentile: e.config.percentile, thresholdUs: e.config.thresholdUs, windowsSeconds: e.windowsSeconds, minEvents: e.minEvents }],
        { [name]: () => latency.read(name) ?? LatencyCounts.EMPTY },
      );
      // The first snapshot: windows are measured from here.
      e.status = e.evaluator.tick(nowMs)[0];
    }
  }

  #objectiveReport(e: Entry): SloObjectiveReport {
    const o = e.config;
    const base = { name: o.name, latency: o.latency, percentile: o.percentile, thresholdUs: o.thresholdUs, minEvents: e.minEvents };
    if (!this.#latency.has(o.latency)) {
      return { ...base, status: 'no data source', compliant: null, windows: [] };
    }
    if (!e.status) return { ...base, status: 'pending', compliant: null, windows: [] };
    return {
      ...base,
      status: !e.status.compliant ? 'violated' : e.status.windows.some((w) => w.judged) ? 'ok' : 'too few events',
      compliant: e.status.compliant,
      windows: e.status.windows.map((w) => ({ window: e.windowLabels.get(w.windowSeconds) ?? `${w.windowSeconds}s`, ...w })),
    };
  }
}
