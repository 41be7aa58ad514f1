// What the control plane may see of the running gateway. Kept as a narrow
// interface so the control plane never reaches into the engine's internals.
import type { FastifyPluginAsync } from 'fastify';
import type { Registry } from 'prom-client';
import type { GatewayConfig } from './config/schema.js';
import type { Logger } from './log.js';
import type { Device } from '../native/verbs.js';
import type { Engine } from '../native/engine.js';
import type { QpRegistry } from './device/qp-registry.js';
import type { LatencyRegistry } from './metrics/latency-registry.js';
import type { SloService } from './slo/service.js';
import type { SessionProvider } from '../common/session-provider.js';
import type { FeedService } from '../feed/service.js';
import type { EngineHeartbeat } from './health.js';
import type { TlsReport } from './control/tls.js';
import type { EncryptionGuard } from './security/guard.js';

/**
 * A feature that plugs into the control plane: the feed service (/v1/feeds)
 * and the order-session service (/v1/sessions). Set it in GatewayState before
 * the control plane is built; while it is absent, /v1/<feature> answers 404
 * "<feature> are not enabled".
 */
export interface ControlExtension {
  /** Routes registered under /v1/<feature> (the prefix is applied by the control plane). */
  readonly routes: FastifyPluginAsync<{ state: GatewayState }>;
  /** A JSON summary for `qpgate status` and the status page (feeds, their rates; sessions...). */
  summary(): unknown;
  /** Registers the feature's metric families (collected on scrape) in the /metrics registry. */
  exportMetrics?(registry: Registry): void;
  /** Shutdown, step 1: refuse new work (new sessions, new feeds). */
  stopAccepting?(): void;
  /** Shutdown, step 2: finish or hand off work in flight (flush the journal). */
  drain?(timeoutMs: number): Promise<void>;
  /** Shutdown, step 3: release device resources (leave multicast groups, destroy QPs). */
  close?(): Promise<void>;
}

export interface GatewayState {
  readonly config: GatewayConfig;
  readonly engine: Engine;
  readonly version: string;
  readonly startedAt: Date;
  readonly logger: Logger;
  /** The backend's verbs device; opened after the engine starts, closed before it stops. */
  device: Device | undefined;
  /** backend.alternateDevice (ibv): the second device trading and risk sessions may open on; opened and closed with `device`. */
  alternateDevice?: Device | undefined;
  /** The QPs the gateway made (the bindings cannot list a device's QPs). */
  readonly qps: QpRegistry;
  /** Latency histograms (engine counters) by name: /metrics and the SLOs read them. */
  readonly latency: LatencyRegistry;
  readonly slo: SloService;
  /** Extension points: set by the feed and order-entry services when they exist. */
  feeds?: ControlExtension;
  sessions?: ControlExtension;
  /**
   * Who serves each session role of POST /v1/sessions: order entry registers
   * 'trading' and 'risk', the feed's recovery service 'recovery'
   * (`state.sessionProviders.push(provider)` before the control plane is built).
   */
  readonly sessionProviders: SessionProvider[];
  /** The running feed (set by startFeeds): order entry publishes trades and book levels on its publisher. */
  feedService?: FeedService;
  /**
   * Metrics a service adds to /metrics: called once with the control plane's
   * registry when it is built (collect() callbacks read native counters on scrape).
   */
  readonly metricSources: Array<(registry: Registry) => void>;
  /** The engine's duty-cycle heartbeat (/healthz). */
  readonly heartbeat: EngineHeartbeat;
  /**
   * What /readyz asks besides the heartbeat and `ready`: each returns why the
   * gateway is not ready (order entry: "order journal failed: ..."), or undefined.
   */
  readonly readinessChecks: Array<() => string | undefined>;
  /** The control plane's https certificate (control.tls), or `{enabled: false}` for http. */
  readonly controlTls: TlsReport;
  /** The ESP guard (security): set once the device is open, before any feed or session starts. */
  security?: EncryptionGuard;
  /** False until every component has started, and again once shutdown begins. */
  ready: boolean;
}
