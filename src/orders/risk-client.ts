// RiskClient: a risk session with a qpgate gateway. It sends no messages: it
// reads and changes the per-account risk words with one-sided RDMA — READ of
// any word of its accounts' pages, FETCH_ADD and CMP_SWAP on the
// remote-owned words (credit limit, kill switch), which the gateway's CPU only
// ever loads (HCA atomics are atomic only against each other). The order path
// checks them before it acks: a kill switch set here rejects the account's
// next order.
//
//   const risk = await RiskClient.connect({ url, token, name: 'risk-1', accounts: [1n], device: { address: '127.0.0.3' } });
//   await risk.compareSwap(1n, 'killSwitch', 0n, 1n);   // → the old value (0n: it was off, now on)
//   await risk.fetchAdd(1n, 'creditLimit', 1_000_000n); // → the old limit
//   await risk.whenDurable(1n, 'killSwitch', 1n);       // a gateway restart now comes back killed
//   const words = await risk.readAll(1n);
import { WC_STATUS_NAMES, WC_WORDS, WcWord, type WrOpcode } from '../native/verbs.js';
import { RcEndpoint, type EndpointOptions, type SessionRegion } from './rc-endpoint.js';

/**
 * The words of the risk pages, by name → page, the layout's name and whether
 * it is signed. Offsets come from the layout the gateway serves with the
 * session (`layout` of the 201 answer, also GET /v1/sessions/risk-layout).
 */
export const RISK_WORDS = {
  creditLimit: { page: 'risk.remote', name: 'credit_limit', signed: false },
  killSwitch: { page: 'risk.remote', name: 'kill_switch', signed: false },
  version: { page: 'risk.local', name: 'version', signed: false },
  position: { page: 'risk.local', name: 'position', signed: true },
  openNotional: { page: 'risk.local', name: 'open_notional', signed: false },
  openOrders: { page: 'risk.local', name: 'open_orders', signed: false },
  tradedNotional: { page: 'risk.local', name: 'traded_notional', signed: false },
  durableCreditLimit: { page: 'risk.local', name: 'durable_credit_limit', signed: false },
  durableKillSwitch: { page: 'risk.local', name: 'durable_kill_switch', signed: false },
} as const;
export type RiskWord = keyof typeof RISK_WORDS;
export type RiskWords = Record<Exclude<RiskWord, 'version'>, bigint>;

export interface RiskClientOptions extends EndpointOptions {
  accounts: ReadonlyArray<bigint | number | string>;
}

/** An RDMA operation that did not complete: the work completion status (IBV_WC_REM_ACCESS_ERR...). */
export class RdmaError extends Error {
  constructor(
    readonly status: string,
    message: string,
  ) {
    super(message);
    this.name = 'RdmaError';
  }
}

const SLOTS = 16;

export class RiskClient {
  readonly #ep: RcEndpoint;
  /** Operations posted, by wr_id (32 bits: one operation at a time, so a wrapped id is long settled). */
  readonly #waiting = new Map<number, { resolve: (status: string) => void }>();
  #nextWr = 1;
  #chain: Promise<unknown> = Promise.resolve();

  private constructor(ep: RcEndpoint) {
    this.#ep = ep;
    ep.watch(
      () => {
        this.#poll();
        return this.#waiting.size === 0;
      },
      () => this.#waiting.size > 0,
    );
  }

  static async connect(options: RiskClientOptions): Promise<RiskClient> {
    const ep = await RcEndpoint.create(options, {
      role: 'risk',
      accounts: options.accounts.map((a) => BigInt(a)),
      recvSlots: 0,
      sendSlots: SLOTS,
      slotBytes: 64,
      maxRdAtomic: SLOTS,
    });
    try {
      await ep.connect();
    } catch (err) {
      await ep.close();
      throw err;
    }
    return new RiskClient(ep);
  }

  get id(): number {
    return this.#ep.answer.id;
  }
  /** The regions the gateway granted (address, length, rkey, access per account and page). */
  get regions(): SessionRegion[] {
    return this.#ep.answer.regions;
  }

  /** Where `word` is in its page, from the layout the gateway served. */
  offset(word: RiskWord): number {
    const w = RISK_WORDS[word];
    const layout = this.#ep.answer.layout;
    const words = w.page === 'risk.remote' ? layout?.remoteOwned : layout?.localOwned;
    const found = words?.find((x) => x.name === w.name);
    if (found === undefined) throw new Error(`the gateway's risk layout has no ${w.page} word "${w.name}"`);
    return found.offset;
  }

  region(account: bigint, page: string): SessionRegion {
    const r = this.#ep.answer.regions.find((x) => x.account === account && x.name === page);
    if (r === undefined) throw new RangeError(`no ${page} region for account ${account} in this session (entitled: ${[...new Set(this.regions.map((x) => x.account))].join(', ')})`);
    return r;
  }

  /** RDMA READ of one word. */
  async read(account: bigint, word: RiskWord): Promise<bigint> {
    const w = RISK_WORDS[word];
    const r = this.region(account, w.page);
    const v = await this.#op('RDMA_READ', r.addr + BigInt(this.offset(word)), r.rkey);
    return w.signed ? BigInt.asIntN(64, v) : v;
  }

  /** Every word of the account, the local page read consistently (its seqlock version even and unchanged). */
  async readAll(account: bigint): Promise<RiskWords> {
    const creditLimit = await this.read(account, 'creditLimit');
    const killSwitch = await this.read(account, 'killSwitch');
    for (let attempt = 0; attempt < 100; attempt++) {
      const before = await this.read(account, 'version');
      if (before % 2n === 1n) continue;
      const position = await this.read(account, 'position');
      const openNotional = await this.read(account, 'openNotional');
      const openOrders = await this.read(account, 'openOrders');
      const tradedNotional = await this.read(account, 'tradedNotional');
      const durableCreditLimit = await this.read(account, 'durableCreditLimit');
      const durableKillSwitch = await this.read(account, 'durableKillSwitch');
      if ((await this.read(account, 'version')) === before) {
        return { creditLimit, killSwitch, position, openNotional, openOrders, tradedNotional, durableCreditLimit, durableKillSwitch };
      }
    }
    throw new Error(`account ${account}: the local risk page kept changing under 100 reads`);
  }

  /**
   * Resolves once the gateway's journal holds `value` for `word` durably (a
   * restart would come back with it): an atomic's completion says only that
   * the word changed, its ACK leaves before the engine has journaled it
   * (docs/protocol.md §3.8). READs the word's durable_* copy every `pollMs`;
   * rejects after `timeoutMs` with the value it holds, e.g. when another risk
   * client changed the word again meanwhile.
   */
  async whenDurable(account: bigint, word: 'creditLimit' | 'killSwitch', value: bigint, timeoutMs = 5000, pollMs = 1): Promise<void> {
    const durable = word === 'creditLimit' ? 'durableCreditLimit' : 'durableKillSwitch';
    const end = Date.now() + timeoutMs;
    for (;;) {
      const now = await this.read(account, durable);
      if (now === value) return;
      if (Date.now() > end) throw new Error(`account ${account}: ${word} ${value} not durable within ${timeoutMs} ms (the journal holds ${now})`);
      await new Promise((r) => setTimeout(r, pollMs));
    }
  }

  /** ATOMIC FETCH_ADD on a remote-owned word; resolves with the value before the add. */
  fetchAdd(account: bigint, word: 'creditLimit' | 'killSwitch', add: bigint): Promise<bigint> {
    const w = RISK_WORDS[word];
    const r = this.region(account, w.page);
    return this.#op('ATOMIC_FETCH_AND_ADD', r.addr + BigInt(this.offset(word)), r.rkey, BigInt.asUintN(64, add));
  }

  /** ATOMIC CMP_SWAP on a remote-owned word; resolves with the value before (it swapped iff that equals `compare`). */
  compareSwap(account: bigint, word: 'creditLimit' | 'killSwitch', compare: bigint, swap: bigint): Promise<bigint> {
    const w = RISK_WORDS[word];
    const r = this.region(account, w.page);
    return this.#op('ATOMIC_CMP_AND_SWP', r.addr + BigInt(this.offset(word)), r.rkey, compare, swap);
  }

  /** Any 8-byte RDMA operation at an address and rkey of our choosing (to show what the gateway refuses). */
  raw(opcode: 'RDMA_READ' | 'ATOMIC_FETCH_AND_ADD' | 'ATOMIC_CMP_AND_SWP', remoteAddr: bigint, rkey: number, compareAdd = 0n, swap = 0n): Promise<bigint> {
    return this.#op(opcode, remoteAddr, rkey, compareAdd, swap);
  }

  async close(): Promise<void> {
    await this.#ep.closeSession();
    await this.#ep.close();
  }

  // One operation at a time (a slot of the buffer per operation would allow
  // more; risk updates are rare and ordered by intent anyway).
  #op(opcode: WrOpcode, remoteAddr: bigint, rkey: number, compareAdd = 0n, swap = 0n): Promise<bigint> {
    const run = async (): Promise<bigint> => {
      const wrId = this.#nextWr;
      this.#nextWr = (this.#nextWr + 1) >>> 0 || 1;
      const at = this.#ep.sendOffset(0);
      this.#ep.buffer.writeBigUInt64LE(0n, at);
      const done = new Promise<string>((resolve) => this.#waiting.set(wrId, { resolve }));
      this.#ep.qp.postSend([
        { wrId: BigInt(wrId), opcode, sgList: [this.#ep.mr.sge(at, 8)], remoteAddr, rkey, ...(opcode === 'RDMA_READ' ? {} : { compareAdd, swap }) },
      ]);
      // The operation leaves at once; busy-poll for its completion (busyPollUs), then the event loop's wake-ups.
      this.#ep.kick();
      const status = await done;
      if (status !== 'IBV_WC_SUCCESS') {
        throw new RdmaError(status, `${opcode} at 0x${remoteAddr.toString(16)} rkey 0x${rkey.toString(16)} completed with ${status} (the QP is now ${this.#ep.qp.state})`);
      }
      return this.#ep.buffer.readBigUInt64LE(at);
    };
    const result = this.#chain.then(run, run);
    this.#chain = result.catch(() => undefined);
    return result;
  }

  // Settles the operations that completed (through the endpoint's poll: no object per completion).
  #poll(): void {
    const n = this.#ep.pollCq();
    const words = this.#ep.wcWords;
    for (let o = 0; o < n * WC_WORDS; o += WC_WORDS) {
      const wrId = words[o + WcWord.wrIdLow]!;
      const w = this.#waiting.get(wrId);
      this.#waiting.delete(wrId);
      const status = words[o + WcWord.status]!;
      w?.resolve(WC_STATUS_NAMES[status] ?? `status ${status}`);
    }
  }
}
