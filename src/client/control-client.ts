// What every client of a running gateway shares (the CLI's commands and the
// client libraries): --url, --token and --config, TLS, the token lookup, JSON
// GETs, and the flags of a client's own device (--backend, --device, ...).
import { Option, type Command } from 'commander';
import { IbvOpenError, type OpenDeviceOptions, type OpenIbvDeviceOptions } from '../native/verbs.js';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ibvFix } from '../native/ibv-fix.js';
import { ClientError } from './client-error.js';
import { wholeNumberOption } from './cli-numbers.js';
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
  /** --alternate-device (order, risk, subscribe, record): a second ibv device to fail over to. */
  alternateDevice?: string;
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
    throw new ClientError("--alternate-address is for --backend soft: the ibv backend has no automatic path migration (Linux's RDMA core refuses an alternate path on a RoCE port); a second link is --alternate-device");
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

/**
 * --alternate-device: the client's counterpart of backend.alternateDevice
 * (ibv): the session fails over to it (docs/protocol.md §1.11).
 */
export function alternateDeviceOption(): Option {
  return new Option(
    '--alternate-device <name>',
    "ibv: a second RDMA device of ours on another link: with a gateway that has backend.alternateDevice, the session fails over to it when the gateway stops answering (a new handshake there, the resend by app_seq)",
  );
}

/** --alternate-device as the clients' alternateDevice option (application-level failover), none without it. */
export function withAlternateDevice(flags: ClientDeviceFlags): { alternateDevice?: OpenIbvDeviceOptions } {
  const alternate = clientAlternateDevice(flags);
  return alternate === undefined ? {} : { alternateDevice: alternate };
}

/** OrderClient/RiskClient's alternateDevice for --alternate-device, at the same port and GID rule as --device. */
export function clientAlternateDevice(flags: ClientDeviceFlags): OpenIbvDeviceOptions | undefined {
  const name = flags.alternateDevice;
  if (name === undefined) return undefined;
  if (flags.backend !== 'ibv') throw new ClientError("--alternate-device is for --backend ibv; a soft device's second link is --alternate-address");
  if (name === flags.device) throw new ClientError(`--alternate-device ${name} is --device: give a second RDMA device (another link)`);
  return { kind: 'ibv', name };
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
    .option('--http-timeout <ms>', `how long each call to the control plane may take, a session's handshake included (default ${DEFAULT_HTTP_TIMEOUT_MS})`)
    .option('-c, --config <file>', 'the config the gateway runs with (for state.dir)');
}

/** What a call to the control plane may take unless --http-timeout says otherwise. */
export const DEFAULT_HTTP_TIMEOUT_MS = 5000;

/** --http-timeout in ms (a whole number from 1 to 3600000), or the default. */
export function httpTimeoutMs(opts: ClientOptions): number {
  if (opts.httpTimeout === undefined) return DEFAULT_HTTP_TIMEOUT_MS;
  return wholeNumberOption(opts.httpTimeout, '--http-timeout', 1, 3_600_000, 'a whole number of milliseconds');
}

export { ClientError };

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
  /** --http-timeout: ms each call to the control plane may take. */
  httpTimeout?: string;
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
  const timeoutMs = httpTimeoutMs(opts);
  try {
    return await controlFetch(`${base}${path}`, { signal: AbortSignal.timeout(timeoutMs), ...init, headers: { authorization: `Bearer ${token}` } }, tls);
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
  const body = (await res.json().catch(() => ({}))) as { error?: string; message?: string };
  if (res.status === 401 && body.error === 'client_certificate_refused') {
    throw new ClientError(`the gateway at ${base} refused the client certificate (401: ${body.message}): ${CLI_HINTS.clientCertificate}`);
  }
  if (res.status === 401) throw new ClientError(`the gateway at ${base} refused the token from ${source} (401: ${body.message ?? 'unauthorized'})`);
  if (!res.ok) throw new ClientError(`${path}: HTTP ${res.status}: ${body.message ?? res.statusText}`);
  return body as T;
}
