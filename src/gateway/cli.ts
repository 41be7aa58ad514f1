// The `qpgate` command line: `serve` runs the gateway; `status` and `qps`
// read a running gateway's control plane (as ibstat and `rdma res show qp`
// read a fabric's); more subcommands (record) join as their features land.
import { Command, CommanderError, Option } from 'commander';
import { ConfigError, loadConfig } from './config/load.js';
import { startGateway } from './service.js';
import { createLogger } from './log.js';
import { VERSION } from './version.js';
import { ClientError, DEFAULT_URL, qpsCommand, statusCommand, type ClientOptions } from './control-client.js';
import { addPingpongCommand } from '../pingpong/command.js';

export async function main(argv: string[]): Promise<number> {
  const program = new Command('qpgate')
    .description(
      'qpgate: a market-data multicast gateway. Ticks go out as InfiniBand/RoCEv2 UD multicast;\n' +
        'orders come in over RC queue pairs; risk limits change by RDMA atomics.\n' +
        'Start with `qpgate serve`: the soft RoCEv2 backend on loopback, control plane on http://127.0.0.1:7470.',
    )
    .version(VERSION, '-V, --version', 'print the version and exit')
    .exitOverride()
    .configureOutput({ writeErr: (s) => process.stderr.write(s), writeOut: (s) => process.stdout.write(s) });

  let exitCode = 0;
  program
    .command('serve')
    .description('run the gateway: engine thread, feeds and the control plane, until SIGTERM or SIGINT')
    .option('-c, --config <file>', 'YAML config merged over config/default.yaml')
    .option(
      '-s, --set <key=value>',
      'override one config key, e.g. --set engine.idleStrategy=spin (repeatable)',
      (value: string, previous: string[]) => [...previous, value],
      [] as string[],
    )
    .option('--host <address>', 'control plane listen address (control.host)')
    .addOption(new Option('--port <port>', 'control plane port (control.port)'))
    .addOption(
      new Option('--log-level <level>', 'log level (log.level)').choices([
        'fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent',
      ]),
    )
    .addHelpText(
      'after',
      '\nEnvironment: QPGATE_<SECTION>__<KEY> overrides a key, e.g. QPGATE_CONTROL__PORT=8080.\n' +
        'Precedence: --set and flags > environment > --config file > config/default.yaml.',
    )
    .action(async (opts: { config?: string; set: string[]; host?: string; port?: string; logLevel?: string }) => {
      exitCode = await serve(opts);
    });

  const client = (name: string, description: string, run: (o: ClientOptions & { json?: boolean }) => Promise<string>) =>
    program
      .command(name)
      .description(description)
      .option('--url <url>', 'the control plane', DEFAULT_URL)
      .option('--token <token>', 'bearer token (default: $QPGATE_TOKEN, else <state.dir>/admin.token)')
      .option('-c, --config <file>', 'the config the gateway runs with (for state.dir)')
      .option('--json', 'print the JSON the control plane returned')
      .action(async (opts: ClientOptions & { json?: boolean }) => {
        try {
          process.stdout.write(`${await run(opts)}\n`);
        } catch (err) {
          if (!(err instanceof ClientError)) throw err;
          process.stderr.write(`qpgate ${name}: ${err.message}\n`);
          exitCode = 1;
        }
      });
  client('status', 'device, port state, GIDs, MTU, engine placement, SLOs, feeds and sessions of a running gateway (like ibstat)', statusCommand);
  client('qps', 'the queue pairs of a running gateway (like `rdma res show qp`)', qpsCommand);
  addPingpongCommand(program, (code) => {
    exitCode = code;
  });

  try {
    await program.parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode;
    throw err;
  }
  return exitCode;
}

async function serve(opts: { config?: string; set: string[]; host?: string; port?: string; logLevel?: string }) {
  const overrides = [...opts.set];
  if (opts.host !== undefined) overrides.push(`control.host=${opts.host}`);
  if (opts.port !== undefined) overrides.push(`control.port=${opts.port}`);
  if (opts.logLevel !== undefined) overrides.push(`log.level=${opts.logLevel}`);

  let config;
  try {
    config = loadConfig({ file: opts.config, overrides });
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`qpgate: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
  const logger = createLogger(config.log.level);
  try {
    const gateway = await startGateway(config, logger);
    return await gateway.closed;
  } catch (err) {
    logger.fatal({ err }, 'qpgate failed to start');
    process.stderr.write(`qpgate: ${(err as Error).message}\n`);
    return 1;
  }
}
