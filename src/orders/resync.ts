// What an OrderClient waits for after its Hello (docs/protocol.md §3.3): the
// Welcome, then the resend up to the Welcome's app_seq. Each wait ends with
// its answer, a refusal, a lost connection (at once: the next reconnect's
// Hello asks from where this one got to) or `timeoutMs` without anything new
// (for the resend, per message: a long resend over a slow link is not a
// stalled one).
import type { Welcome } from './messages.js';

interface Waiter<T> {
  resolve: (value: T) => void;
  fail: (err: Error) => void;
  timer: NodeJS.Timeout;
}

export class Resync {
  readonly #timeoutMs: number;

  /** `timeoutMs`: the client's helloTimeoutMs. */
  constructor(timeoutMs: number) {
    this.#timeoutMs = timeoutMs;
  }

  #welcome: Waiter<Welcome> | undefined;
  #resend: (Waiter<void> & { target: bigint }) | undefined;

  /** Waiting for the Welcome or the resend: requests wait, the Hello's answer comes first. */
  get busy(): boolean {
    return this.#welcome !== undefined || this.#resend !== undefined;
  }

  get awaitingWelcome(): boolean {
    return this.#welcome !== undefined;
  }

  /** Until `welcomed()`, `refused()` or `lost()`, or `timeoutMs`. */
  welcome(): Promise<Welcome> {
    const timeoutMs = this.#timeoutMs;
    return new Promise<Welcome>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#welcome = undefined;
        reject(new Error(`qpgate client: no Welcome within ${timeoutMs} ms of Hello`));
      }, timeoutMs);
      this.#welcome = { resolve, fail: reject, timer };
    });
  }

  welcomed(w: Welcome): void {
    this.#takeWelcome()?.resolve(w);
  }

  /** The gateway refused the Hello (an unsequenced Reject while the Welcome is awaited). */
  refused(err: Error): void {
    this.#takeWelcome()?.fail(err);
  }

  /** Until `delivered()` reaches `target`, or `lost()`, or nothing new for `timeoutMs`. */
  resend(target: bigint, lastAppSeq: () => bigint): Promise<void> {
    const timeoutMs = this.#timeoutMs;
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#resend = undefined;
        reject(new Error(`qpgate client: the gateway's resend stopped at app_seq ${lastAppSeq()} of ${target} (nothing new for ${timeoutMs} ms)`));
      }, timeoutMs);
      this.#resend = { resolve, fail: reject, timer, target };
    });
  }

  /** A sequenced message was delivered: the client is now at `lastAppSeq`. */
  delivered(lastAppSeq: bigint): void {
    const r = this.#resend;
    if (r === undefined) return;
    if (lastAppSeq < r.target) {
      r.timer.refresh();
      return;
    }
    this.#takeResend()?.resolve();
  }

  /** The connection is gone: whatever is awaited fails now, with `lost`. */
  lost(lost: Error, lastAppSeq: bigint): void {
    this.#takeWelcome()?.fail(lost);
    const r = this.#takeResend();
    r?.fail(new Error(`${lost.message} during the resend, at app_seq ${lastAppSeq} of ${r.target}`));
  }

  /** Forgets both waits (their promises were already settled or abandoned). */
  clear(): void {
    this.#takeWelcome();
    this.#takeResend();
  }

  #takeWelcome(): Waiter<Welcome> | undefined {
    const w = this.#welcome;
    this.#welcome = undefined;
    if (w !== undefined) clearTimeout(w.timer);
    return w;
  }

  #takeResend(): (Waiter<void> & { target: bigint }) | undefined {
    const r = this.#resend;
    this.#resend = undefined;
    if (r !== undefined) clearTimeout(r.timer);
    return r;
  }
}
