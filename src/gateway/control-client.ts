// `qpgate status` and `qpgate qps`: read the control plane and print what
// ibstat / ibv_devinfo and `rdma res show qp` print, as aligned tables.
import { Option, type Command } from 'commander';
import { IbvOpenError, type OpenDeviceOptions, type OpenIbvDeviceOptions } from '../native/verbs.js';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ibvFix } from '../native/ibv-fix.js';
import { table } from './table.js';
import { QP_METRICS, type QpCounterName } from '../declared/qp-counters.js';
import { formatNs } from './units.js';
import type { TlsReport } from './control/tls.js';
import type { SecurityReport } from './security/guard.js';
import { controlFetch, fetchFailure, type ControlTlsOptions } from '../http/control-fetch.js';

export const DEFAULT_URL = 'http://127.0.0.1:7470';

/** A command that talks to a running gateway's control plane: --url, --token and --config (for state.dir's admin.token). */
/**
 * --receive-mode for a client's own soft device: against a gateway on rxe or
 * a NIC (IPv4 ID not 0) only af-packet verifies the ICRC (docs/protocol.md §1.8).
 */
export function receiveModeOption(): Option {
  return new Option(
    '--receive-mode <mode>',
    "our soft device's receive path: af-packet sees each packet's real IP header, so the ICRC of a gateway on rxe or a NIC verifies (needs CAP_NET_RAW)",
  )
    .choices(['plain-udp', 'af-packet'])
    .default('plain-udp');
}

/** A client's own device, named as the gateway's config names its own (backend.kind, backend.device, backend.gidIndex). */
export interface ClientDeviceFlags {
  backend: 'soft' | 'ibv';
  device?: string;
  gidIndex?: string;
  ibPort?: string;
  address: string;
  /** --alternate-address (order, risk, subscribe): a second address of our soft device. */
  alternateAddress?: string;
  receiveMode?: 'plain-udp' | 'af-packet';
}

/**
 * --alternate-address: the client's counterpart of backend.alternateAddress.
 * With both, the RC session has an alternate path (docs/protocol.md §1.10).
 */
export function alternateAddressOption(): Option {
  return new Option(
    '--alternate-address <ipv4>',
    "a second address of our soft device (another link): with a gateway that has backend.alternateAddress, the RC session migrates to it when the primary path fails",
  );
}

/**
 * --backend, --device, --ib-port and --gid-index: what a client opens, as
 * backend.kind, backend.device, backend.port and backend.gidIndex say for the
 * gateway. --ib-port, as ibv_rc_pingpong's: pingpong's --port is its TCP port.
 */
export function addClientDeviceOptions(command: Command): Command {
  return command
    .addOption(new Option('--backend <kind>', "our device: 'soft' (RoCEv2 in user space on --address) or 'ibv' (libibverbs: --device)").choices(['soft', 'ibv']).default('soft'))
    .option('--device <name>', "ibv: the RDMA device ('rxe0', 'mlx5_0'; ibv_devices lists them)")
    .option('--ib-port <n>', 'ibv: the port of the device (default 1; ibv_devinfo lists them)')
    .option('--gid-index <n>', "ibv: the source GID entry (default: the RoCE v2 IPv4-mapped GID of the port's interface)");
}

/** openDevice's options for the flags of addClientDeviceOptions; a ClientError names what is missing. */
export function clientDevice(flags: ClientDeviceFlags): OpenDeviceOptions | OpenIbvDeviceOptions {
  if (flags.backend !== 'ibv') {
    if (flags.device !== undefined || flags.gidIndex !== undefined || flags.ibPort !== undefined) {
      throw new ClientError('--device, --ib-port and --gid-index are for --backend ibv (the soft device is on --address)');
    }
    const alternate = flags.alternateAddress;
    if (alternate !== undefined && alternate === flags.address) throw new ClientError(`--alternate-address ${alternate} is --address: give a second address (another link)`);
    return { address: flags.address, receiveMode: flags.receiveMode, ...(alternate !== undefined ? { alternateAddress: alternate } : {}) };
  }
  if (flags.alternateAddress !== undefined) {
    throw new ClientError('--alternate-address is for --backend soft: the ibv backend has no automatic path migration (rxe has none)');
  }
  if (flags.device === undefined) throw new ClientError('--backend ibv needs --device, the RDMA device (ibv_devices lists them)');
  const port = flags.ibPort === undefined ? undefined : Number(flags.ibPort);
  if (port !== undefined && (!/^[0-9]+$/.test(flags.ibPort!) || port < 1 || port > 255)) {
    throw new ClientError(`--ib-port must be a port number of the device (1..255), got ${JSON.stringify(flags.ibPort)}`);
  }
  const gidIndex = flags.gidIndex === undefined ? undefined : Number(flags.gidIndex);
  if (gidIndex !== undefined && (!/^[0-9]+$/.test(flags.gidIndex!) || gidIndex > 255)) {
    throw new ClientError(`--gid-index must be a GID table entry (0..255), got ${JSON.stringify(flags.gidIndex)}`);
  }
  return { kind: 'ibv', name: flags.device, ...(port !== undefined ? { port } : {}), ...(gidIndex !== undefined ? { gidIndex } : {}) };
}

/** Where the client's device is, for its error messages. */
export function clientDeviceName(flags: ClientDeviceFlags): string {
  return flags.backend === 'ibv' ? `the ibv device ${flags.device ?? '(none)'}` : flags.address;
}

export function controlPlaneCommand(program: Command, name: string, description: string, urlHelp = 'the control plane'): Command {
  return program
    .command(name)
    .description(description)
    .option('--url <url>', urlHelp, DEFAULT_URL)
    .option('--token <token>', 'bearer token (default: $QPGATE_TOKEN, else <state.dir>/admin.token)')
    .option('--ca <file>', "PEM CA that signed an https gateway's certificate (default: $QPGATE_CA, else Node's root CAs)")
    .option('--cert <file>', 'PEM client certificate, for a gateway that requires one (control.tls.clientCaFile; default: $QPGATE_CERT)')
    .option('--key <file>', 'PEM key of --cert (default: $QPGATE_KEY)')
    .option('-c, --config <file>', 'the config the gateway runs with (for state.dir)');
}

export class ClientError extends Error {}

/** A client's ibv device that would not open: exit 2, one line naming the device, the port and the fix. */
export class ClientDeviceError extends ClientError {}

/** The ClientDeviceError for `err` if it is an ibv device's failure to open (IbvOpenError, maybe as a cause), else undefined. */
export function clientDeviceFailure(err: unknown): ClientDeviceError | undefined {
  let e: unknown = err;
  while (e instanceof Error && !(e instanceof IbvOpenError)) e = e.cause;
  if (!(e instanceof IbvOpenError)) return undefined;
  const fix = ibvFix(e.code, e.message, { device: '--device', port: '--ib-port', gidIndex: '--gid-index' });
  return new ClientDeviceError(`cannot open the ibv device ${e.device} port ${e.port}: ${e.message} (${fix})`);
}

export interface ClientOptions {
  url?: string;
  token?: string;
  /** Files: the CA to verify an https gateway with, and a client certificate and key. */
  ca?: string;
  cert?: string;
  key?: string;
  config?: string;
  env?: NodeJS.ProcessEnv;
}

/** The gateway's base URL without a trailing slash. */
export function baseUrl(opts: ClientOptions): string {
  return (opts.url ?? DEFAULT_URL).replace(/\/+$/, '');
}

const CLI_HINTS = {
  certificate: 'pass the CA that signed it with --ca <file> (or $QPGATE_CA)',
  clientCertificate: 'pass one with --cert <file> --key <file> (or $QPGATE_CERT, $QPGATE_KEY)',
  unreachable: 'is `qpgate serve` running? (--url to point elsewhere)',
};

const tlsCache = new WeakMap<ClientOptions, ControlTlsOptions>();

/** --ca / --cert / --key, else $QPGATE_CA / $QPGATE_CERT / $QPGATE_KEY, read once per command. */
export function resolveTls(opts: ClientOptions): ControlTlsOptions {
  const cached = tlsCache.get(opts);
  if (cached) return cached;
  const env = opts.env ?? process.env;
  const read = (flag: string, variable: string, given: string | undefined): string | undefined => {
    const path = given ?? env[variable];
    if (path === undefined || path === '') return undefined;
    try {
      return readFileSync(path, 'utf8');
    } catch (err) {
      const from = given !== undefined ? `--${flag}` : variable;
      throw new ClientError(`cannot read ${from} ${path} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
    }
  };
  const ca = read('ca', 'QPGATE_CA', opts.ca);
  const cert = read('cert', 'QPGATE_CERT', opts.cert);
  const key = read('key', 'QPGATE_KEY', opts.key);
  if ((cert === undefined) !== (key === undefined)) throw new ClientError('--cert and --key: give both (a client certificate and its key) or neither');
  const tls = { ...(ca ? { ca } : {}), ...(cert ? { cert } : {}), ...(key ? { key } : {}) };
  tlsCache.set(opts, tls);
  return tls;
}

/** A request to the control plane with the command's token and TLS options; a failure to connect is a ClientError. */
export async function requestGateway(opts: ClientOptions, path: string, init: RequestInit = {}): Promise<Response> {
  const base = baseUrl(opts);
  const { token } = resolveToken(opts);
  const tls = resolveTls(opts);
  try {
    return await controlFetch(`${base}${path}`, { signal: AbortSignal.timeout(5000), ...init, headers: { authorization: `Bearer ${token}` } }, tls);
  } catch (err) {
    throw new ClientError(fetchFailure(err, base, CLI_HINTS));
  }
}

/** The gateway's state.dir for a --config file and an environment (its config layers). */
export type StateDirOf = (file: string | undefined, env: NodeJS.ProcessEnv) => string;
let stateDirOf: StateDirOf = () => './var';

/**
 * How resolveToken finds state.dir: set once by what loads the gateway's
 * config (src/gateway/state-dir-of.ts, for the CLI and the package's entry),
 * so the clients do not import the gateway.
 */
export function setStateDirOf(fn: StateDirOf): void {
  stateDirOf = fn;
}

/** --token, else $QPGATE_TOKEN, else <state.dir>/admin.token (state.dir from the config layers). */
export function resolveToken(opts: ClientOptions): { token: string; source: string } {
  const env = opts.env ?? process.env;
  if (opts.token) return { token: opts.token, source: '--token' };
  if (env['QPGATE_TOKEN']) return { token: env['QPGATE_TOKEN'], source: 'QPGATE_TOKEN' };
  let stateDir = './var';
  try {
    stateDir = stateDirOf(opts.config, env);
  } catch {
    // an unreadable config: fall back to the default state.dir
  }
  const path = join(stateDir, 'admin.token');
  try {
    const token = readFileSync(path, 'utf8').trim();
    if (token) return { token, source: path };
  } catch {
    // fall through
  }
  throw new ClientError(`no token: pass --token, set QPGATE_TOKEN, or run where ${path} is readable`);
}

export async function getJson<T>(opts: ClientOptions, path: string): Promise<T> {
  const base = baseUrl(opts);
  const { source } = resolveToken(opts);
  const res = await requestGateway(opts, path);
  const body = (await res.json().catch(() => ({}))) as { message?: string };
  if (res.status === 401) throw new ClientError(`the gateway at ${base} refused the token from ${source} (401: ${body.message ?? 'unauthorized'})`);
  if (!res.ok) throw new ClientError(`${path}: HTTP ${res.status}: ${body.message ?? res.statusText}`);
  return body as T;
}

// The parts of /v1/status the CLI prints.
interface QpRow {
  qpn: number;
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
  slo: { objectives: Array<{ name: string; status: string; percentile: number; thresholdUs: number; windows: Array<{ window: string; observedUs: number; burnRate: number }> }> };
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
    const w = o.windows.map((x) => `${x.window} p${o.percentile}=${x.observedUs}µs burn ${x.burnRate.toFixed(2)}`).join(', ');
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
  for (const p of s.peers) lines.push(`\tPeer ${p.address}: ${p.covered ? 'covered' : `NOT covered (${p.reason})`}`);
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
    ['LQPN', 'TYPE', 'STATE', 'SQ-PSN', 'RQ-PSN', 'DQPN', 'QKEY', 'MTU', 'SQ-WR', 'RQ-WR', ...QP_COUNTER_COLUMNS.map(([h]) => h), 'OWNER'],
    qps.map((q) => [
      q.qpn,
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
