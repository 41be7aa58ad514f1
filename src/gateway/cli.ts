// The `qpgate` command line: `serve` runs the gateway; `status` and `qps`
// read a running gateway's control plane (as ibstat and `rdma res show qp`
// read a fabric's); more subcommands (record) join as their features land.
import { Command, CommanderError, Option } from 'commander';
import { ConfigError, loadConfig } from './config/load.js';
import './state-dir-of.js';
import { effectiveConfig, formatEffective } from './config/effective.js';
import { bashCompletion } from './completion.js';
import { startGateway } from './service.js';
import { StateDirLockedError } from './state-lock.js';
import { DeviceOpenError } from './device/device.js';
import { TlsConfigError } from './control/tls.js';
import { SecurityConfigError } from './security/xfrm-keys.js';
import { createLogger } from './log.js';
import { VERSION } from './version.js';
import { addClientDeviceOptions, alternateAddressOption, alternateDeviceOption, ClientDeviceError, ClientError, controlPlaneCommand, receiveModeOption, type ClientOptions } from '../client/control-client.js';
import { qpsCommand, statusCommand } from './status-commands.js';
import { orderCommand, riskCommand, sessionsCommand } from '../orders/cli.js';
import { addPingpongCommand } from '../pingpong/command.js';
import { addFeedCommands, replayOverrides, replaySpeedOption } from '../feed/cli.js';
import { readTickFile, TickFileError } from '../feed/recording.js';

/**
 * Exit status, one per kind of failure (README "Exit status"): 0 done, 1 the
 * operation failed (unreachable gateway, a refused request, a rejected
 * order), 2 the configuration is invalid or state.dir is taken, 64 the
 * command line is wrong (EX_USAGE, sysexits.h).
 */
export const EXIT_FAILED = 1;
export const EXIT_CONFIG = 2;
export const EXIT_USAGE = 64;

export async function main(argv: string[]): Promise<number> {
  let exitCode = 0;
  const program = createProgram((code) => {
    exitCode = code;
  });
  try {
    await program.parseAsync(argv);
  } catch (err) {
    // --help and --version end with 0; anything else commander refuses is a usage error.
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : EXIT_USAGE;
    throw err;
  }
  return exitCode;
}

/**
 * The whole command line, every command with its options (what --help, the
 * bash completion and the README's synopsis are made from); each action
 * reports its exit status through `setExit`.
 */
export function createProgram(setExit: (code: number) => void): Command {
  const program = new Command('qpgate')
    .description(
      'qpgate: a market-data multicast gateway. Ticks go out as InfiniBand/RoCEv2 UD multicast;\n' +
        'orders come in over RC queue pairs; risk limits change by RDMA atomics.\n' +
        'Start with `qpgate serve`: the soft RoCEv2 backend on loopback, control plane on http://127.0.0.1:7470.',
    )
    .version(VERSION, '-V, --version', 'print the version and exit')
    .exitOverride()
    .configureOutput({ writeErr: (s) => process.stderr.write(s), writeOut: (s) => process.stdout.write(s) });
  // In --help's order.
  addServeCommand(program, setExit);
  addClientCommands(program, setExit);
  addSessionCommands(program, setExit);
  addConfigCommand(program, setExit);
  addFeedCommands(program, setExit);
  addReplayCommand(program, setExit);
  addCompletionCommand(program, setExit);
  return program;
}

type SetExit = (code: number) => void;

function addServeCommand(program: Command, setExit: SetExit): void {
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
      setExit(await serve(opts));
    });
}

/** Commands that read a running gateway (status, qps, sessions) and pingpong. */
function addClientCommands(program: Command, setExit: SetExit): void {
  const client = (name: string, description: string, run: (o: ClientOptions & { json?: boolean }) => Promise<string>) =>
    controlPlaneCommand(program, name, description)
      .option('--json', 'print the JSON the control plane returned')
      .action(async (opts: ClientOptions & { json?: boolean }) => {
        try {
          process.stdout.write(`${await run(opts)}\n`);
        } catch (err) {
          if (!(err instanceof ClientError)) throw err;
          process.stderr.write(`qpgate ${name}: ${err.message}\n`);
          setExit(EXIT_FAILED);
        }
      });
  client('status', 'device, port state, GIDs, MTU, engine placement, SLOs, feeds and sessions of a running gateway (like ibstat)', statusCommand);
  client('qps', 'the queue pairs of a running gateway (like `rdma res show qp`)', qpsCommand);
  addPingpongCommand(program, setExit);
  client('sessions', 'the RC sessions of a running gateway (trading, risk, recovery); --close <id> closes one', sessionsCommand).option(
    '--close <id>',
    'close this session (its QP to ERR; cancel-on-disconnect for trading)',
  );
}

/** Sessions of our own (order, risk): an RC QP on a soft device of ours (--address), the handshake through the control plane. */
function addSessionCommands(program: Command, setExit: SetExit): void {
  const session = (name: string, description: string) =>
    addClientDeviceOptions(
      controlPlaneCommand(program, name, description)
        .requiredOption('--name <name>', 'session name: the same token and name resume the same session')
        .option('--account <account>', 'an account (repeatable)', (v: string, prev: string[]) => [...prev, v], [] as string[])
        .option('--address <ipv4>', "our soft device's address (not the gateway's)", '127.0.0.2')
        .addOption(alternateAddressOption())
        .addOption(alternateDeviceOption())
        .addOption(receiveModeOption())
        .option(
          '--ack-timeout <n>',
          'the local ACK timeout code, 4.096 µs × 2^n (default 14 ≈ 67 ms): with 7 retries, how long a silent gateway is waited for; raise it where processes can be descheduled for longer (a loaded VM)',
        ),
    );
  const run = (name: string, fn: () => Promise<number>) => async () => {
    try {
      setExit(await fn());
    } catch (err) {
      if (!(err instanceof ClientError)) throw err;
      process.stderr.write(`qpgate ${name}: ${err.message}\n`);
      setExit(err instanceof ClientDeviceError ? EXIT_CONFIG : EXIT_FAILED);
    }
  };
  const print = (line: string) => void process.stdout.write(`${line}\n`);
  session('order', 'send orders, one per line from stdin or --file: buy|sell <instrument> <price> <qty> [ioc], cancel <id> <instrument>, replace <id> <instrument> <price> <qty>')
    .option('--file <file>', 'read the requests from this file instead of stdin')
    .option('--first-id <id>', 'first client order id (default: the time in µs, so ids keep rising across runs)')
    .option('--linger <ms>', 'after the last answer, wait this long for fills before closing', '200')
    .option('--reconnect-seconds <s>', 'after a lost connection (the Hello of the first connect included), reconnect (same session, unanswered requests sent again) once a second for up to s seconds before failing; a refused handshake (403) fails at once, as does 0', '30')
    .option('--json', 'every message the session gets as one JSON object per line')
    .action(function (this: Command) {
      const o = this.opts<Parameters<typeof orderCommand>[0]>();
      return run('order', () => orderCommand(o, print))();
    });
  session('risk', "read an account's risk words by RDMA READ; change them with atomics (CMP_SWAP, FETCH_ADD)")
    .option('--set-credit-limit <n>', 'set the credit limit (CMP_SWAP from the value read)')
    .option('--add-credit <n>', 'add to the credit limit (FETCH_ADD; negative lowers it)')
    .option('--kill', 'set the kill switch (CMP_SWAP 0 -> 1): the account\'s next order is rejected')
    .option('--unkill', 'clear the kill switch (CMP_SWAP 1 -> 0)')
    .option('--json', 'each change and the words read as one JSON object per line')
    .action(function (this: Command) {
      const o = this.opts<Parameters<typeof riskCommand>[0]>();
      return run('risk', () => riskCommand(o, print))();
    });
}

function addConfigCommand(program: Command, setExit: SetExit): void {
  program
    .command('config')
    .description('print the effective configuration, each key with its value and where it came from (secrets redacted)')
    .option('-c, --config <file>', 'YAML config merged over config/default.yaml')
    .option('-s, --set <key=value>', 'override one config key (repeatable)', (v: string, p: string[]) => [...p, v], [] as string[])
    .option('--json', 'one JSON array of {key, value, origin}')
    .action((opts: { config?: string; set: string[]; json?: boolean }) => {
      try {
        const keys = effectiveConfig({ file: opts.config, overrides: opts.set });
        process.stdout.write(`${opts.json ? JSON.stringify(keys, null, 2) : formatEffective(keys)}\n`);
      } catch (err) {
        if (!(err instanceof ConfigError)) throw err;
        process.stderr.write(`qpgate: ${err.message}\n`);
        setExit(EXIT_CONFIG);
      }
    });
}

function addReplayCommand(program: Command, setExit: SetExit): void {
  program
    .command('replay')
    .argument('<file>', 'a tick file made by `qpgate record`')
    .description('run the gateway publishing a tick file instead of the synthetic source (serve with feeds.source=replay)')
    .addOption(replaySpeedOption())
    .option('--once', 'publish the file once instead of in a loop')
    .option('-c, --config <file>', 'YAML config merged over config/default.yaml')
    .option('-s, --set <key=value>', 'override one config key (repeatable)', (v: string, p: string[]) => [...p, v], [] as string[])
    .option('--port <port>', 'control plane port (control.port)')
    .action(async (file: string, opts: { speed: string; once?: boolean; config?: string; set: string[]; port?: string }) => {
      try {
        const { records, truncatedBytes } = readTickFile(file);
        process.stderr.write(`qpgate replay: ${records.length} messages in ${file}${truncatedBytes ? ` (a partial last record of ${truncatedBytes} bytes left out)` : ''}\n`);
        setExit(await serve({ config: opts.config, port: opts.port, set: [...replayOverrides(file, opts), ...opts.set] }));
      } catch (err) {
        if (!(err instanceof TickFileError) && !(err instanceof ClientError) && (err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
        process.stderr.write(`qpgate replay: ${(err as Error).message}\n`);
        setExit(EXIT_CONFIG);
      }
    });
}

function addCompletionCommand(program: Command, setExit: SetExit): void {
  program
    .command('completion')
    .argument('<shell>', 'bash')
    .description('print a shell completion script: qpgate completion bash > /etc/bash_completion.d/qpgate')
    .action((shell: string) => {
      if (shell !== 'bash') {
        process.stderr.write(`qpgate completion: only bash is supported, got ${JSON.stringify(shell)}\n`);
        setExit(EXIT_USAGE);
        return;
      }
      process.stdout.write(bashCompletion(program));
    });
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
      return EXIT_CONFIG;
    }
    throw err;
  }
  const logger = createLogger(config.log.level);
  try {
    const gateway = await startGateway(config, logger);
    return await gateway.closed;
  } catch (err) {
    if (err instanceof StateDirLockedError || err instanceof DeviceOpenError || err instanceof TlsConfigError || err instanceof SecurityConfigError) {
      process.stderr.write(`qpgate: ${err.message}\n`);
      return EXIT_CONFIG;
    }
    logger.fatal({ err }, 'qpgate failed to start');
    process.stderr.write(`qpgate: ${(err as Error).message}\n`);
    return 1;
  }
}
