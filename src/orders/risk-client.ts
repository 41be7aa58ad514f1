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
//
// Liveness, as OrderClient's (src/orders/client.ts): with nothing in flight
// the client READs the version word of its first account's risk.local page
// every keepaliveMs, so a gateway that was killed or ended the session is
// seen before the kill switch is needed, not at that moment. An operation
// that completes in error (the probe's IBV_WC_RETRY_EXC_ERR, a refused rkey)
// leaves the QP in ERR: the client emits 'disconnect' with the reason, fails
// later operations at once, and reconnect() makes a new QP for the session.
import { EventEmitter } from 'node:events';
import { WC_STATUS_NAMES, WC_WORDS, WcWord, type WrOpcode } from '../native/verbs.js';
import { RcEndpoint, type EndpointOptions, type SessionRegion } from './rc-endpoint.js';
import type { SessionDevice } from '../common/session-provider.js';

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
  /**
   * With nothing in flight, probe the session this often with a one-sided
   * READ (default 1000 ms; 0: never): a dead gateway or an ended session is
   * seen within keepaliveMs + (retryCnt + 1) × the ACK timeout (≈ 1.5 s by default).
   */
  keepaliveMs?: number;
}

export interface RiskClientStats {
  /** Operations that completed, successfully or not (keepalives not included). */
  operations: number;
  /** Keepalive READs answered. */
  keepalives: number;
  /** Times the session was armed again after a path migration (RcEndpoint.rearm). */
  rearms: number;
  reconnects: number;
  /** Moves to the other device after the gateway stopped answering (options.alternateDevice). */
  failovers: number;
}

const DEFAULT_KEEPALIVE_MS = 1000;

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

export class RiskClient extends EventEmitter {
  readonly #ep: RcEndpoint;
  /** Operations posted, by wr_id (32 bits: one operation at a time, so a wrapped id is long settled). */
  readonly #waiting = new Map<number, { resolve: (status: string) => void }>();
  #nextWr = 1;
  #chain: Promise<unknown> = Promise.resolve();
  /** Operations asked for and not yet settled (the keepalive probes only when there are none). */
  #unsettled = 0;
  /** A keepalive READ is queued or in flight: the next tick sends none. */
  #probing = false;
  #connected = true;
  #closed = false;
  #keepaliveTimer: NodeJS.Timeout | undefined;
  readonly #stats: RiskClientStats = { operations: 0, keepalives: 0, rearms: 0, reconnects: 0, failovers: 0 };

  private constructor(ep: RcEndpoint) {
    super();
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
    const keepaliveMs = options.keepaliveMs ?? DEFAULT_KEEPALIVE_MS;
    if (!(Number.isInteger(keepaliveMs) && keepaliveMs >= 0 && keepaliveMs <= 3_600_000)) {
      throw new RangeError(`qpgate risk client: options.keepaliveMs: expected an integer 0 to 3600000 ms, got ${keepaliveMs}`);
    }
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
    const client = new RiskClient(ep);
    if (keepaliveMs > 0) {
      client.#keepaliveTimer = setInterval(() => client.#probe(), keepaliveMs);
      client.#keepaliveTimer.unref();
    }
    return client;
  }

  /** False once an operation failed (the QP is in ERR) until reconnect() succeeds. */
  get connected(): boolean {
    return this.#connected;
  }

  stats(): RiskClientStats {
    return { ...this.#stats };
  }

  /**
   * A new QP for the same session (the handshake again, same name). Waits
   * for the operations under way; those asked meanwhile run after it.
   * Fails, and leaves the client disconnected, if the gateway does not answer.
   */
  reconnect(overrides: { url?: string; token?: string } = {}): Promise<void> {
    return this.#reconnect(overrides, false);
  }

  /** Which of its devices the client is on: 'primary' (options.device) or 'alternate' (after a failover). */
  get activeDevice(): SessionDevice {
    return this.#ep.activeDevice;
  }

  // `failover`: on our other device, after the operations under way (OrderClient's failover, src/orders/client.ts).
  #reconnect(overrides: { url?: string; token?: string }, failover: boolean): Promise<void> {
    if (this.#closed) return Promise.reject(new Error('qpgate risk client: reconnect() after close()'));
    const run = async (): Promise<void> => {
      if (failover) this.#ep.switchDevice();
      if (overrides.url !== undefined) this.#ep.options.url = overrides.url;
      if (overrides.token !== undefined) this.#ep.options.token = overrides.token;
      this.#stats.reconnects++;
      this.#connected = false;
      this.#waiting.clear();
      while (this.#ep.pollCq() > 0); // completions of the QP we drop
      try {
        await this.#ep.connect();
      } catch (err) {
        this.#ep.dropQp();
        throw err;
      }
      this.#connected = true;
    };
    const result = this.#chain.then(run, run);
    this.#chain = result.catch(() => undefined);
    return result;
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
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#keepaliveTimer);
    if (this.#connected) await this.#ep.closeSession();
    await this.#ep.close();
  }

  // The QP is in ERR (or gone): say so once; operations fail until reconnect().
  // `unreachable` (IBV_WC_RETRY_EXC_ERR: a failed link, a dead gateway): with
  // an alternate device the client fails over to it at once and emits
  // 'failover' ({ device, reason, ms }) once the session is open there.
  #lost(reason: string, unreachable = false): void {
    if (!this.#connected) return;
    this.#connected = false;
    this.emit('disconnect', reason);
    if (!unreachable || this.#closed || !this.#ep.hasAlternateDevice) return;
    this.#stats.failovers++;
    const started = performance.now();
    const device = this.#ep.activeDevice === 'primary' ? 'alternate' : 'primary';
    this.#reconnect({}, true).then(
      () => this.emit('failover', { device, reason, ms: performance.now() - started }),
      (err: Error) => this.emit('disconnect', `failover to the ${device} device failed: ${err.message}`),
    );
  }

  // One READ of the first account's risk.local version word when nothing is
  // in flight: its ACK timeout and retries tell a dead gateway from a quiet one.
  #probe(): void {
    if (this.#closed || !this.#connected || this.#unsettled > 0 || this.#probing) return;
    const page = this.#ep.answer.regions.find((r) => r.name === 'risk.local');
    if (page === undefined) return;
    // Nothing in flight: the gateway followed any migration, so the path left may be armed again.
    try {
      if (this.#ep.rearm()) this.#stats.rearms++;
    } catch (err) {
      this.#lost(`re-arm after a path migration failed: ${(err as Error).message}`);
      return;
    }
    this.#probing = true;
    this.#op('RDMA_READ', page.addr + BigInt(this.offset('version')), page.rkey, 0n, 0n, 'keepalive')
      .then(
        () => void this.#stats.keepalives++,
        () => undefined, // #lost said why
      )
      .finally(() => (this.#probing = false));
  }

  // One operation at a time (a slot of the buffer per operation would allow
  // more; risk updates are rare and ordered by intent anyway).
  #op(opcode: WrOpcode, remoteAddr: bigint, rkey: number, compareAdd = 0n, swap = 0n, what: 'keepalive' | 'operation' = 'operation'): Promise<bigint> {
    const run = async (): Promise<bigint> => {
      if (this.#closed) throw new Error('qpgate risk client: closed');
      if (!this.#connected) throw new Error(`qpgate risk client: not connected (a failed operation left the QP in ERR): call reconnect()`);
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
      if (what === 'operation') this.#stats.operations++;
      if (status !== 'IBV_WC_SUCCESS') {
        const error = new RdmaError(status, `${opcode} at 0x${remoteAddr.toString(16)} rkey 0x${rkey.toString(16)} completed with ${status} (the QP is now ${this.#ep.qp.state})`);
        this.#lost(what === 'keepalive' ? `keepalive READ completed with ${status}` : error.message, status === 'IBV_WC_RETRY_EXC_ERR');
        throw error;
      }
      return this.#ep.buffer.readBigUInt64LE(at);
    };
    if (what === 'operation') this.#unsettled++;
    const result = this.#chain.then(run, run).finally(() => {
      if (what === 'operation') this.#unsettled--;
    });
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
