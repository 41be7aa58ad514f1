// `qpgate status` and `qpgate qps`: read the control plane and print what
// ibstat / ibv_devinfo and `rdma res show qp` print, as aligned tables.
import { QP_METRICS, type QpCounterName } from '../declared/qp-counters.js';
import { DEFAULT_URL, getJson, type ClientOptions } from '../client/control-client.js';
import { table } from '../common/table.js';
import { formatNs } from '../common/units.js';
import type { TlsReport } from './control/tls.js';
import type { SecurityReport } from './security/guard.js';

// The parts of /v1/status the CLI prints.
interface QpRow {
  qpn: number;
  /** The gateway's device it is on (absent from an older gateway: the primary). */
  device?: 'primary' | 'alternate';
  type: string;
  state: string;
  owner: string;
  sqPsn: number;
  rqPsn: number;
  destQpNum: number;
  qkey: number;
  pathMtu: number;
  outstandingWrs: number | null;
  recvWrsPosted: number | null;
  /** Under their declared names (native/src/verbs/soft/qp_counters.def). */
  counters: Readonly<Record<string, number>>;
}
interface Status {
  version: string;
  uptimeSeconds: number;
  ready: boolean;
  control: { tls: TlsReport };
  device: {
    backend: string;
    device: string;
    numaNode: number;
    security?: SecurityReport | null;
    rdma:
      | { open: false }
      | {
          open: true;
          name: string;
          firmwareVersion: string;
          nodeGuid: string;
          transport: string;
          physPortCount: number;
          interface: { name: string; address: string; mtu: number };
          ports: Array<{ port: number; stateName: string; physicalState: string; linkLayer: string; activeMtu: number; maxMtu: number; gids: Array<{ index: number; gid: string; type: string }> }>;
        };
    engine: {
      threads: Array<{ role: string; tid: number; cpu: number; affinity: string; pinned: boolean; numaNode: number; idleStrategy: string }>;
      placement: { numaSource: string; memoryPolicy: string; hugePages: string; cpuReason: string };
    };
  };
  slo: {
    objectives: Array<{ name: string; status: string; percentile: number; thresholdUs: number; minEvents: number; windows: Array<{ window: string; observedUs: number; burnRate: number; events: number; judged: boolean }> }>;
  };
  feeds: { enabled: boolean; summary: unknown };
  sessions: { enabled: boolean; summary: unknown };
  qps: QpRow[];
}


// "Sessions: trading 1 connected of 2, risk 0 connected of 0, recovery ..." and the order service's line.
function formatSessions(sum: Record<string, unknown>): string[] {
  const order = ['trading', 'risk', 'recovery'];
  const rank = (r: string) => (order.includes(r) ? order.indexOf(r) : order.length);
  const roles = [...((sum['roles'] as string[] | undefined) ?? [])].sort((a, b) => rank(a) - rank(b));
  const byRole = (sum['sessions'] as Record<string, { total: number; connected: number }> | undefined) ?? {};
  const lines = [`Sessions: ${roles.map((r) => `${r} ${byRole[r]?.connected ?? 0} connected of ${byRole[r]?.total ?? 0}`).join(', ') || 'no roles served'}`];
  const o = sum['orders'] as Record<string, unknown> | undefined;
  if (o !== undefined && typeof o['journal'] === 'string') {
    lines.push(
      `\torders: journal ${o['journal']} (fsync ${String(o['fsync'])}), ${String(o['instruments'])} instruments, ${String(o['accounts'])} accounts; ` +
        `received ${String(o['received'])}, acks ${String(o['acks'])}, rejects ${String(o['rejects'])}, fills ${String(o['fills'])}, open orders ${String(o['openOrders'])}` +
        (Array.isArray(o['handlers']) && o['handlers'].length > 0 ? `; handlers ${o['handlers'].join(', ')}` : ''),
    );
  }
  return lines;
}

export function formatStatus(s: Status, url: string): string {
  const out: string[] = [];
  out.push(`Gateway qpgate ${s.version} at ${url}: ${s.ready ? 'ready' : 'not ready'}, up ${Math.round(s.uptimeSeconds)} s`);
  out.push(formatControlTls(s.control.tls));
  const d = s.device;
  if (d.security) out.push(...formatSecurity(d.security));
  if (d.rdma.open) {
    const r = d.rdma;
    out.push(`CA '${r.name}'`, `\tBackend: ${d.backend} (${r.transport})`, `\tFirmware version: ${r.firmwareVersion}`, `\tNode GUID: ${r.nodeGuid}`, `\tNumber of ports: ${r.physPortCount}`);
    out.push(`\tNetdev: ${r.interface.name} ${r.interface.address} mtu ${r.interface.mtu}`);
    for (const p of r.ports) {
      out.push(`\tPort ${p.port}:`, `\t\tState: ${p.stateName}`, `\t\tPhysical state: ${p.physicalState}`, `\t\tLink layer: ${p.linkLayer}`);
      out.push(`\t\tActive MTU: ${p.activeMtu}`, `\t\tMax MTU: ${p.maxMtu}`);
      for (const g of p.gids) out.push(`\t\tGID[${g.index}]: ${g.gid} (${g.type})`);
    }
  } else {
    out.push(`CA: none open (backend ${d.backend}, device ${d.device})`);
  }
  out.push('Placement:');
  for (const t of d.engine.threads) {
    out.push(`\t${t.role}: tid ${t.tid}, CPU ${t.cpu}${t.pinned ? ' (pinned)' : ' (not pinned)'}, affinity ${t.affinity}, NUMA node ${t.numaNode}, idle ${t.idleStrategy}`);
  }
  out.push(`\tNUMA: ${d.engine.placement.numaSource}`, `\tMemory: ${d.engine.placement.memoryPolicy}; huge pages: ${d.engine.placement.hugePages}`);
  out.push('SLOs:');
  if (s.slo.objectives.length === 0) out.push('\tnone configured');
  for (const o of s.slo.objectives) {
    const w = o.windows
      .map((x) => (x.judged ? `${x.window} p${o.percentile}=${x.observedUs}µs burn ${x.burnRate.toFixed(2)}` : `${x.window} ${x.events} of ${o.minEvents} events`))
      .join(', ');
    out.push(`\t${o.name}: ${o.status} (p${o.percentile} ≤ ${o.thresholdUs} µs)${w ? `; ${w}` : ''}`);
  }
  out.push(...formatFeeds(s.feeds));
  out.push(...(s.sessions.enabled ? formatSessions(s.sessions.summary as Record<string, unknown>) : ['Sessions: not enabled']));
  const byState = new Map<string, number>();
  for (const q of s.qps) byState.set(q.state, (byState.get(q.state) ?? 0) + 1);
  out.push(`QPs: ${s.qps.length}${byState.size ? ` (${[...byState].map(([k, v]) => `${k} ${v}`).join(', ')})` : ''}`);
  return out.join('\n');
}

/** `Encryption: esp rfc4106(gcm(aes)) transport (keys), required`, then one line per SA and per peer checked. */
export function formatSecurity(s: SecurityReport): string[] {
  if (s.mode === 'none') return [`Encryption: none${s.requireEncryption ? ' (required: every session is refused)' : ''}`];
  const lines = [`Encryption: ${s.algorithm} (${s.mode}), ${s.requireEncryption ? 'required' : 'not required'}`];
  for (const sa of s.sas) lines.push(`\tSA ${sa.dir} ${sa.src} -> ${sa.dst} spi ${sa.spiHex} aes-${sa.keyBits}`);
  for (const p of s.peers) {
    const from = p.link === 'alternate' ? ` (alternate link, from ${p.local})` : '';
    lines.push(`\tPeer ${p.address}${from}: ${p.covered ? 'covered' : `NOT covered (${p.reason})`}`);
  }
  return lines;
}

function formatControlTls(tls: TlsReport): string {
  if (!tls.enabled) return 'Control plane: http (no TLS)';
  return `Control plane: https, certificate ${tls.subject} from ${tls.certFile}, issuer ${tls.issuer}, valid until ${tls.validTo}, client certificates ${tls.clientCertificates}`;
}

interface FeedsSummary {
  count: number;
  feeds: Array<{
    name: string;
    running: boolean;
    session: number | null;
    channels: Array<{ id: number; groupA: string; groupB?: string; stats: { frames: number; messages: number; heartbeats: number; nextSeq: number } | null }>;
    publishLatency: { count: number; p50Ns: number; p99Ns: number } | null;
    qp: { qpn: number; state: string } | null;
  }>;
}

function formatFeeds(feeds: { enabled: boolean; summary?: unknown }): string[] {
  if (!feeds.enabled) return ['Feeds: not enabled'];
  const summary = feeds.summary as FeedsSummary;
  const out = [`Feeds: ${summary.count}`];
  for (const f of summary.feeds) {
    const qp = f.qp ? `, QP ${f.qp.qpn} (${f.qp.state})` : '';
    out.push(`	${f.name}: ${f.running ? 'publishing' : 'stopped'}, session ${f.session ?? '-'}${qp}`);
    for (const c of f.channels) {
      const groups = c.groupB ? `${c.groupA}/${c.groupB}` : c.groupA;
      const st = c.stats;
      out.push(`		channel ${c.id} (${groups})${st ? `: next seq ${st.nextSeq}, ${st.messages} messages in ${st.frames} frames, ${st.heartbeats} heartbeats` : ''}`);
    }
    const l = f.publishLatency;
    if (l && l.count > 0) out.push(`		publish latency: p50 ${formatNs(l.p50Ns)}, p99 ${formatNs(l.p99Ns)} (${l.count} samples)`);
  }
  return out;
}

// The counter columns of `qpgate qps`: a declared counter under its own name,
// or a qpgate_qp_* family's sum (the NAKs of every code) under the family's.
const qpCounterColumn = (name: QpCounterName): [string, (c: QpRow['counters']) => number] => [name.toUpperCase(), (c) => c[name] ?? 0];
const qpFamilyColumn = (family: (typeof QP_METRICS)[number]['name']): [string, (c: QpRow['counters']) => number] => {
  const counters = QP_METRICS.find((f) => f.name === family)!.counters.map((x) => x.counter);
  return [family.replace(/^qpgate_qp_(.*)_total$/, '$1').toUpperCase(), (c) => counters.reduce((n, k) => n + (c[k] ?? 0), 0)];
};
const QP_COUNTER_COLUMNS = [
  qpCounterColumn('sent_pkts'),
  qpCounterColumn('rcvd_pkts'),
  qpCounterColumn('retransmitted_pkts'),
  qpCounterColumn('timeouts'),
  qpFamilyColumn('qpgate_qp_naks_received_total'),
  qpFamilyColumn('qpgate_qp_naks_sent_total'),
  qpCounterColumn('rcvd_rnr_err'),
  qpCounterColumn('rnr_naks_sent'),
];

export function formatQps(qps: QpRow[]): string {
  if (qps.length === 0) return 'no queue pairs';
  return table(
    ['LQPN', 'DEVICE', 'TYPE', 'STATE', 'SQ-PSN', 'RQ-PSN', 'DQPN', 'QKEY', 'MTU', 'SQ-WR', 'RQ-WR', ...QP_COUNTER_COLUMNS.map(([h]) => h), 'OWNER'],
    qps.map((q) => [
      q.qpn,
      q.device ?? 'primary',
      q.type,
      q.state,
      q.sqPsn,
      q.rqPsn,
      q.destQpNum,
      `0x${q.qkey.toString(16).padStart(8, '0')}`,
      q.pathMtu,
      q.outstandingWrs ?? '-',
      q.recvWrsPosted ?? '-',
      ...QP_COUNTER_COLUMNS.map(([, read]) => read(q.counters)),
      q.owner,
    ]),
  );
}

export async function statusCommand(opts: ClientOptions & { json?: boolean }): Promise<string> {
  const s = await getJson<Status>(opts, '/v1/status');
  return opts.json ? JSON.stringify(s, null, 2) : formatStatus(s, (opts.url ?? DEFAULT_URL).replace(/\/+$/, ''));
}

export async function qpsCommand(opts: ClientOptions & { json?: boolean }): Promise<string> {
  const r = await getJson<{ qps: QpRow[] }>(opts, '/v1/qps');
  return opts.json ? JSON.stringify(r.qps, null, 2) : formatQps(r.qps);
}
