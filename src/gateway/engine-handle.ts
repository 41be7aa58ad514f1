// The engine the gateway runs, with the native handle the verbs bindings
// need (openDevice takes the addon's Engine object).
//
// src/native/engine.ts's Engine keeps its native object private; verbs.ts
// already accepts `{ native }` wrappers (EngineLike), so once Engine exposes
// `get native()` the gateway uses it as is. Until then the gateway drives the
// addon's Engine directly through this small adapter: start/stop/placement/
// stats/running are all the control plane needs, and the rings are not used
// by the gateway yet (the feed will need Engine's rings: see the report).
import { loadAddon, type NativeEngine, type PlacementReport, type EngineStats } from '../native/addon.js';
import { Engine, type EngineOptions } from '../native/engine.js';

/** What the gateway and its control plane use of an engine. */
export interface GatewayEngine {
  readonly running: boolean;
  start(): Promise<PlacementReport>;
  stop(): Promise<void>;
  placement(): PlacementReport;
  stats(): EngineStats;
  /** The addon's engine object, for openDevice. */
  readonly native: NativeEngine;
}

/** True when src/native/engine.ts's Engine exposes its native handle. */
export function engineExposesNative(): boolean {
  return Object.getOwnPropertyDescriptor(Engine.prototype, 'native')?.get !== undefined;
}

export function createGatewayEngine(options: EngineOptions): GatewayEngine {
  if (engineExposesNative()) return new Engine(options) as unknown as GatewayEngine;
  return new NativeEngineHandle(options);
}

class NativeEngineHandle implements GatewayEngine {
  readonly native: NativeEngine;
  #op: Promise<unknown> = Promise.resolve();

  constructor(options: EngineOptions) {
    this.native = new (loadAddon().Engine)({ ...options });
  }
  get running(): boolean {
    return this.native.running;
  }
  start(): Promise<PlacementReport> {
    return this.#serialise(() => {
      if (!this.native.running) this.native.start();
      return this.native.placement();
    });
  }
  stop(): Promise<void> {
    return this.#serialise(() => this.native.stop());
  }
  placement(): PlacementReport {
    return this.native.placement();
  }
  stats(): EngineStats {
    return this.native.stats();
  }
  #serialise<T>(fn: () => T): Promise<T> {
    const next = this.#op.then(fn, fn);
    this.#op = next.catch(() => undefined);
    return next;
  }
}
