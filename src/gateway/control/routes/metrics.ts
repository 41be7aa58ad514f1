// GET /metrics in the Prometheus text format. Engine figures are read from
// the native counters when Prometheus scrapes, never per event: JS does no
// per-message metric work.
import type { FastifyInstance } from 'fastify';
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import type { GatewayState } from '../../state.js';

export function createRegistry(state: GatewayState): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'qpgate_' });
  const stats = () => state.engine.stats();

  // A counter whose value is a native running total, set on scrape.
  const nativeCounter = (name: string, help: string, read: () => number): void => {
    new Counter({
      name,
      help,
      registers: [registry],
      collect() {
        this.reset();
        this.inc(read());
      },
    });
  };
  nativeCounter('qpgate_engine_duty_cycles_total', 'Engine duty cycles run.', () => stats().dutyCycles);
  nativeCounter('qpgate_engine_idle_cycles_total', 'Engine duty cycles that found no work.', () => stats().idleCycles);
  nativeCounter('qpgate_engine_parks_total', 'Times the engine parked in epoll (backoff idle strategy).', () => stats().parks);
  nativeCounter('qpgate_engine_js_wakeups_total', 'Times the engine woke the JS thread (at most once per batch).', () => stats().jsWakes);
  nativeCounter(
    'qpgate_engine_cycles_over_threshold_total',
    'Engine duty cycles longer than the threshold (1 ms).',
    () => stats().cyclesOverThreshold,
  );
  new Counter({
    name: 'qpgate_engine_ring_records_total',
    help: 'Records through the JS <-> engine rings.',
    labelNames: ['ring'],
    registers: [registry],
    collect() {
      const s = stats();
      this.reset();
      this.inc({ ring: 'to_engine' }, s.recordsIn);
      this.inc({ ring: 'from_engine' }, s.recordsOut);
    },
  });
  new Gauge({
    name: 'qpgate_engine_ring_used_bytes',
    help: 'Bytes published to a ring and not yet consumed.',
    labelNames: ['ring'],
    registers: [registry],
    collect() {
      const s = stats();
      this.set({ ring: 'to_engine' }, s.toEngineUsed);
      this.set({ ring: 'from_engine' }, s.fromEngineUsed);
    },
  });
  new Gauge({
    name: 'qpgate_engine_duty_cycle_max_seconds',
    help: 'Longest engine duty cycle so far.',
    registers: [registry],
    collect() {
      this.set(stats().maxCycleNs / 1e9);
    },
  });
  new Gauge({
    name: 'qpgate_engine_running',
    help: '1 while the engine thread runs.',
    registers: [registry],
    collect() {
      this.set(state.engine.running ? 1 : 0);
    },
  });
  return registry;
}

export async function metricsRoutes(app: FastifyInstance, opts: { state: GatewayState }): Promise<void> {
  const registry = createRegistry(opts.state);
  app.get('/metrics', async (_request, reply) => {
    const body = await registry.metrics();
    return reply.type(registry.contentType).send(body);
  });
}
