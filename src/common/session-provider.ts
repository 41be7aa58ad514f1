// The contract between POST /v1/sessions and the services that serve RC
// sessions (docs/protocol.md §3.1): the route authenticates, checks
// entitlements, validates the body and gives the session its stable id; the
// provider registered for the role creates the gateway's QP, takes it to RTS
// (verbs::connect_rc) and answers with the QP and the memory regions the
// session may use. Order entry provides 'trading' and 'risk'
// (src/orders/provider.ts), the feed's recovery service 'recovery'.
export type SessionRole = 'trading' | 'risk' | 'recovery';
/** The gateway's device a session runs on: backend.device, or backend.alternateDevice (ibv). */
export type SessionDevice = 'primary' | 'alternate';

export interface SessionOpenRequest {
  role: SessionRole;
  /** Allocated by the route layer: stable for (token name, session name), u32 > 0. */
  id: number;
  name: string;
  /** The client's RC QP number (24 bits), first send PSN (24 bits), GID and path MTU. */
  qpn: number;
  psn: number;
  gid: string;
  mtu: number;
  /** The client's alternate path GID (a second address), when it has one: the gateway arms an alternate path if it has one too. */
  alternateGid?: string;
  /** How long the client's RC responder holds the ACK of a request that did not ask for one (µs), when it does. */
  ackHoldUs?: number;
  /** Which of the gateway's devices the session opens on (backend.alternateDevice: docs/protocol.md §1.11); default 'primary'. */
  device?: SessionDevice;
  /** trading/risk: the accounts asked for (already checked against the token's entitlements). */
  accounts: bigint[];
  /** recovery: the feed and channels asked for (channels already checked against the token). */
  feed?: string;
  channels: number[];
}

export interface RegionGrant {
  name: string;
  account?: bigint;
  addr: bigint;
  length: number;
  rkey: number;
  /** 'REMOTE_ATOMIC', 'REMOTE_READ', ... */
  access: string[];
}

export interface SessionOpenAnswer {
  qpn: number;
  psn: number;
  gid: string;
  mtu: number;
  /** The gateway's alternate path GID when the path is armed (both ends have one), else null. */
  alternateGid: string | null;
  /** How long the gateway's RC responder holds the ACK of a request that did not ask for one (µs; absent or 0: never). */
  ackHoldUs?: number;
  /** The gateway's alternate device's GID (backend.alternateDevice), where a client fails over to; null without one. */
  alternateDeviceGid?: string | null;
  regions: RegionGrant[];
  /** What the words of the regions mean (order entry: the risk page layout), served with the answer. */
  layout?: unknown;
}

export interface SessionInfo {
  id: number;
  role: SessionRole;
  name: string;
  /** The gateway QP's state: 'RTS' while connected, 'ERR' once the peer is gone or it was closed. */
  state: string;
  qpn: number;
  /** Once it is no longer connected: what ended it (a work-completion status, an async event, the gateway's reason). */
  endedBy?: string | null;
  /** The path its QP runs on: 'primary' or 'alternate' (null: no alternate path was armed; docs/protocol.md §1.10). */
  activePath?: 'primary' | 'alternate' | null;
  /** 'ARMED' (can migrate), 'MIGRATED' (moved, or not re-armed), null without an alternate path. */
  pathMigState?: string | null;
  /** Migrations of its QP (the QP counter path_migrations). */
  pathMigrations?: number;
  /** The gateway's device its QP is on (absent: the primary). */
  device?: SessionDevice;
  [k: string]: unknown;
}

export interface SessionProvider {
  readonly roles: readonly SessionRole[];
  /** Throws SessionError(status, message) for what the client must fix (404 unknown feed, ...). */
  open(req: SessionOpenRequest): SessionOpenAnswer;
  /** QP to ERR and resources freed (cancel-on-disconnect for trading). False when it has no such session. */
  close(id: number): boolean;
  list(): SessionInfo[];
  /**
   * The session's QP went fatal (async event `event`): lose it but keep it
   * listed, its endedBy the event, until closed or reopened. Without it the
   * session is closed.
   */
  end?(id: number, event: string): boolean;
}

/** A refusal the route answers with `status` and `message` (400, 403, 404, 409, 503). */
export class SessionError extends Error {
  constructor(
    readonly status: 400 | 403 | 404 | 409 | 503,
    message: string,
  ) {
    super(message);
    this.name = 'SessionError';
  }
}

/** True while the session's QP is connected (a name in this state cannot be opened again: 409). */
export function isConnected(info: Pick<SessionInfo, 'state'> & { disconnected?: unknown }): boolean {
  return (info.state === 'RTS' || info.state === 'RTR' || info.state === 'SQD') && info.disconnected !== true;
}
