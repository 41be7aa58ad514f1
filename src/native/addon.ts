// Loads the native addon (native/build/Release/qpgate.node) and describes
// what it exports. The only file that knows where the binary lives.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { EngineCounterValues } from '../declared/engine-counters.js';

export interface NativeFeatures {
  /** Built with libnuma (node-local allocation by mbind). */
  readonly numa: boolean;
  /** libnuma compiled in and the kernel supports NUMA policy. */
  readonly numaAvailable: boolean;
  /** Built with libibverbs (the `ibv` backend can be built). */
  readonly ibverbs: boolean;
  readonly hugePages: {
    /** /proc/sys/vm/nr_hugepages at load time (-1 unreadable). */
    readonly reserved2MiB: number;
    /** Selected THP mode: "always" | "madvise" | "never" | "" (unknown). */
    readonly transparent: string;
  };
  /** CRC-32 implementation of the ICRC ("isal" | "zlib"), when the wire library is linked. */
  readonly crc: string | undefined;
}

/** Byte offsets of the ring layout, as compiled into the addon (spsc_ring.h). */
export interface NativeRingLayout {
  readonly tailOffset: number;
  readonly headOffset: number;
  readonly waitingOffset: number;
  readonly trailerLength: number;
  readonly headerLength: number;
  readonly paddingType: number;
  readonly minCapacity: number;
  readonly maxCapacity: number;
  /** Every record type of the rings, by name (native/src/gateway/engine_agents.h kRecordTypes). */
  readonly recordTypes: Readonly<Record<string, number>>;
}

export type IdleStrategyName = 'spin' | 'yield' | 'backoff';

export interface BackoffOptions {
  readonly maxSpins?: number;
  readonly maxYields?: number;
  readonly minParkNs?: number;
  readonly maxParkNs?: number;
}

export interface NativeEngineOptions {
  /** Netdev or RDMA device whose NUMA node the engine should run on. */
  readonly device?: string;
  /** Explicit CPU list ("3", "2-3"); overrides the NUMA choice. */
  readonly cpus?: string;
  /** Default: backoff below 4 CPUs, else spin. */
  readonly idle?: IdleStrategyName;
  readonly backoff?: BackoffOptions;
  /** Bytes of record data; a power of two, 1024 .. 2^30. Default 1 MiB. */
  readonly toEngineCapacity?: number;
  readonly fromEngineCapacity?: number;
  /** Try huge pages for the rings (default true). */
  readonly hugePages?: boolean;
  /** Root of sysfs (tests use a fake tree). Default "/sys". */
  readonly sysfsRoot?: string;
  /**
   * While the engine thread is parked, the thread that started the engine
   * runs its duty cycles itself when it publishes (flush) or calls into it,
   * instead of waking it (13-23 us on a 2-CPU host). Default true.
   */
  readonly lendWhenParked?: boolean;
  /** Duty cycles longer than this count as over threshold. Default 1 ms. */
  readonly cycleThresholdNs?: number;
  /** Called on the JS thread at most once per batch the engine publishes. */
  readonly onWake?: () => void;
}

export interface PlacementReport {
  readonly device: string;
  readonly numaNode: number;
  readonly numaSource: string;
  readonly nodeCpus: string;
  readonly allowedCpus: string;
  readonly candidateCpus: string;
  /** -1 when not pinned. */
  readonly cpu: number;
  readonly cpuReason: string;
  readonly pinned: boolean;
  readonly pinError: string;
  /** The engine thread's CPU mask read back, kernel list form. */
  readonly affinity: string;
  /** The engine thread's kernel tid: /proc/self/task/<tid>. */
  readonly tid: number;
  readonly memoryPolicy: 'libnuma node-local' | 'first-touch';
  readonly memoryReason: string;
  readonly hugePages: 'hugetlbfs-2MiB' | 'transparent' | 'none';
  readonly hugePagesReason: string;
  readonly idleStrategy: IdleStrategyName;
  readonly idleReason: string;
}

/** The engine's declared counters (native/src/engine/engine_counters.def) and the rest of its state. */
export interface EngineStats extends EngineCounterValues {
  readonly running: boolean;
  /** Doorbell rings by notify() (the JS thread's). */
  readonly notifies: number;
  /** The first of those faults, described. */
  readonly faults: ReadonlyArray<{ readonly agent: string; readonly message: string; readonly stopped: boolean }>;
  readonly toEngineUsed: number;
  readonly toEngineCapacity: number;
  readonly fromEngineUsed: number;
  readonly fromEngineCapacity: number;
}

export interface NativeRings {
  /** JS produces, the engine consumes. Detached by stop(). */
  readonly toEngine: ArrayBuffer;
  /** The engine produces, JS consumes. Detached by stop(). */
  readonly fromEngine: ArrayBuffer;
  readonly toEngineCapacity: number;
  readonly fromEngineCapacity: number;
}

export interface NativeEngine {
  /** Spawns the engine thread; returns once it is pinned and its buffers are allocated. */
  start(): void;
  /**
   * Sets the engine up on this (the JS) thread, spawning none: the event loop
   * watches its fds and deadline and runs its duty cycles, then calls
   * `onWork` (native/src/addon/engine_driver.h).
   */
  startDriven(onWork: () => void): void;
  /** One duty cycle of a driven engine, now; returns the work done (0: nothing was ready). */
  doWork(): number;
  /** Joins the thread (or stops driving) and frees its buffers. Idempotent. */
  stop(): void;
  placement(): PlacementReport;
  stats(): EngineStats;
  /** How long each duty cycle that did work took: raw HdrHistogram counts, ns (latency-counts.ts). */
  cycleTimeCounts(): Float64Array;
  rings(): NativeRings;
  /** Rings the doorbell if the engine is parked; returns whether it rang. */
  notify(): boolean;
  readonly running: boolean;
  /** Started with startDriven. */
  readonly driven: boolean;
}

export interface NativeAddon {
  readonly features: NativeFeatures;
  readonly ringLayout: NativeRingLayout;
  readonly Engine: new (options?: NativeEngineOptions) => NativeEngine;
}

export const ADDON_RELATIVE_PATH = 'native/build/Release/qpgate.node';

/** The package root: the nearest directory above this module whose package.json is qpgate's. */
function packageRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifest = path.join(dir, 'package.json');
    if (existsSync(manifest)) {
      try {
        if ((JSON.parse(readFileSync(manifest, 'utf8')) as { name?: unknown }).name === 'qpgate') return dir;
      } catch {
        // not ours; keep looking
      }
    }
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error('qpgate: cannot find the package root (package.json named "qpgate")');
    dir = parent;
  }
}

/** Where the addon is loaded from: $QPGATE_ADDON if set, else the package's build output. */
export function addonPath(): string {
  return process.env['QPGATE_ADDON'] ?? path.join(packageRoot(), ADDON_RELATIVE_PATH);
}

let cached: NativeAddon | undefined;

export function loadAddon(): NativeAddon {
  if (cached !== undefined) return cached;
  const file = addonPath();
  if (!existsSync(file)) {
    throw new Error(
      `qpgate: the native addon is not built (${ADDON_RELATIVE_PATH} missing). ` +
        'Run `npm install` or `npm run build:native`; see README',
    );
  }
  const require = createRequire(import.meta.url);
  cached = require(file) as NativeAddon;
  return cached;
}
