// Starts and stops the gateway as one unit: the engine thread first (nothing
// else works without it), then the control plane; on SIGTERM/SIGINT the
// reverse, so the last thing to go is the thread that owns the queue pairs.
import type { FastifyInstance } from 'fastify';
import type { GatewayConfig } from './config/schema.js';
import type { Logger } from './log.js';
import { buildControlPlane } from './control/app.js';
import { generateAdminToken, type Token } from './control/auth.js';
import { Engine, type EngineOptions } from '../native/engine.js';
import type { GatewayState } from './state.js';
import { VERSION } from './version.js';

export interface Gateway {
  readonly state: GatewayState;
  readonly app: FastifyInstance;
  /** Base URL of the control plane, e.g. http://127.0.0.1:7470 */
  readonly url: string;
  /** Resolves with the process exit code once the gateway has shut down. */
  readonly closed: Promise<number>;
  close(reason?: string): Promise<void>;
}

export interface StartOptions {
  /** Install SIGTERM/SIGINT handlers (the CLI does; tests don't). */
  handleSignals?: boolean;
}

export async function startGateway(config: GatewayConfig, logger: Logger, options: StartOptions = {}): Promise<Gateway> {
  const log = logger.child({ component: 'gateway' });
  const engine = new Engine(engineOptions(config));
  const placement = await engine.start();
  log.info({ placement }, 'engine started');

  const state: GatewayState = { config, engine, version: VERSION, startedAt: new Date(), ready: false };
  const tokens: Token[] = [...config.control.tokens];
  if (tokens.length === 0) {
    const generated = generateAdminToken(config.state.dir);
    tokens.push(generated.token);
    log.warn({ path: generated.path }, 'no control-plane token configured: generated an admin token');
  }

  let app: FastifyInstance;
  try {
    app = await buildControlPlane({ state, tokens, logger });
    app.addHook('onClose', async () => {
      await engine.stop();
    });
    await app.listen({ host: config.control.host, port: config.control.port });
  } catch (err) {
    await engine.stop();
    throw err;
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.control.port;
  const host = config.control.host.includes(':') ? `[${config.control.host}]` : config.control.host;
  const url = `http://${host}:${port}`;
  state.ready = true;
  log.info({ url, backend: config.backend.kind, device: config.backend.device }, 'qpgate ready');

  let resolveClosed!: (code: number) => void;
  const closed = new Promise<number>((resolve) => (resolveClosed = resolve));
  let closing: Promise<void> | undefined;
  const close = (reason = 'close requested'): Promise<void> => {
    closing ??= (async () => {
      log.info({ reason }, 'shutting down');
      state.ready = false;
      let code = 0;
      try {
        await app.close();
      } catch (err) {
        log.error({ err }, 'error during shutdown');
        code = 1;
      }
      process.off('SIGTERM', onSignal);
      process.off('SIGINT', onSignal);
      log.info('stopped');
      resolveClosed(code);
    })();
    return closing;
  };
  const onSignal = (signal: NodeJS.Signals): void => void close(signal);
  if (options.handleSignals ?? true) {
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  }
  return { state, app, url, closed, close };
}

/** The engine's options from the gateway config (`auto` leaves the choice to the engine). */
export function engineOptions(config: GatewayConfig): EngineOptions {
  const { engine, backend } = config;
  return {
    device: backend.device,
    ...(engine.cpus.length > 0 ? { cpus: engine.cpus.join(',') } : {}),
    ...(engine.idleStrategy !== 'auto' ? { idle: engine.idleStrategy } : {}),
    backoff: {
      maxSpins: engine.backoff.spins,
      maxYields: engine.backoff.yields,
      minParkNs: engine.backoff.minParkNs,
      maxParkNs: engine.backoff.maxParkNs,
    },
    toEngineCapacity: engine.ringBytes,
    fromEngineCapacity: engine.ringBytes,
  };
}
