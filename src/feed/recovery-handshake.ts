// The control-plane half of a subscriber's recovery connection: the
// subscriber's native side made an RC QP (its QPN, first PSN, GID, MTU);
// the gateway is told about it with POST /v1/sessions (role "recovery",
// docs/protocol.md §2.8) and answers with its own side, to which the
// QP is then connected. Kept behind the RecoveryHandshake type so the route
// is the only thing a different control plane changes.
import type { SessionDevice } from '../common/session-provider.js';
import type { RcEndpointInfo } from './native.js';
import { controlFetch, fetchFailure, type ControlTlsOptions } from '../http/control-fetch.js';

export interface RecoveryHandshakeRequest {
  /** Client-chosen, stable across reconnects (same token and name → same session id). */
  readonly name: string;
  readonly feed: string;
  readonly channels: readonly number[];
  /** The subscriber's side. */
  readonly local: RcEndpointInfo;
  /** Which of the gateway's devices to open on (a failover: 'alternate'; docs/protocol.md §1.11); default 'primary'. */
  readonly device?: SessionDevice;
}

export interface RecoveryHandshakeAnswer extends RcEndpointInfo {
  /** The gateway's session id. */
  readonly id: number;
  /** The GID of the gateway's alternate device (backend.alternateDevice), where a failover goes; null (or absent) without one. */
  readonly alternateDeviceGid?: string | null;
  /** Ends the session on the gateway (best effort). */
  close(): Promise<void>;
}

export type RecoveryHandshake = (request: RecoveryHandshakeRequest) => Promise<RecoveryHandshakeAnswer>;

/** The gateway refused the recovery session: `status` is the HTTP status (401, 403, 404, 409, 503...). */
export class RecoveryHandshakeError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'RecoveryHandshakeError';
  }
}

export interface HttpRecoveryHandshakeOptions {
  /** The gateway's control plane, e.g. 'http://127.0.0.1:8080'. */
  readonly url: string;
  /** A bearer token entitled to role "recovery" and the channels. */
  readonly token: string;
  /** For an https url: `{ ca }`, the PEM CA its certificate must chain to (default: Node's root CAs). */
  readonly tls?: ControlTlsOptions;
  readonly timeoutMs?: number;
}

function u32(v: unknown, what: string): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > 0xffffffff) throw new RecoveryHandshakeError(502, `the gateway's answer has no valid ${what}`);
  return v;
}

/** POST /v1/sessions {role: 'recovery', ...} with the token; DELETE /v1/sessions/:id to close. */
export function httpRecoveryHandshake(options: HttpRecoveryHandshakeOptions): RecoveryHandshake {
  const base = options.url.replace(/\/+$/, '');
  const headers = { authorization: `Bearer ${options.token}`, 'content-type': 'application/json' };
  const timeout = options.timeoutMs ?? 5000;
  return async (request) => {
    const res = await controlFetch(`${base}/v1/sessions`, {
      method: 'POST',
      headers,
      signal: AbortSignal.timeout(timeout),
      body: JSON.stringify({
        role: 'recovery',
        name: request.name,
        qpn: request.local.qpn,
        psn: request.local.psn,
        gid: request.local.gid,
        mtu: request.local.mtu,
        // A subscriber device with a second address (alternateAddress): the session gets an alternate path.
        ...(typeof request.local.alternateGid === 'string' ? { alternateGid: request.local.alternateGid } : {}),
        feed: request.feed,
        channels: [...request.channels],
        ...(request.device !== undefined ? { device: request.device } : {}),
      }),
    }, options.tls).catch((err: unknown) => {
      throw new RecoveryHandshakeError(0, fetchFailure(err, base, { certificate: 'give the CA that signed it as recovery.tls.ca', clientCertificate: 'give one as recovery.tls.cert and recovery.tls.key' }));
    });
    const text = await res.text();
    let body: Record<string, unknown> = {};
    try {
      body = text.length > 0 ? (JSON.parse(text) as Record<string, unknown>) : {};
    } catch {
      body = {};
    }
    if (res.status !== 201) {
      const message = typeof body['message'] === 'string' ? body['message'] : text || res.statusText;
      throw new RecoveryHandshakeError(res.status, `recovery session refused (${res.status}): ${message}`);
    }
    const id = u32(body['id'], 'id');
    if (typeof body['gid'] !== 'string') throw new RecoveryHandshakeError(502, "the gateway's answer has no gid");
    return {
      id,
      qpn: u32(body['qpn'], 'qpn'),
      psn: u32(body['psn'], 'psn'),
      gid: body['gid'],
      mtu: u32(body['mtu'], 'mtu'),
      alternateGid: typeof body['alternateGid'] === 'string' ? body['alternateGid'] : null,
      alternateDeviceGid: typeof body['alternateDeviceGid'] === 'string' ? body['alternateDeviceGid'] : null,
      close: async () => {
        await controlFetch(`${base}/v1/sessions/${id}`, { method: 'DELETE', headers: { authorization: headers.authorization }, signal: AbortSignal.timeout(timeout) }, options.tls).then(
          (r) => r.body?.cancel(),
          () => undefined,
        );
      },
    };
  };
}
