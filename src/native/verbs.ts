// The verbs interface from TypeScript: a device on an engine (soft RoCEv2 or libibverbs),
// and its protection domains, memory regions, completion queues, queue
// pairs, address handles and shared receive queues — ibverbs' objects and
// names, in camelCase (ibv_qp_attr.dest_qp_num → destQpNum).
//
//   const device = openDevice(engine, { address: '127.0.0.2' });
//   const pd = device.allocPd();
//   const cq = device.createCq(256);
//   const mr = pd.regMr(Buffer.alloc(4096), ['LOCAL_WRITE', 'REMOTE_WRITE']);
//   const qp = pd.createQp({ type: 'RC', sendCq: cq, recvCq: cq, cap: { maxSendWr: 64, maxRecvWr: 64 } });
//   qp.modify({ state: 'INIT', pkeyIndex: 0, port: 1, qpAccessFlags: ['REMOTE_WRITE'] });
//   qp.modify({ state: 'RTR', pathMtu: 1024, destQpNum, rqPsn, ahAttr: { dgid }, maxDestRdAtomic: 1, minRnrTimer: 12 });
//   qp.modify({ state: 'RTS', sqPsn, timeout: 14, retryCnt: 7, rnrRetry: 7, maxRdAtomic: 1 });
//   qp.postSend([{ wrId: 1n, opcode: 'SEND', sgList: [mr.sge(0, 64)] }]);
//   cq.poll(16);
//
// Every call runs synchronously on the engine thread (Engine::run_on_engine):
// it returns when the operation has run there. When the engine is parked that
// costs a wake-up (tens of µs) per call: this is the control path and the
// path for tests and tools, not the per-packet data path (which stays inside
// the engine). The engine must be started for packets to move; objects may be
// made before it starts.
//
// Errors are `VerbsError`s: `code` is the errno name ibverbs would return
// ('EINVAL', 'ENOMEM', 'EADDRINUSE'...), `message` says what was wrong and
// what was expected; a failed post also has `badWrIndex` (WRs before it were
// posted). Malformed arguments are refused in the addon's one shape
// (native/src/addon/args.h): a TypeError, or a RangeError for a number out of
// range, that names the field, says what it must be and shows the value given.
//
// Memory: a registered buffer is kept alive by its MemoryRegion until
// dereg(); in the soft backend the TARGET'S engine thread performs remote
// READ/WRITE/atomics on it, so JS must not transfer or detach that buffer.
// 64-bit values (wrId, addresses, atomic operands) are BigInts.
import type { NativeEngine } from './addon.js';
import { type NativeMr, type NativeAh, type NativeCq, type NativeSrq, type NativeQp, type NativePd, type NativeDevice, nativeVerbs, bufferAddress } from './verbs-native.js';
import { type AckRequests, type QpType, type QpState, type AccessFlag, type AhAttr, type QpCap, type QpAttrInput, type QpAttr, type DeviceAttr, type PortAttr, type GidEntry, type AsyncEvent, type NetReport, type DeviceCounters, type Sge, type SgeInput, type SendWr, type RecvWr, type Wc, type Backend, type OpenDeviceOptions, type InterfaceInfo, type OpenIbvDeviceOptions, type SrqInitAttr, WC_WORDS, WcWord, RECV_WR_WORDS, SEND_WR_WORDS, SendWrWord, SendFlagBit } from './verbs-types.js';

export * from './verbs-types.js';
export { bufferAddress } from './verbs-native.js';

// ---------------------------------------------------------------- objects

/** Anything that carries a native engine: the addon's Engine, or a wrapper exposing it as `native`. */
export type EngineLike = NativeEngine | { readonly native: NativeEngine };

function nativeEngineOf(engine: EngineLike): NativeEngine {
  const maybe = engine as { native?: NativeEngine };
  return maybe.native !== undefined ? maybe.native : (engine as NativeEngine);
}

/**
 * ibv_open_device for the soft backend: a RoCEv2 device on one IPv4
 * address, driven by `engine`'s thread. EADDRINUSE when another device (in
 * this or another process) owns <address>:4791; EADDRNOTAVAIL when no
 * interface has the address; ENODEV for an unknown interface.
 */
export function openDevice(engine: EngineLike, options: OpenDeviceOptions | OpenIbvDeviceOptions): Device {
  return new Device(openNativeDevice(nativeEngineOf(engine), options));
}

/** An ibv device that would not open: its name and port with the reason (code: ENETDOWN for a port not ACTIVE, ENODEV, EINVAL...). */
export class IbvOpenError extends Error {
  override readonly name = 'IbvOpenError';
  constructor(
    message: string,
    readonly code: string | undefined,
    readonly device: string,
    readonly port: number,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** @internal The addon's openDevice; an ibv device's failure as an IbvOpenError. */
export function openNativeDevice(engine: NativeEngine, options: OpenDeviceOptions | OpenIbvDeviceOptions): NativeDevice {
  try {
    return nativeVerbs().openDevice(engine, { ...options });
  } catch (err) {
    if (!('kind' in options) || options.kind !== 'ibv') throw err;
    const e = err as Error & { code?: string };
    throw new IbvOpenError(e.message, e.code, options.name, options.port ?? 1, { cause: err });
  }
}

/**
 * @internal The native device behind a Device, for qpgate's own test-only
 * modules (src/native/testing/). Not part of the API.
 */
export const kNativeDevice: unique symbol = Symbol('qpgate.verbs.nativeDevice');

export class Device {
  readonly #native: NativeDevice;
  /** @internal */
  constructor(native: NativeDevice) {
    this.#native = native;
  }
  /** @internal */
  get [kNativeDevice](): unknown {
    return this.#native;
  }
  /** 'qpgate_soft_127.0.0.2'. */
  get name(): string {
    return this.#native.name;
  }
  get backend(): Backend {
    return this.#native.backend;
  }
  /** The kernel's index of the device, as `rdma dev` lists it (ibv); 0 for soft. Device events name their device by it. */
  get index(): number {
    return this.#native.index;
  }
  /**
   * The largest QP retryCnt this device counts down: 7, or 6 on a software
   * RDMA device (rxe reads 7 as retry forever, so a session on a dead link
   * would never end). RC sessions ask for at most this many.
   */
  get maxRetryCnt(): number {
    return this.#native.maxRetryCnt;
  }
  /** The source GID: '::ffff:a.b.c.d' (soft: index 0; ibv: the chosen entry). */
  get gid(): string {
    return this.#native.gid;
  }
  get gidIndex(): number {
    return this.#native.gidIndex;
  }
  /** The source GID of RC alternate paths (a soft device opened with alternateAddress), or null: no automatic path migration. */
  get alternateGid(): string | null {
    return this.#native.alternateGid;
  }
  /**
   * How long this device's RC responder holds the ACK of a request that did
   * not ask for one (µs; 0: never sends one, as rxe): told to the peer in the
   * session handshake, which may then ask for ACKs to the window only.
   */
  get ackHoldUs(): number {
    return this.#native.ackHoldUs;
  }
  /** ibv: which GID entry was chosen and why, for the log; null for soft. */
  get gidReport(): string | null {
    return this.#native.gidReport;
  }
  /** The port in use (soft: 1). */
  get port(): number {
    return this.#native.port;
  }
  get address(): string {
    return this.#native.address;
  }
  get interface(): InterfaceInfo {
    return this.#native.interface;
  }
  /** ibv_query_device. */
  query(): DeviceAttr {
    return this.#native.query();
  }
  /** ibv_query_port; default: the port in use (the soft device has port 1). */
  queryPort(port = this.port): PortAttr {
    return this.#native.queryPort(port);
  }
  /** ibv_query_gid over the table: index 0 is the RoCEv2 IPv4-mapped GID. */
  queryGidTable(): GidEntry[] {
    return this.#native.queryGidTable();
  }
  /** Whether the link under that GID entry carries traffic now (soft: its address's interface is up and running; ibv: the port is ACTIVE). */
  gidLinkUp(gidIndex: number): boolean {
    return this.#native.gidLinkUp(gidIndex);
  }
  allocPd(): ProtectionDomain {
    return new ProtectionDomain(this.#native.allocPd());
  }
  /** ibv_create_cq with `depth` entries (1..32767). */
  createCq(depth: number, context?: bigint): CompletionQueue {
    return new CompletionQueue(this.#native.createCq(depth, context));
  }
  /** The next asynchronous event, or null (never blocks). */
  getAsyncEvent(): AsyncEvent | null {
    return this.#native.getAsyncEvent();
  }
  counters(): DeviceCounters {
    return this.#native.counters();
  }
  /** The soft device's receive path; null for ibv. */
  netReport(): NetReport | null {
    return this.#native.netReport();
  }
  /** Releases the device handle; its sockets close once its last PD/CQ/QP is gone too. */
  close(): void {
    this.#native.close();
  }
}
export interface CreateQpOptions {
  readonly type: QpType;
  readonly sendCq: CompletionQueue;
  /** Default: sendCq. */
  readonly recvCq?: CompletionQueue;
  readonly srq?: SharedReceiveQueue;
  readonly cap?: QpCap;
  /** Every send WR completes, signaled or not. */
  readonly sqSigAll?: boolean;
  readonly qpContext?: bigint;
}

export class ProtectionDomain {
  readonly #native: NativePd;
  readonly #mrs = new Set<MemoryRegion>();
  /** @internal */
  constructor(native: NativePd) {
    this.#native = native;
  }
  /**
   * ibv_reg_mr over a Buffer, typed array or ArrayBuffer. The region holds
   * the memory until dereg(). REMOTE_WRITE/REMOTE_ATOMIC need LOCAL_WRITE (EINVAL).
   */
  regMr(memory: ArrayBuffer | ArrayBufferView, access: readonly AccessFlag[] = []): MemoryRegion {
    const mr = new MemoryRegion(this.#native.regMr(memory, access), memory, (m) => this.#mrs.delete(m));
    this.#mrs.add(mr);
    return mr;
  }
  /** ibv_create_ah: where UD sends go. */
  createAh(attr: AhAttr): AddressHandle {
    return new AddressHandle(this.#native.createAh(attr));
  }
  createSrq(attr: SrqInitAttr): SharedReceiveQueue {
    return new SharedReceiveQueue(this.#native.createSrq(attr), this);
  }
  /** ibv_create_qp. The QP starts in RESET. */
  createQp(options: CreateQpOptions): QueuePair {
    const init: Record<string, unknown> = {
      type: options.type,
      sendCq: options.sendCq[nativeOf](),
      recvCq: (options.recvCq ?? options.sendCq)[nativeOf](),
      cap: options.cap ?? {},
      sqSigAll: options.sqSigAll ?? false,
    };
    if (options.srq !== undefined) init['srq'] = options.srq[nativeOf]();
    if (options.qpContext !== undefined) init['qpContext'] = options.qpContext;
    return new QueuePair(this.#native.createQp(init), this);
  }
  /** The registered region holding [view, view + length), if any. */
  findMr(view: Uint8Array): MemoryRegion | undefined {
    const addr = bufferAddress(view);
    const end = addr + BigInt(view.byteLength);
    for (const mr of this.#mrs) {
      if (addr >= mr.addr && end <= mr.addr + BigInt(mr.length)) return mr;
    }
    return undefined;
  }
  /** @internal Resolves Buffer entries of an sgList to Sges (inline sends keep the bytes). */
  resolveSgList(list: readonly SgeInput[] | undefined, inline: boolean, where: string): unknown[] | undefined {
    if (list === undefined) return undefined;
    return list.map((entry, i) => {
      if (!(entry instanceof Uint8Array)) return entry;
      const mr = this.findMr(entry);
      if (mr !== undefined) return { addr: bufferAddress(entry), length: entry.byteLength, lkey: mr.lkey };
      if (inline) return entry;
      throw new TypeError(`${where}.sgList[${i}]: the buffer lies in no MemoryRegion of this PD (register it, or send it inline)`);
    });
  }
  dealloc(): void {
    this.#native.dealloc();
  }
}

const nativeOf = Symbol('qpgate.verbs.native');

export class MemoryRegion {
  /** @internal */
  readonly [nativeOf]: () => NativeMr;
  readonly #native: NativeMr;
  readonly #memory: ArrayBuffer | ArrayBufferView;
  readonly #onDereg: (mr: MemoryRegion) => void;
  /** The VA remote peers use (remoteAddr): the buffer's own address. */
  readonly addr: bigint;
  readonly length: number;
  readonly lkey: number;
  /** Meaningful when access has a REMOTE_* flag. */
  readonly rkey: number;
  readonly access: readonly AccessFlag[];
  /** @internal */
  constructor(native: NativeMr, memory: ArrayBuffer | ArrayBufferView, onDereg: (mr: MemoryRegion) => void) {
    this.#native = native;
    this[nativeOf] = () => this.#native;
    this.#memory = memory;
    this.#onDereg = onDereg;
    this.addr = native.addr;
    this.length = native.length;
    this.lkey = native.lkey;
    this.rkey = native.rkey;
    this.access = native.access;
  }
  /** The registered memory. */
  get memory(): ArrayBuffer | ArrayBufferView {
    return this.#memory;
  }
  /** An Sge over [offset, offset + length) of this region. */
  sge(offset = 0, length = this.length - offset): Sge {
    if (offset < 0 || length < 0 || offset + length > this.length) {
      throw new RangeError(`mr.sge: [${offset}, ${offset + length}) is outside the region's ${this.length} bytes`);
    }
    return { addr: this.addr + BigInt(offset), length, lkey: this.lkey };
  }
  /** ibv_dereg_mr: after it returns no local or remote access reaches the memory. */
  dereg(): void {
    this.#native.dereg();
    this.#onDereg(this);
  }
}

export class AddressHandle {
  /** @internal */
  readonly [nativeOf]: () => NativeAh;
  readonly #native: NativeAh;
  /** @internal */
  constructor(native: NativeAh) {
    this.#native = native;
    this[nativeOf] = () => this.#native;
  }
  get attr(): Required<AhAttr> {
    return this.#native.attr;
  }
  destroy(): void {
    this.#native.destroy();
  }
}

export class CompletionQueue {
  /** @internal */
  readonly [nativeOf]: () => NativeCq;
  readonly #native: NativeCq;
  /** @internal */
  constructor(native: NativeCq) {
    this.#native = native;
    this[nativeOf] = () => this.#native;
  }
  /** ibv_poll_cq: up to `max` completions, oldest first. EOVERFLOW once the CQ overflowed. */
  poll(max = 16): Wc[] {
    return this.#native.poll(max);
  }
  /**
   * ibv_poll_cq without allocating: up to `words.length / WC_WORDS`
   * completions written into `words` (layout: WcWord); returns how many.
   * The hot path of a client that polls often: no object per completion.
   */
  pollInto(words: Uint32Array): number {
    return this.#native.pollInto(words);
  }
  /**
   * A driven engine's busy-poll in one native call: duty cycles of the CQ's
   * engine and polls of the CQ until a completion comes or `budgetNs` passes;
   * writes as pollInto does and returns how many (0: the budget ran out).
   * Call it through Engine.busyPoll, which lets the engine's other work
   * listeners see what the cycles did.
   */
  busyPollInto(words: Uint32Array, budgetNs: number): number {
    return this.#native.busyPollInto(words, budgetNs);
  }
  get cqe(): number {
    return this.#native.cqe;
  }
  get handle(): number {
    return this.#native.handle;
  }
  destroy(): void {
    this.#native.destroy();
  }
}

export class SharedReceiveQueue {
  /** @internal */
  readonly [nativeOf]: () => NativeSrq;
  readonly #native: NativeSrq;
  readonly #pd: ProtectionDomain;
  /** @internal */
  constructor(native: NativeSrq, pd: ProtectionDomain) {
    this.#native = native;
    this.#pd = pd;
    this[nativeOf] = () => this.#native;
  }
  /** Returns how many were posted; throws (with badWrIndex) when not all were. */
  postRecv(wrs: readonly RecvWr[]): number {
    return this.#native.postRecv(
      wrs.map((wr, i) => ({ ...wr, sgList: this.#pd.resolveSgList(wr.sgList, false, `srq.postRecv: wrs[${i}]`) })),
    );
  }
  /** ibv_modify_srq: srqLimit arms IBV_EVENT_SRQ_LIMIT_REACHED. */
  modify(attr: { maxWr?: number; srqLimit?: number }): void {
    this.#native.modify(attr);
  }
  query(): { maxWr: number; maxSge: number; srqLimit: number } {
    return this.#native.query();
  }
  destroy(): void {
    this.#native.destroy();
  }
}

export class QueuePair {
  readonly #native: NativeQp;
  readonly #pd: ProtectionDomain;
  /** @internal */
  constructor(native: NativeQp, pd: ProtectionDomain) {
    this.#native = native;
    this.#pd = pd;
  }
  get qpNum(): number {
    return this.#native.qpNum;
  }
  get type(): QpType {
    return this.#native.type;
  }
  get state(): QpState {
    return this.#native.state;
  }
  /**
   * ibv_modify_qp. An illegal transition or attribute throws EINVAL naming
   * it ("INIT→RTR for RC requires IBV_QP_DEST_QPN").
   */
  modify(attr: QpAttrInput): void {
    this.#native.modify(attr);
  }
  /** ibv_query_qp. */
  query(): QpAttr {
    return this.#native.query();
  }
  /** ibv_post_send of a batch; returns how many were posted (all, or it throws with badWrIndex). */
  postSend(wrs: readonly SendWr[]): number {
    return this.#native.postSend(
      wrs.map((wr, i) => {
        const out: Record<string, unknown> = { ...wr };
        out['sgList'] = this.#pd.resolveSgList(wr.sgList, wr.inline === true, `qp.postSend: wrs[${i}]`);
        if (wr.ah !== undefined) out['ah'] = wr.ah[nativeOf]();
        return out;
      }),
    );
  }
  /** ibv_post_recv of a batch. UD buffers need 40 bytes for the GRH area in front of the payload. */
  postRecv(wrs: readonly RecvWr[]): number {
    return this.#native.postRecv(
      wrs.map((wr, i) => ({ ...wr, sgList: this.#pd.resolveSgList(wr.sgList, false, `qp.postRecv: wrs[${i}]`) })),
    );
  }
  /**
   * ibv_post_recv without allocating: `count` receives of one SGE each in
   * `mr`, RECV_WR_WORDS u32 words per WR in `words`: wr_id (32 bits), the
   * offset in the region, the length. A WR outside the region is a RangeError
   * and nothing of it is posted.
   */
  postRecvBatch(mr: MemoryRegion, words: Uint32Array, count = Math.floor(words.length / RECV_WR_WORDS)): number {
    return this.#native.postRecvBatch(mr[nativeOf](), words, count);
  }
  /**
   * ibv_post_send of SENDs without allocating: `count` SENDs of one SGE each
   * in `mr`, SEND_WR_WORDS u32 words per WR in `words` (SendWrWord: wr_id's
   * low and high 32 bits, the offset in the region, the length, SendFlagBit
   * flags). A connected (RC/UC) QP's; a WR outside the region or with an
   * unknown flag is a RangeError and nothing of it is posted.
   */
  postSendBatch(mr: MemoryRegion, words: Uint32Array, count = Math.floor(words.length / SEND_WR_WORDS)): number {
    return this.#native.postSendBatch(mr[nativeOf](), words, count);
  }
  /** ibv_attach_mcast: `group` is an IPv4 group ('239.1.2.3') or its MGID ('::ffff:239.1.2.3'). */
  attachMcast(group: string): void {
    this.#native.attachMcast(group);
  }
  detachMcast(group: string): void {
    this.#native.detachMcast(group);
  }
  /**
   * When this RC QP's requester asks for an ACK (AckReq): 'per-message' (the
   * IBA's usual, the default) or 'window' (only to keep the send queue open:
   * for a peer that said in the handshake that it holds ACKs, ackHoldUs;
   * docs/protocol.md "The ACK hold"). The soft backend's; ibv throws
   * EOPNOTSUPP for 'window'.
   */
  setAckRequests(mode: AckRequests): void {
    this.#native.setAckRequests(mode);
  }
  /** The QP's transport counters (qp_counters.def names). */
  counters(): Readonly<Record<string, number>> {
    return this.#native.counters();
  }
  /** ibv_destroy_qp. */
  destroy(): void {
    this.#native.destroy();
  }
}
