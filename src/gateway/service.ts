// Starts and stops the gateway as one unit: the engine thread first (nothing
// else works without it), then the backend's device on it, the SLO evaluator
// and the control plane; on SIGTERM/SIGINT the reverse, so the last thing to
// go is the thread that owns the queue pairs:
//
//   1. not ready (/readyz 503), sessions stop accepting, feeds stop taking new work
//   2. sessions and feeds drain (journal flushed)      [ControlExtension.drain]
//   3. feeds and sessions close: multicast groups left, their QPs destroyed
//   4. the control plane stops taking requests and closes
//   5. the SLO timer stops; QPs still listed are destroyed; the device closes
//   6. the engine thread stops (joined, its memory freed); exit 0
import type { FastifyInstance } from 'fastify';
import type { GatewayConfig } from './config/schema.js';
import type { Logger } from './log.js';
import { buildControlPlane } from './control/app.js';
import { generateAdminToken, type Token } from './control/auth.js';
import { Engine, type EngineOptions } from '../native/engine.js';
import { watchEngineFaults } from '../native/engine-faults.js';
import type { ControlExtension, GatewayState } from './state.js';
import { VERSION } from './version.js';
import { openAlternateDevice, openGatewayDevice } from './device/device.js';
import { watchDeviceEvents } from './device/device-events.js';
import { QpRegistry } from './device/qp-registry.js';
import { LatencyRegistry } from './metrics/latency-registry.js';
import { SloService } from './slo/service.js';
import { startFeeds } from './feeds.js';
import { startOrders, type OrdersLifecycle } from './orders.js';
import { sessionsExtension } from './control/routes/sessions.js';
import { EngineHeartbeat } from './health.js';
import { lockStateDir } from './state-lock.js';
import { loadControlTls, PLAINTEXT_REPORT } from './control/tls.js';
import { EncryptionGuard, refuseUnprotectedFeedGroups } from './security/guard.js';

export interface Gateway {
  readonly state: GatewayState;
  readonly app: FastifyInstance;
  /** Base URL of the control plane, e.g. http://127.0.0.1:7470 (https:// with control.tls) */
  readonly url: string;
  /** Resolves with the process exit code once the gateway has shut down. */
  readonly closed: Promise<number>;
  close(reason?: string): Promise<void>;
}

export interface StartOptions {
  /** Install SIGTERM/SIGINT handlers (the CLI does; tests don't). */
  handleSignals?: boolean;
  /**
   * Called after the device is open and before the control plane is built:
   * where the feed and order-session services attach (state.feeds,
   * state.sessions, state.latency.registerLatency, state.qps).
   */
  attach?: (state: GatewayState) => void | Promise<void>;
  /** How long shutdown waits for sessions and feeds to drain. Default 5 s. */
  drainTimeoutMs?: number;
}

// long because: the one place the gateway's parts are wired, as Aeron's driver wires its agents,
// in start order, each with its close on the way out.
export async function startGateway(config: GatewayConfig, logger: Logger, options: StartOptions = {}): Promise<Gateway> {
  const log = logger.child({ component: 'gateway' });
  // control.tls's files first: a wrong certificate fails before the engine or any socket exists.
  const tls = loadControlTls(config.control.tls);
  // Config problems the schema cannot see (SLO windows vs interval) fail before anything starts.
  const latency = new LatencyRegistry();
  const slo = new SloService(config.slo, latency, (err) => log.error({ err }, 'SLO evaluation failed'));
  const engine = new Engine(engineOptions(config));
  engine.onRecordHandlerError(recordHandlerErrorLog(log));

  // Before anything is written under state.dir (admin.token, sessions.json, the journal).
  const stateLock = lockStateDir(config.state.dir);
  const placement = await engine.start().catch((err: unknown) => {
    stateLock.release();
    throw err;
  });
  log.info({ placement }, 'engine started');
  const stopFaultWatch = watchEngineFaults(engine, logger.child({ component: 'engine' }));

  const state: GatewayState = {
    config,
    engine,
    version: VERSION,
    startedAt: new Date(),
    logger,
    device: undefined,
    qps: new QpRegistry(),
    latency,
    slo,
    sessionProviders: [],
    metricSources: [],
    heartbeat: new EngineHeartbeat(engine, config.control.health.engineStaleMs),
    readinessChecks: [],
    controlTls: tls?.report ?? PLAINTEXT_REPORT,
    ready: false,
  };
  state.heartbeat.start();
  let app: FastifyInstance | undefined;
  let orders: OrdersLifecycle | undefined;
  let stopDeviceEvents = (): void => {};
  try {
    state.device = openGatewayDevice(config, engine);
    const port = state.device.queryPort();
    const { name, backend, gid, gidReport } = state.device;
    log.info({ device: name, backend, gid, gidReport: gidReport ?? undefined, portState: port.state, activeMtu: port.activeMtu }, 'device open');
    state.alternateDevice = openAlternateDevice(config, engine);
    if (state.alternateDevice !== undefined) {
      const alt = state.alternateDevice;
      log.info({ device: alt.name, gid: alt.gid, gidReport: alt.gidReport ?? undefined, portState: alt.queryPort().state }, 'alternate device open');
    }
    stopDeviceEvents = watchDeviceEvents(engine, { primary: state.device, alternate: state.alternateDevice }, state.sessionProviders, logger.child({ component: 'device' }));
    // ESP before the first packet: the feed's groups are checked here, each session when it opens.
    const alternate = state.alternateDevice?.address ?? config.backend.alternateAddress;
    const local = { primary: state.device.address ?? config.backend.address, ...(alternate !== undefined ? { alternate } : {}) };
    const security = await EncryptionGuard.start(config.security, local, config.backend.kind);
    state.security = security;
    state.metricSources.push((registry) => security.metrics(registry));
    if (config.security.ipsec) log.info({ security: security.report() }, 'ESP protection');
    await refuseUnprotectedFeedGroups(security, config.feeds);
    state.feeds = await startFeeds(state);
    orders = await startOrders(state);
    await options.attach?.(state);
    // /v1/sessions exists once some service serves a session role (order entry, feed recovery).
    if (state.sessions === undefined && state.sessionProviders.length > 0) {
      const summary = orders?.summary;
      state.sessions = sessionsExtension(state, summary ? { summary: () => ({ orders: summary() }) } : {});
    }

    const tokens: Token[] = [...config.control.tokens];
    if (tokens.length === 0) {
      const generated = generateAdminToken(config.state.dir);
      tokens.push(generated.token);
      log.warn({ path: generated.path }, 'no control-plane token configured: generated an admin token');
    }
    app = await buildControlPlane({ state, tokens, logger, ...(tls ? { https: tls.https, certificate: { subject: tls.report.subject ?? '', validTo: tls.report.validTo ?? '' } } : {}) });
    await app.listen({ host: config.control.host, port: config.control.port });
  } catch (err) {
    await app?.close().catch(() => undefined);
    await orders?.close().catch((e: unknown) => log.error({ err: e }, 'closing order entry after a failed start'));
    await Promise.resolve(state.feeds?.close?.()).catch(() => undefined);
    stopDeviceEvents();
    await releaseDevice(state, log).catch((e: unknown) => log.error({ err: e }, 'closing the device after a failed start'));
    await state.security?.close();
    state.heartbeat.stop();
    stopFaultWatch();
    await engine.stop();
    stateLock.release();
    throw err;
  }
  slo.start();
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.control.port;
  const host = config.control.host.includes(':') ? `[${config.control.host}]` : config.control.host;
  const url = `${tls ? 'https' : 'http'}://${host}:${port}`;
  state.ready = true;
  const unsourced = config.slo.objectives.filter((o) => !latency.has(o.latency)).map((o) => o.name);
  if (unsourced.length > 0) log.info({ objectives: unsourced }, 'SLOs without a latency source yet: listed as "no data source"');
  log.info({ url, tls: tls !== undefined, backend: config.backend.kind, device: config.backend.device }, 'qpgate ready');

  let resolveClosed!: (code: number) => void;
  const closed = new Promise<number>((resolve) => (resolveClosed = resolve));
  let closing: Promise<void> | undefined;
  const server = app;
  const drainTimeoutMs = options.drainTimeoutMs ?? 5000;
  const close = (reason = 'close requested'): Promise<void> => {
    closing ??= (async () => {
      log.info({ reason }, 'shutting down');
      state.ready = false;
      let code = 0;
      const step = async (what: string, fn: () => unknown): Promise<void> => {
        try {
          await fn();
        } catch (err) {
          log.error({ err, step: what }, 'error during shutdown');
          code = 1;
        }
      };
      // Order entry after the sessions route stopped taking sessions and before
      // the feed: its trades go out on the feed's publisher.
      type Stage = Pick<ControlExtension, 'stopAccepting' | 'drain' | 'close'>;
      const stages: Array<Stage | undefined> = [state.sessions, orders, state.feeds];
      const extensions = stages.filter((e): e is Stage => e !== undefined);
      for (const e of extensions) await step('stop accepting', () => e.stopAccepting?.());
      for (const e of extensions) await step('drain', () => e.drain?.(drainTimeoutMs));
      for (const e of extensions) await step('close', () => e.close?.());
      await step('control plane', () => server.close());
      slo.stop();
      stopDeviceEvents();
      await step('device', () => releaseDevice(state, log));
      await step('security', () => state.security?.close());
      state.heartbeat.stop();
      stopFaultWatch();
      await step('engine', () => engine.stop());
      stateLock.release();  // last: the journal and sessions.json are closed
      process.off('SIGTERM', onSignal);
      process.off('SIGINT', onSignal);
      log.info({ code }, 'stopped');
      resolveClosed(code);
    })();
    return closing;
  };
  // A second signal while the orderly shutdown runs (a stuck step, an impatient
  // operator) exits at once: everything acknowledged is already in the journal.
  const onSignal = (signal: NodeJS.Signals): void => {
    if (closing !== undefined) {
      log.warn({ signal }, 'second signal during shutdown: exiting now');
      process.exit(128 + (signal === 'SIGINT' ? 2 : 15));
    }
    void close(signal);
  };
  if (options.handleSignals ?? true) {
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  }
  return { state, app, url, closed, close };
}

async function releaseDevice(state: GatewayState, log: Logger): Promise<void> {
  const device = state.device;
  if (!device) return;
  const name = device.name;
  state.qps.destroyAll();
  state.device = undefined;
  device.close();
  log.info({ device: name }, 'device closed');
  const alternate = state.alternateDevice;
  state.alternateDevice = undefined;
  if (alternate !== undefined) {
    const alternateName = alternate.name;
    alternate.close();
    log.info({ device: alternateName }, 'alternate device closed');
  }
}

/**
 * Logs a throwing engine-record handler: the first throw of each second with
 * how many were not logged since (a handler that throws on every record must
 * not flood the log); all of them are counted (qpgate_engine_record_handler_errors_total).
 */
export function recordHandlerErrorLog(log: Logger, everyMs = 1000): (err: unknown, type: number) => void {
  let last = -Infinity;
  let unlogged = 0;
  return (err, type) => {
    const now = Date.now();
    if (now - last < everyMs) {
      unlogged++;
      return;
    }
    log.error({ err, recordType: type, unlogged }, 'an engine record handler threw; the record was skipped for it');
    last = now;
    unlogged = 0;
  };
}

/** The engine's options from the gateway config (`auto` leaves the choice to the engine). */
export function engineOptions(config: GatewayConfig): EngineOptions {
  const { engine, backend } = config;
  return {
    device: backend.device,
    ...(engine.cpus.length > 0 ? { cpus: engine.cpus.join(',') } : {}),
    ...(engine.idleStrategy !== 'auto' ? { idle: engine.idleStrategy } : {}),
    backoff: {
      maxSpins: engine.backoff.spins,
      maxYields: engine.backoff.yields,
      minParkNs: engine.backoff.minParkNs,
      maxParkNs: engine.backoff.maxParkNs,
    },
    lendWhenParked: engine.lendWhenParked,
    toEngineCapacity: engine.ringBytes,
    fromEngineCapacity: engine.ringBytes,
  };
}
