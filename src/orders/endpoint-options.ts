// What a client's RC endpoint (rc-endpoint.ts) is opened with, and the
// checks its numeric options pass before anything is opened.
import type { ControlTlsOptions } from '../http/control-fetch.js';
import type { Engine, EngineOptions } from '../native/engine.js';
import type { Device, OpenDeviceOptions, OpenIbvDeviceOptions, PathMtu } from '../native/verbs.js';

export interface EndpointOptions {
  /** The gateway's control plane, e.g. http://127.0.0.1:7470 */
  url: string;
  /** A bearer token entitled to the role and the accounts. */
  token: string;
  /** For an https url: `{ ca }`, the PEM CA its certificate must chain to (default: Node's root CAs); `cert`/`key` for mutual TLS. */
  tls?: ControlTlsOptions;
  /** The session name: the same (token, name) is the same session (id, app_seq) across reconnects. */
  name: string;
  /**
   * An engine to share (several sessions in one process); default: one of
   * our own, driven by the JS thread, stopped by close(). One started with
   * `startDriven()` is driven here too; one with its own thread (`start()`)
   * keeps the QP alive while JS is busy (an RC peer gives up after about
   * 0.5 s without ACKs) at the cost of a cross-thread call per operation and
   * polling every turn of the event loop.
   */
  engine?: Engine;
  /**
   * A device to share, or ours to open: soft `{ address: '127.0.0.2' }` (not
   * the gateway's own address), or ibv `{ kind: 'ibv', name: 'rxe0' }`.
   */
  device?: Device | OpenDeviceOptions | OpenIbvDeviceOptions;
  /**
   * ibv: a second RDMA device on another link, e.g. `{ kind: 'ibv', name:
   * 'rxe1' }`, for a device without automatic path migration (rxe). When the
   * session is lost the client moves to it and opens the session on the
   * gateway's alternate device (backend.alternateDevice), a new handshake
   * and a resend by app_seq: application-level failover (docs/protocol.md
   * §1.11). The gateway must have one: connect() fails otherwise.
   */
  alternateDevice?: Device | OpenIbvDeviceOptions;
  /** Options of our own engine. */
  engineOptions?: EngineOptions;
  /** Path MTU asked for (default 1024; the smaller of the two sides is used). */
  mtu?: PathMtu;
  /** On 409 (the name is connected already, e.g. a client that died): close that session and open again. */
  takeover?: boolean;
  /** HTTP timeout (default 5000 ms). */
  timeoutMs?: number;
  /**
   * After posting, busy-poll the CQ this long for the answer before leaving
   * it to the event loop (default 50 µs; 0: never). The JS thread does
   * nothing else meanwhile: it buys latency with CPU.
   */
  busyPollUs?: number;
  /**
   * The QP's local ACK timeout (IBA code 1..31: 4.096 µs × 2^n; default 14 ≈
   * 67 ms) and retransmissions before the session ends (0..7, default 7): a
   * gateway silent for (retryCnt + 1) × the timeout ends it (IBV_WC_RETRY_EXC_ERR),
   * as the gateway's own orders.sessions.ackTimeout / retryCnt do. At most the
   * device's maxRetryCnt is used: 6 on rxe, which reads 7 as retry forever.
   */
  ackTimeout?: number;
  retryCnt?: number;
}

function checkInteger(name: string, v: number | undefined, lo: number, hi: number, unit = ''): void {
  if (v !== undefined && !(Number.isInteger(v) && v >= lo && v <= hi)) {
    throw new RangeError(`qpgate client: options.${name}: expected an integer ${lo} to ${hi}${unit}, got ${v}`);
  }
}

/** RangeError naming the option and its range, before any device or handshake. */
export function checkEndpointOptions(options: EndpointOptions): void {
  const busy = options.busyPollUs;
  if (busy !== undefined && !(Number.isFinite(busy) && busy >= 0 && busy <= 1_000_000)) {
    throw new RangeError(`qpgate client: options.busyPollUs: expected 0 to 1000000 µs, got ${busy}`);
  }
  checkInteger('ackTimeout', options.ackTimeout, 1, 31, ' (4.096 µs × 2^n)');
  checkInteger('retryCnt', options.retryCnt, 0, 7);
}
