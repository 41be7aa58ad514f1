// The session handshake of a client's RC endpoint (rc-endpoint.ts) with the
// gateway's control plane: POST /v1/sessions with our QP's number, PSN, GID
// and MTU, the 201 answer with the gateway's (docs/protocol.md §3.1), and
// DELETE /v1/sessions/:id. Over https with the client's tls options
// (controlFetch), never retried over http.
import { controlFetch, fetchFailure, type ControlTlsOptions } from '../http/control-fetch.js';
import type { PathMtu } from '../native/verbs.js';
import type { SessionDevice } from '../common/session-provider.js';

/** Where the control plane is and who we are to it (the endpoint's options). */
export interface ControlPlaneAccess {
  url: string;
  token: string;
  tls?: ControlTlsOptions;
  /** HTTP timeout (default 5000 ms). */
  timeoutMs?: number;
  /** On 409 (the name is connected already): close that session and open again. */
  takeover?: boolean;
}

/** POST /v1/sessions's body (src/gateway/control/routes/sessions.ts SessionOpenBody). */
export interface SessionOpenBody {
  role: 'trading' | 'risk';
  name: string;
  qpn: number;
  psn: number;
  gid: string;
  mtu: PathMtu;
  alternateGid?: string;
  ackHoldUs?: number;
  device?: SessionDevice;
  accounts: string[];
}

export interface SessionRegion {
  name: string;
  account: bigint | undefined;
  addr: bigint;
  length: number;
  rkey: number;
  access: string[];
}

/** The gateway's 201 answer to POST /v1/sessions, u64 fields as bigints. */
export interface SessionAnswer {
  id: number;
  role: string;
  name: string;
  accounts: bigint[];
  qpn: number;
  psn: number;
  gid: string;
  mtu: PathMtu;
  /** The gateway's alternate path GID when the path is armed (both ends have a second address), else null. */
  alternateGid: string | null;
  /** How long the gateway's RC responder holds the ACK of a request that did not ask for one (µs; 0: never). */
  ackHoldUs: number;
  /** The gateway's device the session opened on. */
  device: SessionDevice;
  /** The GID of the gateway's alternate device (backend.alternateDevice), null without one. */
  alternateDeviceGid: string | null;
  regions: SessionRegion[];
  /** The risk pages' words as the gateway serves them (trading and risk sessions). */
  layout: RiskLayout | undefined;
}

export interface RiskLayout {
  pageBytes: number;
  remoteOwned: Array<{ name: string; offset: number; description: string }>;
  localOwned: Array<{ name: string; offset: number; description: string }>;
}

/** A refused handshake: the HTTP status and the gateway's message. */
export class HandshakeError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'HandshakeError';
  }
}

/** The 201 answer's JSON, before its u64 strings become bigints. */
interface SessionOpenedJson {
  id: number;
  role: string;
  name: string;
  accounts?: string[];
  qpn: number;
  psn: number;
  gid: string;
  mtu: PathMtu;
  alternateGid?: string | null;
  ackHoldUs?: number;
  device?: SessionDevice;
  alternateDeviceGid?: string | null;
  regions: Array<{ name: string; account?: string; addr: string; length: number; rkey: number; access: string[] }>;
  layout?: RiskLayout;
}

/** Opens the session (with `takeover`, a 409 closes the connected one and opens again); HandshakeError if refused. */
export async function openSession(access: ControlPlaneAccess, body: SessionOpenBody): Promise<SessionAnswer> {
  let res = await call(access, 'POST', '/v1/sessions', body);
  if (res.status === 409 && access.takeover) {
    const id = /\(id (\d+)\)/.exec(res.message)?.[1];
    if (id !== undefined) {
      await call(access, 'DELETE', `/v1/sessions/${id}`);
      res = await call(access, 'POST', '/v1/sessions', body);
    }
  }
  if (res.status !== 201) throw new HandshakeError(res.status, `POST /v1/sessions: ${res.status} ${res.message}`);
  return sessionAnswer(res.json as SessionOpenedJson);
}

function sessionAnswer(j: SessionOpenedJson): SessionAnswer {
  return {
    id: j.id,
    role: j.role,
    name: j.name,
    accounts: (j.accounts ?? []).map((a) => BigInt(a)),
    qpn: j.qpn,
    psn: j.psn,
    gid: j.gid,
    mtu: j.mtu,
    alternateGid: j.alternateGid ?? null,
    ackHoldUs: j.ackHoldUs ?? 0,
    device: j.device ?? 'primary',
    alternateDeviceGid: j.alternateDeviceGid ?? null,
    regions: j.regions.map((r) => ({
      name: r.name,
      account: r.account === undefined ? undefined : BigInt(r.account),
      addr: BigInt(r.addr),
      length: r.length,
      rkey: r.rkey,
      access: r.access,
    })),
    layout: j.layout,
  };
}

/** DELETE /v1/sessions/:id; a failure is ignored (the gateway ends the session anyway when its QP fails). */
export async function closeSession(access: ControlPlaneAccess, id: number): Promise<void> {
  await call(access, 'DELETE', `/v1/sessions/${id}`).catch(() => undefined);
}

async function call(access: ControlPlaneAccess, method: string, path: string, body?: unknown): Promise<{ status: number; message: string; json: unknown }> {
  const url = `${access.url.replace(/\/+$/, '')}${path}`;
  let res: Response;
  try {
    const init: RequestInit = {
      method,
      headers: { authorization: `Bearer ${access.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(access.timeoutMs ?? 5000),
    };
    res = await controlFetch(url, init, access.tls);
  } catch (err) {
    throw new HandshakeError(0, fetchFailure(err, access.url, { certificate: "give the CA that signed it as the client's tls.ca", clientCertificate: 'give one as tls.cert and tls.key' }));
  }
  const json = (await res.json().catch(() => ({}))) as { message?: string };
  return { status: res.status, message: json.message ?? res.statusText, json };
}
