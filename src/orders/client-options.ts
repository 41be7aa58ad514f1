// What an OrderClient (client.ts) is opened with, what it answers and what
// it counts: the client's contract, apart from how it keeps it.
import type { Ack, CancelAck, Reject, ReplaceAck } from './messages.js';
import type { EndpointOptions } from './rc-endpoint.js';

export interface OrderClientOptions extends EndpointOptions {
  /** Accounts this session trades (the token must be entitled to them). */
  accounts: ReadonlyArray<bigint | number | string>;
  /** The last app_seq processed by an earlier run of this session (default 0: from the start). */
  lastAppSeq?: bigint;
  /** Requests sent and not yet answered, at most (default 64; keep it within the gateway's recvDepth). */
  window?: number;
  /** Receives posted (default 512): answers and fills in flight towards us. */
  recvDepth?: number;
  /** Largest message (default 512, the gateway's orders.sessions.maxMessageBytes). */
  maxMessageBytes?: number;
  /** How long to wait for Welcome after Hello, and for each next message of the resend that follows it (default 5000 ms). */
  helloTimeoutMs?: number;
  /**
   * With nothing in flight (the resend after Welcome included), probe the
   * session this often with a one-sided READ (default 1000 ms; 0: never). A dead gateway or an ended session is
   * seen within keepaliveMs + (retryCnt + 1) × the ACK timeout (≈ 1.5 s by default).
   */
  keepaliveMs?: number;
}

export type NewOrderAnswer = Ack | Reject;
export type CancelAnswer = CancelAck | Reject;
export type ReplaceAnswer = ReplaceAck | Reject;

export interface OrderClientStats {
  sent: number;
  resent: number;
  received: number;
  duplicates: number;
  gaps: number;
  reconnects: number;
  /** Keepalive READs answered. */
  keepalives: number;
  /** Times the session was armed again after a path migration (RcEndpoint.rearm). */
  rearms: number;
  /** Moves to the other device after a loss (options.alternateDevice), whether or not the reconnect there succeeded. */
  failovers: number;
  inFlight: number;
  queued: number;
}
