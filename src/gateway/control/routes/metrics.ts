// GET /metrics in the Prometheus text format. Engine figures are read from
// the native counters when Prometheus scrapes, never per event: JS does no
// per-message metric work.
import type { FastifyInstance, onRequestHookHandler } from 'fastify';
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import type { GatewayState } from '../../state.js';
import { errorResponses } from '../errors.js';
import type { QpView } from '../../device/qp-registry.js';
import { QP_METRICS } from '../../../declared/qp-counters.js';
import { ENGINE_METRICS } from '../../../declared/engine-counters.js';
import { registerDeclaredFamilies } from '../../../common/declared-metrics.js';
import { hwCounters } from '../../device/device.js';

export function createRegistry(state: GatewayState): Registry {
  const registry = new Registry();
  // Node's standard metrics under their usual names (process_cpu_seconds_total,
  // nodejs_heap_size_used_bytes...), so the usual Node dashboards work as they are.
  collectDefaultMetrics({ register: registry });
  new Gauge({
    name: 'qpgate_build_info',
    help: 'Always 1; the labels say which qpgate runs: its version, the Node.js version and the backend.',
    labelNames: ['version', 'node', 'backend'],
    registers: [registry],
  }).set({ version: state.version, node: process.version, backend: state.config.backend.kind }, 1);
  const stats = () => state.engine.stats();

  registerDeclaredFamilies(registry, ENGINE_METRICS, [], () => [[{}, stats()]]);
  new Counter({
    name: 'qpgate_engine_record_handler_errors_total',
    help: 'fromEngine record handlers (JS) that threw: the record was skipped for that handler, logged, and the gateway went on.',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(state.engine.recordHandlerErrors);
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
    name: 'qpgate_engine_heartbeat_age_seconds',
    help: 'Time since the engine last completed a duty cycle, as /healthz sees it (control.health.engineStaleMs is the limit).',
    registers: [registry],
    collect() {
      this.set(state.heartbeat.ageMs() / 1000);
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
  deviceMetrics(registry, state);
  qpMetrics(registry, state);
  state.latency.exportTo(registry);
  for (const add of state.metricSources) add(registry);
  state.slo.exportTo(registry);
  state.feeds?.exportMetrics?.(registry);
  state.sessions?.exportMetrics?.(registry);
  return registry;
}

// Device counters by family. Names the native side adds later land in the
// generic families (drops by reason, net events), so nothing is lost.
const WIRE_OK = new Set(['accepted', 'cnp']);
const INGRESS_OK = new Set(['delivered', 'icrc_unverifiable', 'cnp_ignored']);
const NET_DIRECTIONAL = ['packets', 'bytes', 'syscalls', 'errors'];

// long because: one declaration per device metric family (net, async events, wire, ingress), each a
// few lines over the same counters() snapshot; split by family it would pass that closure around.
function deviceMetrics(registry: Registry, state: GatewayState): void {
  const counters = () => state.device?.counters();
  const counter = (
    name: string,
    help: string,
    labelNames: string[],
    fill: (inc: (labels: Record<string, string>, v: number) => void, c: NonNullable<ReturnType<typeof counters>>) => void,
  ): void => {
    new Counter({
      name,
      help,
      labelNames,
      registers: [registry],
      collect() {
        this.reset();
        const c = counters();
        if (c) fill((labels, v) => this.inc(labels, v), c);
      },
    });
  };
  for (const what of NET_DIRECTIONAL) {
    counter(`qpgate_net_${what}_total`, `Device socket ${what} by direction (tx, rx).`, ['direction'], (inc, c) => {
      for (const dir of ['tx', 'rx']) {
        const v = c.net[`${dir}_${what}`];
        if (v !== undefined) inc({ direction: dir }, v);
      }
    });
  }
  counter('qpgate_net_events_total', 'Other device socket events (tx_queue_full, tx_sport_fallback, rx_truncated, rx_not_ipv4...).', ['event'], (inc, c) => {
    for (const [k, v] of Object.entries(c.net)) {
      const m = /^(tx|rx)_(.*)$/.exec(k);
      if (k === 'tx_sockets' || (m && NET_DIRECTIONAL.includes(m[2]!))) continue;
      inc({ event: k }, v);
    }
  });
  new Gauge({
    name: 'qpgate_net_tx_sockets',
    help: 'Sockets the device sends from (one per RoCEv2 source port in use).',
    registers: [registry],
    collect() {
      this.reset();
      const c = counters();
      if (c?.net['tx_sockets'] !== undefined) this.set(c.net['tx_sockets']);
    },
  });
  counter('qpgate_device_async_events_total', 'Async events the engine took from an ibv device (port, QP, CQ, SRQ), by type.', ['type'], (inc, c) => {
    for (const [k, v] of Object.entries(c.asyncEvents)) if (k !== 'lost') inc({ type: k }, v);
  });
  counter('qpgate_device_async_events_lost_total', 'Async events dropped because nothing took them from the engine in time.', [], (inc, c) => {
    inc({}, c.asyncEvents['lost'] ?? 0);
  });
  counter(
    'qpgate_device_completion_events_total',
    "Completion events the engine took from an ibv device's completion channel (each woke it or re-armed a CQ).",
    [],
    (inc, c) => inc({}, c.completionEvents.events),
  );
  counter('qpgate_device_completion_event_errors_total', "Failures to take an ibv device's completion events (ibv_get_cq_event, ibv_req_notify_cq).", [], (inc, c) =>
    inc({}, c.completionEvents.errors),
  );
  new Gauge({
    name: 'qpgate_device_hw_counter',
    help: "An ibv device's own counters (sysfs hw_counters, as `rdma statistic` shows them), by name.",
    labelNames: ['name'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [name, v] of Object.entries(hwCounters(state.device))) this.set({ name }, v);
    },
  });
  counter('qpgate_wire_accepted_packets_total', 'Datagrams that decoded as RoCEv2 with a good ICRC.', [], (inc, c) => inc({}, c.wire['accepted'] ?? 0));
  counter('qpgate_wire_cnp_packets_total', 'Congestion notification packets received.', [], (inc, c) => inc({}, c.wire['cnp'] ?? 0));
  counter('qpgate_ingress_delivered_packets_total', 'Packets handed to a QP (a multicast packet once per attached QP).', [], (inc, c) =>
    inc({}, c.ingress['delivered'] ?? 0),
  );
  counter(
    'qpgate_ingress_icrc_unverifiable_packets_total',
    'Packets accepted although their ICRC could not be verified (icrcPolicy count-unverifiable).',
    [],
    (inc, c) => inc({}, c.ingress['icrc_unverifiable'] ?? 0),
  );
  counter(
    'qpgate_packet_drops_total',
    'Packets dropped, by stage (wire: decode and ICRC; ingress: QP lookup and checks) and reason (icrc_mismatch, bad_qkey, unknown_opcode, ...).',
    ['stage', 'reason'],
    (inc, c) => {
      for (const [k, v] of Object.entries(c.wire)) if (!WIRE_OK.has(k)) inc({ stage: 'wire', reason: k }, v);
      for (const [k, v] of Object.entries(c.ingress)) if (!INGRESS_OK.has(k)) inc({ stage: 'ingress', reason: k }, v);
    },
  );
  new Gauge({
    name: 'qpgate_device_port_active',
    help: '1 while the device port is PORT_ACTIVE.',
    labelNames: ['device', 'port'],
    registers: [registry],
    collect() {
      this.reset();
      const d = state.device;
      if (d) this.set({ device: d.name, port: '1' }, d.queryPort(1).state === 'PORT_ACTIVE' ? 1 : 0);
    },
  });
  new Gauge({
    name: 'qpgate_device_info',
    help: 'The open device (value 1): backend, name, GID and active MTU as labels.',
    labelNames: ['backend', 'device', 'gid', 'active_mtu'],
    registers: [registry],
    collect() {
      this.reset();
      const d = state.device;
      if (d) this.set({ backend: d.backend, device: d.name, gid: d.gid, active_mtu: String(d.queryPort(1).activeMtu) }, 1);
    },
  });
}

export const QP_STATES = ['RESET', 'INIT', 'RTR', 'RTS', 'SQD', 'SQE', 'ERR'] as const;

// Per-QP series carry a `qpn` label only while the QP exists: every family is
// reset and refilled from the registry on each scrape.
function qpMetrics(registry: Registry, state: GatewayState): void {
  // One query per QP per scrape, shared by the families below: qpgate_qps is
  // registered (so collected) first and takes the snapshot the rest read.
  let views: QpView[] = [];
  const list = (): QpView[] => views;
  new Gauge({
    name: 'qpgate_qps',
    help: 'Queue pairs by type and state.',
    labelNames: ['type', 'state'],
    registers: [registry],
    collect() {
      views = state.qps.list();
      this.reset();
      const n = new Map<string, number>();
      for (const q of list()) n.set(`${q.type}/${q.state}`, (n.get(`${q.type}/${q.state}`) ?? 0) + 1);
      for (const [k, v] of n) {
        const [type, st] = k.split('/') as [string, string];
        this.set({ type, state: st }, v);
      }
    },
  });
  new Gauge({
    name: 'qpgate_qp_state',
    help: 'QP state as a number (RESET 0, INIT 1, RTR 2, RTS 3, SQD 4, SQE 5, ERR 6); the name is the state label.',
    // device: QPNs are per device (an ibv gateway's backend.alternateDevice has QPs of its own).
    labelNames: ['qpn', 'device', 'type', 'owner', 'state'],
    registers: [registry],
    collect() {
      this.reset();
      for (const q of list()) this.set({ qpn: String(q.qpn), device: q.device, type: q.type, owner: q.owner, state: q.state }, QP_STATES.indexOf(q.state as never));
    },
  });
  const qpCounter = (name: string, help: string, labelNames: string[], fill: (q: QpView, inc: (l: Record<string, string>, v: number) => void) => void) =>
    new Counter({
      name,
      help,
      labelNames: ['qpn', 'device', ...labelNames],
      registers: [registry],
      collect() {
        this.reset();
        for (const q of list()) fill(q, (l, v) => this.inc({ qpn: String(q.qpn), device: q.device, ...l }, v));
      },
    });
  // The qpgate_qp_* counters are declared with the counters they export
  // (native/src/verbs/soft/qp_counters.def, through src/declared/qp-counters.ts).
  for (const family of QP_METRICS) {
    qpCounter(family.name, family.help, family.labelName === '' ? [] : [family.labelName], (q, inc) => {
      for (const { counter, label } of family.counters) inc(label === '' ? {} : { [family.labelName]: label }, q.counters[counter] ?? 0);
    });
  }
}

/**
 * qpgate_control_requests_total{method,route,status}: every answer of the
 * control plane, so refused input (400, 401, 403, 404, 409) shows in metrics.
 * `route` is the route pattern ('/v1/feeds/:name'), 'unmatched' for a 404 of no route.
 */
export function countControlRequests(app: FastifyInstance, registry: Registry): void {
  const requests = new Counter({
    name: 'qpgate_control_requests_total',
    help: 'Control-plane requests answered, by method, route pattern and status code.',
    labelNames: ['method', 'route', 'status'],
    registers: [registry],
  });
  app.addHook('onResponse', async (request, reply) => {
    requests.inc({ method: request.method, route: request.routeOptions.url ?? 'unmatched', status: String(reply.statusCode) });
  });
}

/**
 * qpgate_control_tls_handshake_failures_total{reason}: TLS handshakes the
 * https server refused ('tlsClientError': a client that did not trust our
 * certificate, or spoke plain http to it), and client certificates it refused
 * (client-certificates.ts: NO_CLIENT_CERTIFICATE, CERT_HAS_EXPIRED, ...).
 * `reason` is Node's error code (ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE, ECONNRESET, ...).
 * Registered on http too (where it stays empty), so /metrics has one set of names.
 * Returns what counts one more refusal.
 */
export function countTlsHandshakeFailures(app: FastifyInstance, registry: Registry): (reason: string) => void {
  const failures = new Counter({
    name: 'qpgate_control_tls_handshake_failures_total',
    help: 'TLS handshakes the control plane refused or that failed, and client certificates it refused, by error code.',
    labelNames: ['reason'],
    registers: [registry],
  });
  app.server.on('tlsClientError', (err: NodeJS.ErrnoException) => {
    failures.inc({ reason: err.code ?? 'unknown' });
    app.log.debug({ err }, 'TLS handshake failed');
  });
  return (reason) => failures.inc({ reason });
}

/**
 * qpgate_control_tls_certificate_expiry_timestamp_seconds{subject}: when the
 * certificate the control plane serves expires (its notAfter). The gateway
 * refuses to start with an expired one (tls.ts), but one can expire while it
 * runs, and from then on every client refuses it: the alerts in
 * config/prometheus/alerts.yaml fire two weeks before and once it has.
 * No sample on http.
 */
export function exportCertificateExpiry(registry: Registry, certificate?: { subject: string; validTo: string }): void {
  const expiry = new Gauge({
    name: 'qpgate_control_tls_certificate_expiry_timestamp_seconds',
    help: 'When the certificate the control plane serves expires (notAfter, Unix seconds); no sample on http.',
    labelNames: ['subject'],
    registers: [registry],
  });
  if (certificate !== undefined) expiry.set({ subject: certificate.subject }, Date.parse(certificate.validTo) / 1000);
}

export async function metricsRoutes(
  app: FastifyInstance,
  opts: { state: GatewayState; registry: Registry; authenticate?: onRequestHookHandler },
): Promise<void> {
  const { registry } = opts;
  // control.metricsAuth 'token': any token (a read scope suffices), as Prometheus's bearer_token_file sends it.
  const schema = {
    tags: ['health'],
    summary: 'Prometheus metrics (text exposition format)',
    description: opts.authenticate
      ? 'Needs a bearer token of any scope (control.metricsAuth: token): the series name QPNs and sessions.'
      : 'Open (control.metricsAuth: none).',
    ...(opts.authenticate ? { security: [{ bearerAuth: [] }], 'x-qpgate-scope': 'read' as const } : { security: [] }),
    response: {
      200: { description: 'the metrics', content: { 'text/plain': { schema: { type: 'string' } } } },
      ...(opts.authenticate ? errorResponses(401) : {}),
    },
  };
  app.get('/metrics', opts.authenticate ? { onRequest: opts.authenticate, schema } : { schema }, async (_request, reply) => {
    const body = await registry.metrics();
    return reply.type(registry.contentType).send(body);
  });
}
