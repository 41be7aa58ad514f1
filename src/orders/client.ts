// OrderClient: a trading session with a qpgate gateway over an RC queue pair,
// through the TS verbs API.
//
//   const client = await OrderClient.connect({
//     url: 'http://127.0.0.1:7470', token, name: 'desk-7', accounts: [1n],
//     device: { address: '127.0.0.2' },
//   });
//   client.on('fill', (f) => ...);
//   const answer = await client.newOrder({ clientOrderId: 1n, instrumentId: 1001, side: Side.SIDE_BUY,
//                                          price: 10000, quantity: 5, account: 1n });
//   // answer.kind: 'ack' | 'reject'
//
// Application sequence numbers: every gateway message but Welcome carries the
// session's next app_seq. The client keeps the last one it processed
// (`lastAppSeq`); on every (re)connect it sends Hello with it, the gateway
// answers Welcome and resends what came after, and only then does the client
// resend the requests that never got an answer (the gateway answers a
// client order id it has seen with its first answer, marked possible_resend,
// and never acts twice). A message at or below lastAppSeq is a duplicate and
// is dropped, so each request's promise is settled exactly once.
//
// Events: 'message' (every sequenced message, in app_seq order), 'fill',
// 'cancel' (unsolicited CancelAcks: IOC remainder, self-match,
// cancel-on-disconnect), 'reject' (a Reject no request claims), 'gap'
// (app_seqs the gateway could no longer resend), 'disconnect' (the QP failed;
// call reconnect()), 'failover' (with an alternate device: the session goes
// on on the other device, { device, reason, ms }), 'error' (an undecodable
// message; a listener that threw: the rest of its batch is delivered and
// every request still settles first).
//
// Failover (options.alternateDevice, ibv): a device without automatic path
// migration (rxe) loses the session with its link: a request or keepalive
// completes IBV_WC_RETRY_EXC_ERR. The client then moves to its other device
// and opens the session on the gateway's other device
// (backend.alternateDevice) at once, as reconnect() does: Hello, the
// resend, the unanswered requests again. Each request is still settled once.
//
// Liveness: an RC requester learns that its peer is gone only from a request
// that goes unanswered, so a session with nothing in flight would never see a
// killed gateway or a session the gateway ended. Every keepaliveMs, when
// nothing is in flight (the resend after Welcome included), the client READs
// 8 bytes of its own risk.local page (docs/protocol.md §3.4): one-sided,
// served by the gateway's transport (or its NIC) with no receive consumed and
// no order-engine work. A gateway that stopped answering fails it with
// IBV_WC_RETRY_EXC_ERR after (retryCnt + 1) × the ACK timeout, and the client
// emits 'disconnect'. The waits of a resynchronisation are src/orders/resync.ts.
import { EventEmitter } from 'node:events';
import { WC_STATUS_NAMES, WC_WORDS, WcWord } from '../native/verbs.js';
import {
  CancelReason,
  decodeGatewayMessage,
  encodeHello,
  encodeRequest,
  type CancelAck,
  type CancelInput,
  type ClientRequest,
  type Ack,
  type Fill,
  type GatewayMessage,
  type NewOrderInput,
  type Reject,
  type ReplaceAck,
  type ReplaceInput,
  type SequencedMessage,
  type Welcome,
} from './messages.js';
import { RcEndpoint, SEND_WR_ID_HIGH, type SessionAnswer } from './rc-endpoint.js';
import { Resync } from './resync.js';
import type { SessionDevice } from '../common/session-provider.js';
import type { CancelAnswer, NewOrderAnswer, OrderClientOptions, OrderClientStats, ReplaceAnswer } from './client-options.js';

export type { CancelAnswer, NewOrderAnswer, OrderClientOptions, OrderClientStats, ReplaceAnswer } from './client-options.js';

/** A work completion's status when the peer stopped answering (retry_cnt ran out): a failed link, a dead gateway. */
const RETRY_EXC_ERR = WC_STATUS_NAMES.indexOf('IBV_WC_RETRY_EXC_ERR');

/** The high word of the keepalive READ's wr_id. */
const KEEPALIVE_WR_ID_HIGH = 2;
const DEFAULT_KEEPALIVE_MS = 1000;

interface Pending {
  readonly request: ClientRequest;
  readonly bytes: Uint8Array;
  readonly resolve: (m: SequencedMessage) => void;
  readonly fail: (e: Error) => void;
  sent: boolean;
}


/** connect() or reconnect() failed because the QP failed in the Hello or the resend (the link, or ESP the gateway cannot authenticate). */
export class ConnectionLostError extends Error {
  constructor(readonly reason: string) {
    super(`qpgate client: connection lost (${reason})`);
    this.name = 'ConnectionLostError';
  }
}
export class OrderClient extends EventEmitter {
  readonly #ep: RcEndpoint;
  readonly #options: OrderClientOptions;
  readonly #window: number;
  readonly #pending = new Map<bigint, Pending>();
  readonly #queue: bigint[] = [];
  readonly #freeSend: number[] = [];
  #inFlight = 0;
  /** Requests (and Hellos) settled so far: a busy-poll runs until this moves. */
  #settled = 0;
  #lastAppSeq: bigint;
  #connected = false;
  #closed = false;
  readonly #resync: Resync;
  #reconnecting: Promise<void> | undefined;
  // connect() has returned this client: a link lost before that fails connect() instead of failing over.
  #opened = false;
  /** The send slot the keepalive READ lands in: the last one, never in #freeSend. */
  readonly #keepaliveSlot: number;
  #keepaliveTimer: NodeJS.Timeout | undefined;
  #keepaliveOutstanding = false;
  readonly #stats: OrderClientStats = { sent: 0, resent: 0, received: 0, duplicates: 0, gaps: 0, reconnects: 0, keepalives: 0, rearms: 0, failovers: 0, inFlight: 0, queued: 0 };

  private constructor(ep: RcEndpoint, options: OrderClientOptions) {
    super();
    this.#ep = ep;
    this.#options = options;
    this.#window = options.window ?? 64;
    this.#resync = new Resync(options.helloTimeoutMs ?? 5000);
    this.#lastAppSeq = options.lastAppSeq ?? 0n;
    this.#keepaliveSlot = ep.shape.sendSlots - 1;
    // Answers, fills and cancels: polled at the engine's wake-ups (a packet, a
    // deadline) and after our posts. A busy-poll ends when a request (or the
    // Hello) is settled, not at the first message: a trade's Fill may come
    // first, and its Ack would then wait for an event-loop wake-up.
    ep.watch(
      () => {
        const settled = this.#settled;
        this.#poll();
        return !this.#connected || this.#settled !== settled;
      },
      () => this.#inFlight > 0 || this.#resync.busy || this.#freeSend.length < this.#keepaliveSlot,
    );
  }

  /** Creates the endpoint, opens the session and resynchronises (Hello → Welcome → resend). */
  static async connect(options: OrderClientOptions): Promise<OrderClient> {
    const window = options.window ?? 64;
    const keepaliveMs = options.keepaliveMs ?? DEFAULT_KEEPALIVE_MS;
    if (!(Number.isInteger(keepaliveMs) && keepaliveMs >= 0 && keepaliveMs <= 3_600_000)) {
      throw new RangeError(`qpgate client: options.keepaliveMs: expected an integer 0 to 3600000 ms, got ${keepaliveMs}`);
    }
    const ep = await RcEndpoint.create(options, {
      role: 'trading',
      accounts: options.accounts.map((a) => BigInt(a)),
      recvSlots: options.recvDepth ?? 512,
      // The window, the Hello and a margin; the last slot is the keepalive's.
      sendSlots: window + 8 + 1,
      slotBytes: options.maxMessageBytes ?? 512,
      maxRdAtomic: 1,
    });
    const client = new OrderClient(ep, options);
    // From the first resend on (a new run catching up from app_seq 0 may take long).
    if (keepaliveMs > 0) {
      client.#keepaliveTimer = setInterval(() => client.#probe(), keepaliveMs);
      client.#keepaliveTimer.unref();
    }
    try {
      await client.#establish();
    } catch (err) {
      clearInterval(client.#keepaliveTimer);
      await client.#release();
      throw err;
    }
    client.#opened = true;
    return client;
  }

  /** The session id (stable for this token and name). */
  get id(): number {
    return this.#ep.answer.id;
  }
  get session(): SessionAnswer {
    return this.#ep.answer;
  }
  /** The last app_seq processed: give it to a later run as `lastAppSeq` to resume. */
  get lastAppSeq(): bigint {
    return this.#lastAppSeq;
  }
  get connected(): boolean {
    return this.#connected;
  }
  /** The device this client sends from (the alternate after a failover). */
  get device() {
    return this.#ep.device;
  }
  /** Which of its devices the client is on: 'primary' (options.device) or 'alternate' (after a failover). */
  get activeDevice(): SessionDevice {
    return this.#ep.activeDevice;
  }
  stats(): OrderClientStats {
    return { ...this.#stats, inFlight: this.#inFlight, queued: this.#queue.length };
  }
  /** The session QP's transport counters (qp_counters.def names: retransmits, ACKs, RNR NAKs...); {} on ibv. */
  transportCounters(): Readonly<Record<string, number>> {
    return this.#ep.qp.counters();
  }

  newOrder(order: NewOrderInput): Promise<NewOrderAnswer> {
    return this.#request({ kind: 'newOrder', value: order }) as Promise<NewOrderAnswer>;
  }
  cancel(cancel: CancelInput): Promise<CancelAnswer> {
    return this.#request({ kind: 'cancel', value: cancel }) as Promise<CancelAnswer>;
  }
  replace(replace: ReplaceInput): Promise<ReplaceAnswer> {
    return this.#request({ kind: 'replace', value: replace }) as Promise<ReplaceAnswer>;
  }

  /**
   * After a 'disconnect' (or to move to a restarted gateway, `url`): a new QP,
   * the handshake again (same session id), Hello with lastAppSeq, the resend,
   * then every unanswered request again. Requests made meanwhile wait. A call
   * while one is under way joins it (its overrides are not applied): two
   * handshakes for one session would race for its name.
   */
  reconnect(overrides: { url?: string; token?: string } = {}): Promise<void> {
    if (this.#closed) return Promise.reject(new Error('qpgate client: reconnect() after close()'));
    if (this.#reconnecting !== undefined) return this.#reconnecting;
    if (overrides.url !== undefined) this.#ep.options.url = overrides.url;
    if (overrides.token !== undefined) this.#ep.options.token = overrides.token;
    this.#stats.reconnects++;
    this.#reconnecting = this.#establish().finally(() => {
      this.#reconnecting = undefined;
    });
    return this.#reconnecting;
  }

  /** Drops the QP without telling the gateway (as a crash would); pending requests stay for reconnect(). */
  disconnect(): void {
    this.#lost('disconnect() called');
  }

  /** Closes the session at the gateway (DELETE), fails what is pending, and releases everything. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#keepaliveTimer);
    if (this.#connected) await this.#ep.closeSession();
    this.#connected = false;
    const err = new Error('qpgate client: closed');
    for (const p of this.#pending.values()) p.fail(err);
    this.#pending.clear();
    this.#queue.length = 0;
    await this.#release();
  }

  // ---------------------------------------------------------------- connection

  // A handshake, Hello or catch-up that fails leaves the client disconnected
  // (no QP, `connected` false), its pending requests kept for the next reconnect().
  async #establish(): Promise<void> {
    try {
      await this.#handshakeAndResync();
    } catch (err) {
      this.#connected = false;
      this.#resync.clear();
      this.#ep.dropQp();
      throw err;
    }
  }

  async #handshakeAndResync(): Promise<void> {
    this.#connected = false;
    this.#drainStale();
    const { recvSlots } = this.#ep.shape;
    this.#keepaliveOutstanding = false;
    this.#freeSend.length = 0;
    for (let j = 0; j < this.#keepaliveSlot; j++) this.#freeSend.push(j);
    this.#ep.dropQueuedSends();
    // Everything sent before is unanswered as far as we know: resent after the catch-up.
    this.#inFlight = 0;
    for (const p of this.#pending.values()) p.sent = false;
    await this.#ep.connect((qp) => {
      for (let i = 0; i < recvSlots; i++) this.#ep.queueReceive(i);
      this.#ep.postReceives(qp);
    });
    this.#connected = true;
    const welcome = await this.#hello();
    if (welcome.appSeq > this.#lastAppSeq) await this.#resync.resend(welcome.appSeq, () => this.#lastAppSeq);
    // Unanswered requests go again, oldest first, ahead of anything queued since.
    const unanswered = [...this.#pending.keys()].filter((id) => !this.#queue.includes(id));
    this.#queue.unshift(...unanswered);
    this.#stats.resent += unanswered.length;
    this.#pump();
  }

  #hello(): Promise<Welcome> {
    const welcome = this.#resync.welcome();
    this.#enqueueSend(encodeHello(this.#lastAppSeq));
    this.#flush();
    return welcome;
  }

  // One READ of our own risk.local page when nothing is in flight: its ACK
  // timeout and retries are what tell a dead gateway from a quiet one. The
  // resend after Welcome is such a time too (only the gateway sends): a link
  // that dies in it is seen in keepaliveMs and the retries, not helloTimeoutMs.
  #probe(): void {
    if (this.#closed || !this.#connected || this.#keepaliveOutstanding) return;
    if (this.#inFlight > 0 || this.#resync.awaitingWelcome) return;
    const page = this.#ep.answer.regions.find((r) => r.name === 'risk.local' && r.access.includes('REMOTE_READ'));
    if (page === undefined) return;
    try {
      // Nothing in flight: the gateway followed any migration, so the path left may be armed again.
      if (this.#ep.rearm()) this.#stats.rearms++;
      this.#ep.qp.postSend([
        {
          wrId: BigInt(KEEPALIVE_WR_ID_HIGH) << 32n,
          opcode: 'RDMA_READ',
          sgList: [this.#ep.mr.sge(this.#ep.sendOffset(this.#keepaliveSlot), 8)],
          remoteAddr: page.addr,
          rkey: page.rkey,
        },
      ]);
    } catch (err) {
      this.#lost(`keepalive post failed: ${(err as Error).message}`);
      return;
    }
    this.#keepaliveOutstanding = true;
    this.#ep.kick();
  }

  // Completions of a QP we dropped: nothing to learn from them.
  #drainStale(): void {
    while (this.#ep.pollCq() > 0);
  }

  // `unreachable`: the gateway's device stopped answering (IBV_WC_RETRY_EXC_ERR:
  // retries ran out), which is what a failed link looks like: a client with an
  // alternate device fails over to it.
  #lost(reason: string, unreachable = false): void {
    if (!this.#connected) return;
    // A reconnect under way (in its Hello or resend) was on this connection: it fails with it.
    const failing = this.#reconnecting;
    this.#connected = false;
    this.#ep.dropQp();
    this.#resync.lost(new ConnectionLostError(reason), this.#lastAppSeq);
    // Before 'disconnect': a listener's reconnect() goes to the other device too.
    const failover = unreachable && this.#opened && !this.#closed && this.#ep.switchDevice();
    this.emit('disconnect', reason);
    if (failover) this.#failover(reason, failing);
  }

  // The session goes on on our other device and the gateway's (a listener of
  // 'disconnect' that called reconnect() already: that reconnect; one that was
  // under way on the lost link: a new one once it has failed).
  #failover(reason: string, failing: Promise<void> | undefined): void {
    this.#stats.failovers++;
    const started = performance.now();
    const device = this.#ep.activeDevice;
    const again = (): Promise<void> => (this.#connected ? Promise.resolve() : this.reconnect());
    (failing === undefined ? (this.#reconnecting ?? this.reconnect()) : failing.then(again, again)).then(
      () => this.emit('failover', { device, reason, ms: performance.now() - started }),
      (err: Error) => this.emit('disconnect', `failover to the ${device} device failed: ${err.message}`),
    );
  }

  async #release(): Promise<void> {
    await this.#ep.close();
  }

  // ---------------------------------------------------------------- requests

  #request(r: ClientRequest): Promise<SequencedMessage> {
    if (this.#closed) return Promise.reject(new Error('qpgate client: closed'));
    const id = BigInt(r.value.clientOrderId);
    if (id === 0n) return Promise.reject(new RangeError('clientOrderId: expected a non-zero id'));
    if (this.#pending.has(id)) return Promise.reject(new RangeError(`clientOrderId ${id} is already in flight`));
    const bytes = encodeRequest(r);
    if (bytes.byteLength > this.#ep.shape.slotBytes) {
      return Promise.reject(new RangeError(`a ${bytes.byteLength}-byte request exceeds maxMessageBytes ${this.#ep.shape.slotBytes}`));
    }
    return new Promise<SequencedMessage>((resolve, fail) => {
      this.#pending.set(id, { request: r, bytes, resolve, fail, sent: false });
      this.#queue.push(id);
      this.#pump();
    });
  }

  // Sends queued requests while the window and the send slots allow.
  #pump(): void {
    if (!this.#connected || this.#resync.busy) return;
    while (this.#queue.length > 0 && this.#inFlight < this.#window && this.#freeSend.length > 0) {
      const id = this.#queue.shift()!;
      const p = this.#pending.get(id);
      if (p === undefined || p.sent) continue;
      p.sent = true;
      this.#inFlight++;
      this.#enqueueSend(p.bytes);
      this.#stats.sent++;
    }
    this.#flush();
  }

  #enqueueSend(bytes: Uint8Array): void {
    const slot = this.#freeSend.pop();
    if (slot === undefined) throw new Error('qpgate client: no free send slot');
    this.#ep.buffer.set(bytes, this.#ep.sendOffset(slot));
    this.#ep.queueSend(slot, bytes.byteLength);
  }

  // One post for every SEND queued since the last flush.
  #flush(): void {
    if (this.#ep.queuedSends === 0 || !this.#connected) return;
    try {
      this.#ep.postSends();
    } catch (err) {
      this.#lost(`postSend failed: ${(err as Error).message}`);
      return;
    }
    this.#ep.kick();
  }

  // ---------------------------------------------------------------- completions

  // Takes what completed (a batch), delivers it, reposts the receives and
  // sends what the window now allows; returns the messages received.
  #poll(): number {
    if (this.#closed || !this.#connected) return 0;
    const ep = this.#ep;
    const qpn = ep.qpn;
    const w = ep.wcWords;
    let n: number;
    try {
      n = ep.pollCq();
    } catch (err) {
      this.#lost(`poll failed: ${(err as Error).message}`);
      return 0;
    }
    let received = 0;
    let thrown: unknown;
    for (let o = 0; o < n * WC_WORDS; o += WC_WORDS) {
      if (w[o + WcWord.qpNum] !== qpn) continue;
      const status = w[o + WcWord.status]!;
      if (w[o + WcWord.wrIdHigh] === KEEPALIVE_WR_ID_HIGH) {
        this.#keepaliveOutstanding = false;
        if (status !== 0) {
          this.#lost(`keepalive READ completed with ${WC_STATUS_NAMES[status] ?? `status ${status}`}: the gateway stopped answering`, status === RETRY_EXC_ERR);
          break;
        }
        this.#stats.keepalives++;
        continue;
      }
      const isSend = w[o + WcWord.wrIdHigh] === SEND_WR_ID_HIGH;
      if (status !== 0) {
        this.#lost(`${isSend ? 'send' : 'receive'} completed with ${WC_STATUS_NAMES[status] ?? `status ${status}`}`, status === RETRY_EXC_ERR);
        break;
      }
      const slot = w[o + WcWord.wrIdLow]!;
      if (isSend) {
        this.#freeSend.push(slot);
        continue;
      }
      const at = ep.recvOffset(slot);
      ep.queueReceive(slot);
      received++;
      let message: GatewayMessage;
      try {
        message = decodeGatewayMessage(ep.buffer.subarray(at, at + w[o + WcWord.byteLen]!));
      } catch (err) {
        this.emit('error', new Error(`qpgate client: undecodable message from the gateway: ${(err as Error).message}`));
        continue;
      }
      try {
        this.#deliver(message);
      } catch (err) {
        thrown ??= err; // an application listener's: the rest of the batch is delivered first
      }
      if (!this.#connected) break;
    }
    if (this.#connected) {
      try {
        ep.postReceives();
      } catch (err) {
        this.#lost(`postRecv failed: ${(err as Error).message}`);
      }
      this.#pump();
    }
    if (thrown !== undefined) this.#listenerThrew(thrown);
    return received;
  }

  // Reported as 'error' (thrown, as EventEmitter does, when nothing listens for it).
  #listenerThrew(err: unknown): void {
    const text = err instanceof Error ? err.message : String(err);
    this.emit('error', new Error(`qpgate client: a listener threw: ${text}`, { cause: err }));
  }

  #deliver(m: GatewayMessage): void {
    this.#stats.received++;
    if (m.kind === 'welcome') {
      this.#settled++;
      this.#resync.welcomed(m);
      return;
    }
    if (m.appSeq === 0n) {
      // Not sequenced (docs/protocol.md 3.3): a Hello the gateway refused, or a
      // request it did nothing with (THROTTLED, ID_LIMIT, JOURNAL_FAILURE),
      // which settles that request; the id may be sent again.
      if (m.kind === 'reject' && this.#resync.awaitingWelcome) {
        this.#resync.refused(new Error(`qpgate client: Hello refused: ${m.reasonName}: ${m.text}`));
      } else if (m.kind === 'reject' && m.clientOrderId !== 0n && this.#pending.has(m.clientOrderId)) {
        this.#answer(m);
      } else {
        this.emit('reject', m);
      }
      return;
    }
    if (m.appSeq <= this.#lastAppSeq) {
      this.#stats.duplicates++;
      // A request re-submitted after its answer went by (in a catch-up, or to an
      // earlier run): the gateway answers it again with that first answer,
      // marked possible_resend, under the answer's own app_seq. It settles the request.
      if (isAnswer(m) && m.possibleResend) this.#answer(m);
      return;
    }
    if (m.appSeq !== this.#lastAppSeq + 1n) {
      this.#stats.gaps++;
      this.emit('gap', { from: this.#lastAppSeq + 1n, to: m.appSeq - 1n });
    }
    this.#lastAppSeq = m.appSeq;
    // A listener that throws must not cost the request its answer nor the catch-up its end.
    try {
      this.emit('message', m);
    } finally {
      try {
        this.#settle(m);
      } finally {
        this.#resync.delivered(this.#lastAppSeq);
      }
    }
  }

  #settle(m: SequencedMessage): void {
    switch (m.kind) {
      case 'fill':
        this.emit('fill', m as Fill);
        return;
      case 'cancelAck':
        if (m.reason !== CancelReason.CANCEL_REASON_REQUESTED) {
          this.emit('cancel', m as CancelAck);
          return;
        }
        break;
      case 'reject':
        if (m.clientOrderId === 0n || !this.#pending.has(m.clientOrderId)) {
          this.emit('reject', m);
          return;
        }
        break;
      default:
        break;
    }
    this.#answer(m);
  }

  // Settles the request `m` answers, if one is pending.
  #answer(m: SequencedMessage): void {
    const p = this.#pending.get(m.clientOrderId);
    if (p === undefined) return;
    this.#pending.delete(m.clientOrderId);
    if (p.sent) this.#inFlight--;
    this.#settled++;
    p.resolve(m);
  }
}

/** An answer to a request (not a fill, not an unsolicited cancel). */
function isAnswer(m: SequencedMessage): m is Ack | Reject | CancelAck | ReplaceAck {
  if (m.kind === 'fill') return false;
  return m.kind !== 'cancelAck' || m.reason === CancelReason.CANCEL_REASON_REQUESTED;
}
