// What the control plane may see of the running gateway. Kept as a narrow
// interface so the control plane never reaches into the engine's internals.
import type { GatewayConfig } from './config/schema.js';
import type { Engine } from '../native/engine.js';

export interface GatewayState {
  readonly config: GatewayConfig;
  readonly engine: Engine;
  readonly version: string;
  readonly startedAt: Date;
  /** False until every component has started, and again once shutdown begins. */
  ready: boolean;
}
