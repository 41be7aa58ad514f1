// The client side of an RC session with the gateway, shared by OrderClient
// and RiskClient: its own engine (or one given), a device (soft, or ibv: a
// RoCE NIC or rxe), a PD, one CQ,
// one registered buffer of message slots, and the RC QP, brought up as
// rdma-core's rc_pingpong does it — with the peer's QPN, PSN and GID coming
// from POST /v1/sessions instead of a TCP exchange:
//
//   QP RESET → INIT, receives posted, POST /v1/sessions {qpn, psn, gid, mtu}
//   → 201 {qpn, psn, gid, mtu, regions} → RTR (dest QPN, rq PSN, GID) → RTS (our random PSN)
//
// Reconnecting makes a new QP (an RC QP in ERR is spent) and asks again: the
// gateway gives the same session id for the same (token, name).
//
// With an alternate device (options.alternateDevice: a second RDMA device on
// another link, for a device without automatic path migration, as rxe) the
// endpoint has a PD, a CQ and a registration of its buffer on each device;
// switchDevice() moves it to the other, and the next connect() asks the
// gateway for the session on its alternate device (or back on its primary):
// application-level failover, docs/protocol.md §1.11.
//
// The engine is driven from the JS thread (Engine.startDriven): every verbs
// call runs inline, with no cross-thread call; after posting, the client runs
// a duty cycle itself (kick: the SENDs leave) and may busy-poll its CQ for
// `busyPollUs`; otherwise the event loop watches the engine's sockets and
// protocol deadline (so retransmission and ACK timeouts fire while JS is
// idle) and calls the client's poll with the completions ready. On ibv the
// engine's wait fd holds the device's completion channel (every CQ armed,
// re-armed by the engine's device_events agent before the poll: native/src/
// engine/device_events_agent.h), so an answer wakes the event loop as a
// packet on a soft device's socket does.
import { randomInt } from 'node:crypto';
import { Engine } from '../native/engine.js';
import { checkEndpointOptions, type EndpointOptions } from './endpoint-options.js';
import {
  Device,
  openDevice,
  type CompletionQueue,
  type MemoryRegion,
  type OpenDeviceOptions,
  type OpenIbvDeviceOptions,
  type PathMtu,
  type ProtectionDomain,
  type QpAttrInput,
  type QueuePair,
  RECV_WR_WORDS,
  SEND_WR_WORDS,
  SendFlagBit,
  SendWrWord,
  WC_WORDS,
} from '../native/verbs.js';
import { closeSession, openSession, type SessionAnswer } from './session-handshake.js';
import type { SessionDevice } from '../common/session-provider.js';

export type { EndpointOptions } from './endpoint-options.js';
export { HandshakeError, type RiskLayout, type SessionAnswer, type SessionRegion } from './session-handshake.js';

/** The high word of a send's wr_id (its low word is the send slot); a receive's wr_id is its slot. */
export const SEND_WR_ID_HIGH = 1;

/** Local ACK timeout code by default, both paths: 4.096 µs × 2^14 ≈ 67 ms, as the gateway's (docs/protocol.md §3.1). */
const ACK_TIMEOUT = 14;
const RETRY_CNT = 7;

/** The default busy-poll budget after a post (µs): about one round trip to a gateway on this host. */
export const DEFAULT_BUSY_POLL_US = 50;
/** A client on a threaded engine polls this often while it waits for nothing (unsolicited fills, cancels). */
const IDLE_POLL_MS = 2;
/**
 * Busy-polling one turn of the event loop may spend over all its posts (ns): a
 * ping-pong of orders answered within busyPollUs spins through, a window of
 * answers that keeps coming yields to the event loop after this much.
 */
const TURN_SPIN_BUDGET_NS = 1_000_000n;

export interface EndpointShape {
  role: 'trading' | 'risk';
  accounts: bigint[];
  /** Receive slots (0 for a risk session: it only reads and does atomics). */
  recvSlots: number;
  sendSlots: number;
  /** Bytes per slot. */
  slotBytes: number;
  /** Outstanding RDMA READ/atomic operations (risk). */
  maxRdAtomic: number;
}

/** A device of an endpoint and what is made on it: a PD, a CQ, and the endpoint's buffer registered there. */
interface EndpointSide {
  readonly device: Device;
  readonly ownDevice: boolean;
  readonly pd: ProtectionDomain;
  readonly cq: CompletionQueue;
  readonly mr: MemoryRegion;
}

export class RcEndpoint {
  readonly engine: Engine;
  readonly buffer: Buffer;
  readonly options: EndpointOptions;
  readonly shape: EndpointShape;
  /** Where poll() writes completions (cq.pollInto's layout): reused, so polling allocates nothing. */
  readonly wcWords = new Uint32Array(256 * WC_WORDS);
  /** Receive slots to post again (qp.postRecvBatch's layout), `#repostCount` of them. */
  readonly #repostWords: Uint32Array;
  #repostCount = 0;
  /** SENDs to post (qp.postSendBatch's layout), `#sendCount` of them. */
  readonly #sendWords: Uint32Array;
  #sendCount = 0;
  #qp: QueuePair | undefined;
  #qpn = -1;
  #answer: SessionAnswer | undefined;
  readonly #ownEngine: boolean;
  /** [primary] or [primary, alternate]; `#active` indexes the one in use. */
  readonly #sides: EndpointSide[] = [];
  #active = 0;
  readonly #busyPollNs: bigint;
  #unwatch: (() => void) | undefined;
  #poll: () => boolean = () => true;
  #busy: () => boolean = () => false;
  #timer: NodeJS.Timeout | undefined;
  #immediate: NodeJS.Immediate | undefined;
  #kickScheduled = false;
  /** Busy-poll time left in this turn of the event loop (ns); refilled by a setImmediate once spent from. */
  #spinLeftNs = TURN_SPIN_BUDGET_NS;
  /** The end of the busy-poll under way (hrtime ns), 0n when none: pollCq spins until then. */
  #spinEndNs = 0n;
  #refillScheduled = false;

  private constructor(engine: Engine, ownEngine: boolean, options: EndpointOptions, shape: EndpointShape) {
    this.engine = engine;
    this.#ownEngine = ownEngine;
    this.options = options;
    this.shape = shape;
    this.#busyPollNs = BigInt(Math.round((options.busyPollUs ?? DEFAULT_BUSY_POLL_US) * 1000));
    this.buffer = Buffer.alloc((shape.recvSlots + shape.sendSlots) * shape.slotBytes);
    this.#repostWords = new Uint32Array(Math.max(1, shape.recvSlots) * RECV_WR_WORDS);
    this.#sendWords = new Uint32Array(Math.max(1, shape.sendSlots) * SEND_WR_WORDS);
  }

  /** A PD, a CQ and the buffer's registration on `device`. */
  #addSide(device: Device, ownDevice: boolean): void {
    const { shape } = this;
    const pd = device.allocPd();
    const cq = device.createCq(Math.min(32767, shape.recvSlots + shape.sendSlots + 16));
    this.#sides.push({ device, ownDevice, pd, cq, mr: pd.regMr(this.buffer, ['LOCAL_WRITE']) });
  }

  #releaseSides(): void {
    for (const s of this.#sides.splice(0)) {
      s.mr.dereg();
      s.cq.destroy();
      s.pd.dealloc();
      if (s.ownDevice) s.device.close();
    }
  }

  get #side(): EndpointSide {
    return this.#sides[this.#active]!;
  }
  /** The device in use (the alternate after a switchDevice()). */
  get device(): Device {
    return this.#side.device;
  }
  get pd(): ProtectionDomain {
    return this.#side.pd;
  }
  get cq(): CompletionQueue {
    return this.#side.cq;
  }
  /** The buffer's registration on the device in use. */
  get mr(): MemoryRegion {
    return this.#side.mr;
  }
  get hasAlternateDevice(): boolean {
    return this.#sides.length > 1;
  }
  /** Which of our devices is in use: 'primary' (options.device) or 'alternate' (options.alternateDevice), named as the gateway's. */
  get activeDevice(): SessionDevice {
    return this.#active === 0 ? 'primary' : 'alternate';
  }

  /**
   * Moves to our other device (false without one): the QP is dropped, and the
   * next connect() asks for the session on the gateway's device of the same
   * name, which closes it on the one left (POST /v1/sessions `device`).
   */
  switchDevice(): boolean {
    if (!this.hasAlternateDevice) return false;
    this.dropQp();
    this.#repostCount = 0;
    this.#sendCount = 0;
    this.#active = 1 - this.#active;
    return true;
  }

  static async create(options: EndpointOptions, shape: EndpointShape): Promise<RcEndpoint> {
    checkEndpointOptions(options);
    let engine = options.engine;
    const ownEngine = engine === undefined;
    if (engine === undefined) {
      engine = new Engine({ toEngineCapacity: 1 << 16, fromEngineCapacity: 1 << 16, hugePages: false, ...options.engineOptions });
      await engine.startDriven();
    }
    try {
      return RcEndpoint.#withDevices(new RcEndpoint(engine, ownEngine, options, shape));
    } catch (err) {
      if (ownEngine) await engine.stop();
      throw err;
    }
  }

  static #withDevices(ep: RcEndpoint): RcEndpoint {
    const { device, alternateDevice } = ep.options;
    try {
      ep.#addSide(...RcEndpoint.#open(ep.engine, device, 'device'));
      if (alternateDevice !== undefined) {
        const [alternate, own] = RcEndpoint.#open(ep.engine, alternateDevice, 'alternateDevice');
        if (alternate.backend !== 'ibv' || ep.device.backend !== 'ibv') {
          if (own) alternate.close();
          throw new TypeError(
            "qpgate client: options.alternateDevice: only for an ibv device beside an ibv options.device (application-level failover); a soft device's second link is its alternateAddress",
          );
        }
        ep.#addSide(alternate, own);
      }
      return ep;
    } catch (err) {
      ep.#releaseSides();
      throw err;
    }
  }

  static #open(engine: Engine, given: EndpointOptions['device'], key: string): [Device, boolean] {
    if (given instanceof Device) return [given, false];
    if (given === undefined || (!('address' in given && given.address !== undefined) && given.name === undefined)) {
      throw new TypeError(
        `qpgate client: options.${key}: expected a Device, { address } for our own soft device (e.g. '127.0.0.2', not the gateway's) or { kind: 'ibv', name } for an RDMA device`,
      );
    }
    return [openDevice(engine, given), true];
  }

  get qp(): QueuePair {
    if (this.#qp === undefined) throw new Error('qpgate client: not connected');
    return this.#qp;
  }

  get connectedQp(): QueuePair | undefined {
    return this.#qp;
  }

  /** The QP's number (-1 when not connected), kept here: no native call per completion. */
  get qpn(): number {
    return this.#qpn;
  }

  /**
   * ibv_poll_cq into `wcWords`; returns how many completions it holds. While
   * a kick's busy-poll is under way (a driven engine), this spins in native
   * code (cq.busyPollInto: duty cycles and polls, no JS per pass) until a
   * completion comes or the busy-poll's time is up.
   */
  pollCq(): number {
    if (this.#spinEndNs === 0n) return this.cq.pollInto(this.wcWords);
    const left = this.#spinEndNs - process.hrtime.bigint();
    return this.engine.busyPoll(this.cq, this.wcWords, left > 0n ? Number(left) : 0);
  }

  /** Queues receive slot `i` to be posted again by postReceives(). */
  queueReceive(i: number): void {
    const o = this.#repostCount++ * RECV_WR_WORDS;
    this.#repostWords[o] = i;
    this.#repostWords[o + 1] = this.recvOffset(i);
    this.#repostWords[o + 2] = this.shape.slotBytes;
  }

  /** Queues a signaled SEND of send slot `j`'s first `length` bytes, wr_id SEND_WR_ID_HIGH:j. */
  queueSend(j: number, length: number): void {
    const o = this.#sendCount++ * SEND_WR_WORDS;
    const w = this.#sendWords;
    w[o + SendWrWord.wrIdLow] = j;
    w[o + SendWrWord.wrIdHigh] = SEND_WR_ID_HIGH;
    w[o + SendWrWord.offset] = this.sendOffset(j);
    w[o + SendWrWord.length] = length;
    w[o + SendWrWord.flags] = SendFlagBit.signaled;
  }

  /** Posts the queued SENDs in one call; the queue is empty after it, even when the post throws. */
  postSends(): void {
    const n = this.#sendCount;
    this.#sendCount = 0;
    if (n > 0) this.qp.postSendBatch(this.mr, this.#sendWords, n);
  }

  /** SENDs queued and not yet posted. */
  get queuedSends(): number {
    return this.#sendCount;
  }

  /** Forgets queued SENDs (a new connection resends from its own state). */
  dropQueuedSends(): void {
    this.#sendCount = 0;
  }

  /** Posts the queued receives in one call (on `qp`, default ours). */
  postReceives(qp: QueuePair = this.qp): void {
    const n = this.#repostCount;
    this.#repostCount = 0;
    if (n > 0) qp.postRecvBatch(this.mr, this.#repostWords, n);
  }

  /** The last handshake's answer. */
  get answer(): SessionAnswer {
    if (this.#answer === undefined) throw new Error('qpgate client: no handshake yet');
    return this.#answer;
  }

  /**
   * `poll` takes the client's completions; it returns true when what the
   * client waits for came (which ends a busy-poll); `busy` says whether the
   * client waits for anything. A driven engine calls `poll` after each of its
   * wake-ups by the event loop (a packet, a deadline) and after kick(); on a
   * threaded engine `poll` runs every turn of the event loop while busy,
   * every IDLE_POLL_MS otherwise.
   */
  watch(poll: () => boolean, busy: () => boolean): void {
    this.#unwatch?.();
    this.#poll = poll;
    this.#busy = busy;
    if (this.engine.driven) {
      this.#unwatch = this.engine.onWork(() => void poll());
      return;
    }
    this.#unwatch = () => this.#stopThreadedPolling();
    this.#scheduleThreadedPoll();
  }

  /**
   * After a post. Driven engine: what is posted in one synchronous run of JS
   * leaves in one duty cycle, run from a microtask (right after that run,
   * before any I/O); then `poll` is busy-polled for at most busyPollUs, and
   * for at most TURN_SPIN_BUDGET_NS in all per turn of the event loop: a
   * ping-pong (the next order sent as the last is answered) spins through; a
   * post made once the turn's budget is spent (a window of orders in flight,
   * other clients on the engine) waits for the next turn (setImmediate), so
   * no client holds the JS thread.
   * Threaded engine: the engine thread sends; polling goes to every turn.
   */
  kick(): void {
    if (!this.engine.driven) {
      this.#scheduleThreadedPoll(true);
      return;
    }
    if (this.#kickScheduled) return;
    this.#kickScheduled = true;
    if (this.#spinLeftNs <= 0n) {
      setImmediate(() => this.#runKick(false));
    } else {
      queueMicrotask(() => this.#runKick(true));
    }
  }

  #scheduleThreadedPoll(now = false): void {
    if (this.#unwatch === undefined || this.#immediate !== undefined) return;
    if (now || this.#busy()) {
      if (this.#timer !== undefined) clearTimeout(this.#timer);
      this.#timer = undefined;
      this.#immediate = setImmediate(() => {
        this.#immediate = undefined;
        this.#poll();
        this.#scheduleThreadedPoll();
      });
    } else if (this.#timer === undefined) {
      this.#timer = setTimeout(() => {
        this.#timer = undefined;
        this.#poll();
        this.#scheduleThreadedPoll();
      }, IDLE_POLL_MS);
    }
  }

  #stopThreadedPolling(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    if (this.#immediate !== undefined) clearImmediate(this.#immediate);
    this.#timer = undefined;
    this.#immediate = undefined;
  }

  #runKick(spin: boolean): void {
    this.#kickScheduled = false;
    if (this.#unwatch === undefined) return; // closed
    if (!spin || this.#busyPollNs === 0n) {
      // One pass, no spin: nothing of the turn's spin budget is spent.
      this.engine.doWork();
      this.#poll();
      return;
    }
    if (!this.#refillScheduled) {
      this.#refillScheduled = true;
      setImmediate(() => {
        this.#refillScheduled = false;
        this.#spinLeftNs = TURN_SPIN_BUDGET_NS;
      });
    }
    const start = process.hrtime.bigint();
    const budget = this.#busyPollNs < this.#spinLeftNs ? this.#busyPollNs : this.#spinLeftNs;
    const end = start + budget;
    // `poll` takes the completions through pollCq, which spins natively until
    // one comes (or `end`); a batch that settles nothing spins again.
    this.#spinEndNs = end;
    try {
      while (!this.#poll() && process.hrtime.bigint() < end);
    } finally {
      this.#spinEndNs = 0n;
      this.#spinLeftNs -= process.hrtime.bigint() - start;
    }
  }

  /** Byte offset of receive slot i / send slot j in `buffer`. */
  recvOffset(i: number): number {
    return i * this.shape.slotBytes;
  }
  sendOffset(j: number): number {
    return (this.shape.recvSlots + j) * this.shape.slotBytes;
  }

  /**
   * A new QP taken to RTS against the gateway's: `beforeHandshake` runs with
   * the QP in INIT (post receives there: a SEND may arrive as soon as the
   * gateway's QP is in RTS, before we are).
   */
  async connect(beforeHandshake: (qp: QueuePair) => void = () => {}): Promise<SessionAnswer> {
    this.dropQp();
    this.#repostCount = 0;
    const { shape } = this;
    const qp = this.pd.createQp({
      type: 'RC',
      sendCq: this.cq,
      recvCq: this.cq,
      cap: { maxSendWr: shape.sendSlots + shape.maxRdAtomic + 4, maxRecvWr: Math.max(1, shape.recvSlots), maxSendSge: 1, maxRecvSge: 1 },
    });
    this.#qp = qp;
    this.#qpn = qp.qpNum;
    qp.modify({ state: 'INIT', pkeyIndex: 0, port: this.device.port, qpAccessFlags: [] });
    beforeHandshake(qp);
    const psn = randomInt(0, 1 << 24);
    const mtu = Math.min(this.options.mtu ?? 1024, this.device.queryPort().activeMtu) as PathMtu;
    let answer: SessionAnswer;
    try {
      answer = await this.#handshake(qp.qpNum, psn, mtu);
    } catch (err) {
      this.dropQp();
      throw err;
    }
    if (this.hasAlternateDevice && answer.alternateDeviceGid === null) {
      // Failover asked for and impossible: said at connect, not found out when the first device fails.
      this.#answer = answer;
      await this.closeSession();
      this.dropQp();
      throw new Error(
        `qpgate client: options.alternateDevice: the gateway at ${this.options.url} has no alternate device to fail over to (its backend.alternateDevice is unset); give it one, or leave alternateDevice out`,
      );
    }
    qp.modify({
      state: 'RTR',
      pathMtu: Math.min(mtu, answer.mtu) as PathMtu,
      destQpNum: answer.qpn,
      rqPsn: answer.psn,
      // From the device's chosen GID (ibv: not always entry 0; rxe's 0 is link-local IPv6).
      ahAttr: { dgid: answer.gid, hopLimit: 64, sgidIndex: this.device.gidIndex },
      maxDestRdAtomic: 0,
      minRnrTimer: 1,
    });
    // rnrRetry 7 = retry forever: the gateway withholds receives on purpose when it is behind (back-pressure).
    // With the gateway's alternate GID the alternate path is armed as the gateway arms its own
    // (native/src/verbs/rc_connect.cc): the QP migrates when the primary path's retries run out.
    const alt = this.#alternatePath(answer);
    const timeout = this.options.ackTimeout ?? ACK_TIMEOUT;
    // retryCnt at most the device's maxRetryCnt: rxe would retry for ever at 7.
    const retryCnt = Math.min(this.options.retryCnt ?? RETRY_CNT, this.device.maxRetryCnt);
    qp.modify({ state: 'RTS', sqPsn: psn, timeout, retryCnt, rnrRetry: 7, maxRdAtomic: shape.maxRdAtomic, ...alt });
    // The gateway acknowledges what did not ask within its hold, far inside our ACK timeout: ask for
    // ACKs to the window only, so an order's round trip carries its two SENDs and no ACK
    // (native/src/verbs/rc_connect.cc peer_holds_acks, the gateway's side of the same rule).
    if (answer.ackHoldUs > 0 && answer.ackHoldUs * 16 <= 4.096 * 2 ** timeout && this.device.ackHoldUs > 0) qp.setAckRequests('window');
    this.#answer = answer;
    return answer;
  }

  /**
   * After a migration, the path the QP left becomes its alternate again
   * (PATH_MIG_STATE REARM), as the gateway re-arms its side
   * (native/src/verbs/rc_connect.h rearm_rc), so the session survives that
   * link's return and a second failure. Call it only with nothing of ours in
   * flight: that is what says the gateway followed the migration (until then
   * our packets must carry MigReq, which an armed QP stops sending). Only
   * once the link of the path left is up again (device.gidLinkUp), as
   * rearm_rc does. True if it re-armed.
   */
  rearm(): boolean {
    const qp = this.#qp;
    const answer = this.#answer;
    const alternate = answer === undefined ? undefined : this.#alternatePath(answer).altPath;
    if (qp === undefined || answer === undefined || alternate === undefined) return false;
    const now = qp.query();
    if (now.state !== 'RTS' || now.pathMigState !== 'MIGRATED') return false;
    const onAlternate = now.ahAttr.dgid === answer.alternateGid;
    const left = onAlternate ? { dgid: answer.gid, hopLimit: 64, sgidIndex: this.device.gidIndex } : alternate.ahAttr;
    if (!this.device.gidLinkUp(left.sgidIndex ?? 0)) return false;
    qp.modify({ altPath: { ahAttr: left, port: 1, pkeyIndex: 0, timeout: this.options.ackTimeout ?? ACK_TIMEOUT }, pathMigState: 'REARM' });
    return true;
  }

  /** The RTS step's altPath and pathMigState REARM when both ends have an alternate path. */
  #alternatePath(answer: SessionAnswer): Pick<QpAttrInput, 'altPath' | 'pathMigState'> {
    const local = this.device.alternateGid;
    if (answer.alternateGid === null || local === null) return {};
    const sgidIndex = this.device.queryGidTable().find((g) => g.gid === local)?.index;
    if (sgidIndex === undefined) return {};
    return { altPath: { ahAttr: { dgid: answer.alternateGid, hopLimit: 64, sgidIndex }, port: 1, pkeyIndex: 0, timeout: this.options.ackTimeout ?? ACK_TIMEOUT }, pathMigState: 'REARM' };
  }

  #handshake(qpn: number, psn: number, mtu: PathMtu): Promise<SessionAnswer> {
    return openSession(this.options, {
      role: this.shape.role,
      name: this.options.name,
      qpn,
      psn,
      gid: this.device.gid,
      mtu,
      ...(this.device.alternateGid !== null ? { alternateGid: this.device.alternateGid } : {}),
      ...(this.device.ackHoldUs > 0 ? { ackHoldUs: this.device.ackHoldUs } : {}),
      // Only from a client that can fail over: a gateway older than the field refuses unknown ones.
      ...(this.hasAlternateDevice ? { device: this.activeDevice } : {}),
      accounts: this.shape.accounts.map(String),
    });
  }

  /** Asks the gateway to close our session (DELETE /v1/sessions/:id). */
  async closeSession(): Promise<void> {
    if (this.#answer !== undefined) await closeSession(this.options, this.#answer.id);
  }

  /** Destroys the QP (nothing is sent: the gateway sees the session go when its next send fails). */
  dropQp(): void {
    const qp = this.#qp;
    this.#qp = undefined;
    this.#qpn = -1;
    if (qp === undefined) return;
    try {
      qp.destroy();
    } catch {
      // already gone with the device
    }
  }

  async close(): Promise<void> {
    const unwatch = this.#unwatch;
    this.#unwatch = undefined;
    unwatch?.();
    this.dropQp();
    this.#releaseSides();
    if (this.#ownEngine) await this.engine.stop();
  }
}
