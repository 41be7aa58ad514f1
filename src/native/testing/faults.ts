// FOR TESTS ONLY: the soft device's fault injector (native
// verbs/soft/fault.h) — drop, duplicate, reorder, delay and corrupt RoCEv2
// packets between a device's QPs and its sockets, by rate and direction,
// reproducibly from a seed, with a counter for every fault injected.
//
// It is deliberately not in src/native/verbs.ts and not reachable from any
// configuration: nothing in the gateway imports this module, and no config
// key or openDevice option turns the injector on. A test imports it:
//
//   import { setFaults, faultCounters } from '../../src/native/testing/faults.js';
//   setFaults(device, { seed: 7, tx: { drop: 0.01 } });
//   ... run traffic ...
//   faultCounters(device).tx_dropped;   // how many were dropped
//   setFaults(device, null);            // off again
import { loadAddon } from '../addon.js';
import { kNativeDevice, type Device } from '../verbs.js';

/** Probabilities per packet, each in [0, 1]. */
export interface FaultRates {
  readonly drop?: number;
  readonly duplicate?: number;
  /** Held back until `reorderDistance` later packets went (or `reorderMaxHoldUs` passed). */
  readonly reorder?: number;
  /** Held back for `delayUs`. */
  readonly delay?: number;
  /** One bit flipped (never in the ICRC-masked BTH byte): the receiver's ICRC check must catch it. */
  readonly corrupt?: number;
}

export interface FaultPlan {
  /** The PRNG seed: the same seed replays the same decisions for the same packets. Default 1. */
  readonly seed?: number | bigint;
  /** Packets the device sends (after the QP sealed them, before the socket). */
  readonly tx?: FaultRates;
  /** Packets the device receives (after the socket, before the ingress checks). */
  readonly rx?: FaultRates;
  /** How long a delayed packet is held; default 1000 µs. */
  readonly delayUs?: number;
  /** A reordered packet goes after this many later packets; default 2. */
  readonly reorderDistance?: number;
  /** ...or after this long when traffic stops; default 1000 µs. */
  readonly reorderMaxHoldUs?: number;
  /** Only packets with these BTH opcodes (e.g. 0x12, ATOMIC ACKNOWLEDGE); default every packet. */
  readonly opcodes?: readonly number[];
  /** At most this many faults per direction, then packets pass; default no limit. */
  readonly maxFaults?: number;
}

/** Per direction: packets the plan's filter selected (`_seen`) and each fault injected. */
export interface FaultCounters {
  readonly tx_seen: number;
  readonly tx_dropped: number;
  readonly tx_duplicated: number;
  readonly tx_reordered: number;
  readonly tx_delayed: number;
  readonly tx_corrupted: number;
  readonly rx_seen: number;
  readonly rx_dropped: number;
  readonly rx_duplicated: number;
  readonly rx_reordered: number;
  readonly rx_delayed: number;
  readonly rx_corrupted: number;
}

interface NativeTesting {
  __testing_setFaults(device: unknown, plan: FaultPlan | null): void;
  __testing_faultCounters(device: unknown): FaultCounters;
}

function testingBindings(): NativeTesting {
  const addon = loadAddon() as unknown as { verbs?: Partial<NativeTesting> };
  const v = addon.verbs;
  if (v?.__testing_setFaults === undefined || v.__testing_faultCounters === undefined) {
    throw new Error('qpgate: this build of the native addon has no fault injector (verbs.__testing_setFaults)');
  }
  return v as NativeTesting;
}

/** Sets (replaces) the device's fault plan; `null` turns the injector off. Tests only. */
export function setFaults(device: Device, plan: FaultPlan | null): void {
  testingBindings().__testing_setFaults(device[kNativeDevice], plan);
}

/** Every fault injected so far on this device, by direction. */
export function faultCounters(device: Device): FaultCounters {
  return testingBindings().__testing_faultCounters(device[kNativeDevice]);
}
