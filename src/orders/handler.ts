// The order-handler plug-in point.
//
// The built-in handler is the native price-time book (native/src/orders):
// decode, checks, risk, journal and Ack all run on the engine thread, and the
// book matches right after the Ack. A deployment adds TS handlers — to
// forward orders to an exchange, to hedge, to keep a drop copy — that see
// every step of every order (events.ts) under this contract:
//
//   - onEvent runs on the JS thread after the answer was released and the
//     journal had it: it cannot delay or refuse an ack (the ack path never
//     waits for another thread), and the built-in book has already acted.
//   - Events come in the gateway's processing order, each once; after a
//     restart, only for what happened since (the journal's replay is not
//     handed out again).
//   - It must not block. A handler that falls behind holds events in the
//     engine, and those count towards the order sessions' back-pressure:
//     clients meet RNR NAKs rather than anything being dropped.
//   - A throwing handler is logged and counted; the gateway goes on.
//
// Handlers are configured under `orders.handlers` (config.ts): a module path
// exporting createOrderHandler(context), or 'drop-copy' for the built-in
// writer of every event as a JSON line (handlers/drop-copy.ts).
import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Logger } from 'pino';
import type { OrderService } from './service.js';
import type { OrderEvent } from './events.js';
import type { OrderHandlerSpec } from './config.js';
export type { OrderHandlerSpec };

/** The built-in handler's name. */
export const BUILT_IN_ORDER_HANDLER = 'native-book';

export interface OrderHandlerPlugin {
  readonly name: string;
  onEvent(event: OrderEvent): void;
  /** Called at shutdown, after the last event. */
  close?(): void | Promise<void>;
}

export interface OrderHandlerContext {
  /** `options` of its `orders.handlers` entry, as configured. */
  readonly options: Readonly<Record<string, unknown>>;
  /** state.dir: where a handler keeps files given by relative paths. */
  readonly stateDir: string;
  readonly logger: Logger;
}

/** What a handler module exports as `createOrderHandler`. */
export type OrderHandlerFactory = (context: OrderHandlerContext) => OrderHandlerPlugin | Promise<OrderHandlerPlugin>;

export interface AttachedOrderHandler {
  readonly name: string;
  /** Events handed to onEvent. */
  readonly events: number;
  /** onEvent calls that threw. */
  readonly errors: number;
  /**
   * Stops its events and closes it, waiting at most `closeTimeoutMs` (a
   * plug-in's close() that hangs must not hold the gateway's shutdown);
   * false if it timed out. A close() that throws rejects.
   */
  detach(closeTimeoutMs?: number): Promise<boolean>;
}

/** How long detach() waits for a plug-in's close() by default. */
export const HANDLER_CLOSE_TIMEOUT_MS = 5000;

/** Attaches `handler` to the running service. `onError` hears each throw of onEvent. */
export function attachOrderHandler(
  service: OrderService,
  handler: OrderHandlerPlugin,
  onError: (err: unknown, event: OrderEvent) => void = () => {},
): AttachedOrderHandler {
  let events = 0;
  let errors = 0;
  let detached = false;
  const stop = service.onOrderEvents((batch) => {
    for (const e of batch) {
      events++;
      try {
        handler.onEvent(e);
      } catch (err) {
        errors++;
        onError(err, e);
      }
    }
  });
  return {
    name: handler.name,
    get events() {
      return events;
    },
    get errors() {
      return errors;
    },
    async detach(closeTimeoutMs = HANDLER_CLOSE_TIMEOUT_MS) {
      if (detached) return true;
      detached = true;
      stop();
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), closeTimeoutMs)));
      try {
        return await Promise.race([Promise.resolve(handler.close?.()).then(() => true), timedOut]);
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

/** Built-in handler modules, by the name used in `orders.handlers[].module`. */
const BUILT_IN_MODULES: Readonly<Record<string, string>> = { 'drop-copy': './handlers/drop-copy.js' };

/**
 * Imports a handler module and makes its handler. Throws an Error naming
 * `key` (e.g. 'orders.handlers.0.module') and what went wrong.
 */
export async function loadOrderHandler(spec: OrderHandlerSpec, key: string, context: OrderHandlerContext): Promise<OrderHandlerPlugin> {
  const builtIn = BUILT_IN_MODULES[spec.module];
  const url = builtIn !== undefined ? new URL(builtIn, import.meta.url).href : pathToFileURL(isAbsolute(spec.module) ? spec.module : resolve(spec.module)).href;
  let mod: { createOrderHandler?: unknown };
  try {
    mod = (await import(url)) as { createOrderHandler?: unknown };
  } catch (err) {
    throw new Error(`${key}: cannot load order handler module '${spec.module}': ${(err as Error).message}`);
  }
  if (typeof mod.createOrderHandler !== 'function') {
    throw new Error(`${key}: module '${spec.module}' exports no createOrderHandler(context) function`);
  }
  let handler: OrderHandlerPlugin;
  try {
    handler = await (mod.createOrderHandler as OrderHandlerFactory)(context);
  } catch (err) {
    throw new Error(`${key}: createOrderHandler of '${spec.module}' failed: ${(err as Error).message}`);
  }
  if (handler === null || typeof handler !== 'object' || typeof handler.onEvent !== 'function' || typeof handler.name !== 'string') {
    throw new Error(`${key}: createOrderHandler of '${spec.module}' returned no { name: string, onEvent(event) } handler`);
  }
  return handler;
}
