// FOR TESTS ONLY: a run_on_engine task that throws on the engine thread, as a
// failing allocation (std::bad_alloc) or a bug would, to check that its
// caller gets an Error, the engine counts it (stats().taskErrors) and goes on.
// Not reachable from any configuration; nothing in the gateway imports it.
import { loadAddon } from '../addon.js';
import type { Engine } from '../engine.js';

export type EngineFault = 'bad_alloc' | 'runtime_error' | 'other';

interface TestingEngine {
  throwOnEngine(engine: unknown, kind: EngineFault): void;
}

export function throwOnEngine(engine: Engine, kind: EngineFault): void {
  const door = (loadAddon() as unknown as { __testing_engine: TestingEngine }).__testing_engine;
  door.throwOnEngine(engine.native, kind);
}
