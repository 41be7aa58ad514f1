// The feed's command line:
//   qpgate subscribe   join a running gateway's channels and print ticks live,
//                      or with --stats rates and latency updating in place
//   qpgate record      write a live subscription to a tick file (recording.ts)
//   qpgate replay      run the gateway publishing a tick file instead of the
//                      synthetic source (`serve` with feeds.source=replay)
// subscribe and record learn the channels' groups from the gateway's
// /v1/feeds/:name and receive on a soft device of their own (--address); with
// --recovery they recover gaps and late joins over RC (role 'recovery').
import { Option, type Command } from 'commander';
import { createLogUpdate } from 'log-update';
import { basename, dirname, resolve } from 'node:path';

import {
  addClientDeviceOptions,
  alternateAddressOption,
  alternateDeviceOption,
  ClientDeviceError,
  ClientError,
  clientDevice,
  clientDeviceFailure,
  clientDeviceName,
  controlPlaneCommand,
  DEFAULT_URL,
  httpTimeoutMs,
  receiveModeOption,
  resolveTls,
  resolveToken,
  withAlternateDevice,
  type ClientDeviceFlags,
  type ClientOptions,
} from '../client/control-client.js';
import { secondsOption } from '../client/cli-numbers.js';
import { formatNs } from '../common/units.js';
import { discoverChannels } from './discovery.js';
import { TickFileWriter } from './recording.js';
import { subscribe, type FeedMessage, type FeedSubscriber } from './subscriber.js';
import { PriceExponents, formatTick, tickJson } from './tick-format.js';

interface SubscribeFlags extends ClientOptions, ClientDeviceFlags {
  feed: string;
  channel: string[];
  count?: string;
  seconds?: string;
  stats?: boolean;
  recovery?: boolean;
  name?: string;
  json?: boolean;
  out?: string;
}

function parseCount(text: string | undefined, flag: string): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) throw new ClientError(`${flag} must be a positive integer, got ${JSON.stringify(text)}`);
  return n;
}

interface StatsSample {
  seconds: number;
  received: number;
  perSecond: number;
  gaps: number;
  duplicates: number;
  recovered: number;
  lost: number;
  latencyNs: { p50: number | null; p99: number | null; p999: number | null };
  /** Frames of a feed session the channels do not follow (a second gateway on the groups?). */
  otherSessionFrames: number;
}

/** The subscription's counters now, and the rate since `previous` (which it advances). */
function statsSample(sub: FeedSubscriber, startedMs: number, previous: { received: number; at: number }): StatsSample {
  const s = sub.stats();
  const received = s.channels.reduce((a, c) => a + c.received, 0);
  const now = performance.now();
  const perSecond = Math.round(((received - previous.received) * 1000) / Math.max(1, now - previous.at));
  previous.received = received;
  previous.at = now;
  const sum = (k: 'gaps' | 'duplicates' | 'recovered' | 'unrecoverable' | 'otherSessionFrames') => s.channels.reduce((a, c) => a + c[k], 0);
  const lat = s.channels[0]?.latency;
  return {
    seconds: Math.round((now - startedMs) / 1000),
    received,
    perSecond,
    gaps: sum('gaps'),
    duplicates: sum('duplicates'),
    recovered: sum('recovered'),
    lost: sum('unrecoverable'),
    latencyNs: { p50: lat?.p50Ns ?? null, p99: lat?.p99Ns ?? null, p999: lat?.p999Ns ?? null },
    otherSessionFrames: sum('otherSessionFrames'),
  };
}

function statsLine(x: StatsSample): string {
  return (
    `${x.seconds} s  ${x.received} msgs  ${x.perSecond}/s  gaps ${x.gaps}  dups ${x.duplicates}  ` +
    `recovered ${x.recovered}  lost ${x.lost}  latency p50 ${formatNs(x.latencyNs.p50)}  p99 ${formatNs(x.latencyNs.p99)}  p99.9 ${formatNs(x.latencyNs.p999)}  other-session ${x.otherSessionFrames}`
  );
}

/** --stats lines: on a terminal one line rewritten in place (log-update), else (a pipe, --json) one line each time. */
function statsOutput(json: boolean): { update(line: string): void; done(line: string): void } {
  // A terminal of no size (a pty nobody sized) would be shown nothing by log-update.
  const sized = process.stdout.isTTY === true && process.stdout.rows > 0 && process.stdout.columns > 0;
  if (json || !sized) {
    const print = (l: string) => void process.stdout.write(`${l}\n`);
    return { update: print, done: print };
  }
  const live = createLogUpdate(process.stdout, { showCursor: true });
  return {
    update: (l) => live(l),
    done: (l) => {
      live(l);
      live.done();
    },
  };
}

async function openSubscription(command: string, flags: SubscribeFlags, onMessage: (m: FeedMessage) => void): Promise<FeedSubscriber> {
  const wanted = flags.channel.map((c) => {
    const n = Number(c);
    if (!Number.isInteger(n) || n < 0 || n > 65535) throw new ClientError(`--channel must be a channel id (0..65535), got ${JSON.stringify(c)}`);
    return n;
  });
  const device = clientDevice(flags);
  const channels = await discoverChannels(flags, flags.feed, wanted);
  try {
    return await subscribe({
      engineOptions: {},
      device,
      ...withAlternateDevice(flags),
      channels,
      onMessage,
      onWarning: (w) => process.stderr.write(`qpgate ${command}: warning: ${w.message}\n`),
      ...(flags.recovery
        ? { recovery: { name: flags.name ?? `subscriber-${process.pid}`, feed: flags.feed, url: flags.url ?? DEFAULT_URL, token: resolveToken(flags).token, tls: resolveTls(flags), timeoutMs: httpTimeoutMs(flags) } }
        : {}),
    });
  } catch (err) {
    throw clientDeviceFailure(err) ?? new ClientError(`cannot subscribe on ${clientDeviceName(flags)}: ${(err as Error).message}`);
  }
}

/**
 * Resolves at --count messages, after --seconds, on SIGINT/SIGTERM, or when
 * stdout's reader has gone (`qpgate subscribe | head`: EPIPE ends the run
 * quietly). take() admits one more message, false once --count were taken
 * or the run is over: messages still arriving in the last batch are not printed.
 */
function runUntil(flags: SubscribeFlags): { done: Promise<void>; take: () => boolean } {
  const count = parseCount(flags.count, '--count');
  const seconds = flags.seconds === undefined ? undefined : secondsOption(flags.seconds, '--seconds', 'positive');
  let taken = 0;
  let over = false;
  let finish!: () => void;
  const done = new Promise<void>((resolve) => (finish = resolve));
  const timer = seconds === undefined ? undefined : setTimeout(finish, seconds * 1000);
  const onSignal = () => finish();
  const onStdoutError = (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err;
    finish();
  };
  process.once('SIGINT', onSignal).once('SIGTERM', onSignal);
  process.stdout.on('error', onStdoutError);
  void done.then(() => {
    over = true;
    if (timer) clearTimeout(timer);
    process.off('SIGINT', onSignal).off('SIGTERM', onSignal);
  });
  const take = () => {
    if (over || (count !== undefined && taken >= count)) return false;
    if (count !== undefined && ++taken >= count) finish();
    return true;
  };
  return { done, take };
}

function feedCommand(program: Command, name: string, description: string): Command {
  return addClientDeviceOptions(controlPlaneCommand(program, name, description, 'the gateway control plane (for the channels, and recovery)'))
    .option('--feed <name>', 'the gateway\'s feed (GET /v1/feeds lists them)', 'default')
    .option('--channel <id>', 'a channel to join (repeatable; default: every channel of the feed)', (v: string, p: string[]) => [...p, v], [] as string[])
    .option('--address <ipv4>', 'the IPv4 address of our own soft device (a local address, not the gateway\'s)', '127.0.0.3')
    .addOption(alternateAddressOption())
    .addOption(alternateDeviceOption())
    .addOption(receiveModeOption())
    .option('--count <n>', 'stop after n messages')
    .option('--seconds <s>', 'stop after s seconds (a decimal number)')
    .option('--json', 'one JSON object per line instead of text')
    .option('--recovery', 'recover gaps and late joins over RC from the gateway (token with role recovery)')
    .option('--name <name>', 'the recovery session name (default subscriber-<pid>)');
}

export function addFeedCommands(program: Command, setExitCode: (code: number) => void): void {
  const fail = (name: string, err: unknown) => {
    if (!(err instanceof ClientError)) throw err;
    process.stderr.write(`qpgate ${name}: ${err.message}\n`);
    setExitCode(err instanceof ClientDeviceError ? 2 : 1);
  };

  feedCommand(program, 'subscribe', 'print a running gateway\'s ticks live (like a feed handler\'s tcpdump), or with --stats rates, gaps and latency')
    .option('--stats', 'instead of ticks, one line of rates, gaps, recoveries and latency percentiles, updated in place every second')
    .action(async (flags: SubscribeFlags) => {
      try {
        const until = runUntil(flags);
        const exponents = new PriceExponents();
        const sub = await openSubscription('subscribe', flags, (m) => {
          if (!until.take() || flags.stats) return;
          process.stdout.write(`${flags.json ? tickJson(m, exponents) : formatTick(m, exponents)}\n`);
        });
        const started = performance.now();
        const previous = { received: 0, at: started };
        const line = () => {
          const sample = statsSample(sub, started, previous);
          return flags.json ? JSON.stringify(sample) : statsLine(sample);
        };
        const stats = flags.stats ? statsOutput(flags.json === true) : undefined;
        const ticker = stats && setInterval(() => stats.update(line()), 1000);
        await until.done;
        clearInterval(ticker);
        stats?.done(line());
        await sub.close();
      } catch (err) {
        fail('subscribe', err);
      }
    });

  feedCommand(program, 'record', 'write a live subscription to a tick file, for `qpgate replay` or the replay source')
    .requiredOption('--out <file>', 'the tick file to write (replaced)')
    .action(async (flags: SubscribeFlags) => {
      try {
        const writer = openTickFile(flags.out!);
        const until = runUntil(flags);
        const sub = await openSubscription('record', flags, (m) => {
          if (!until.take()) return;
          writer.append(
            { channel: m.channel, type: m.type, instrumentId: m.instrumentId, key: m.key, action: m.action, body: m.body, snapshot: m.snapshot },
            m.receiveTimeNs,
          );
        });
        await until.done;
        await sub.close();
        writer.close();
        process.stdout.write(
          flags.json ? `${JSON.stringify({ recorded: writer.records, file: flags.out })}\n` : `recorded ${writer.records} messages to ${flags.out}\n`,
        );
      } catch (err) {
        fail('record', err);
      }
    });
}

/** The tick file --out names, or one line saying why it cannot be written (no stack). */
function openTickFile(path: string): TickFileWriter {
  try {
    return new TickFileWriter(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === undefined) throw err;
    throw new ClientError(`cannot write ${path}: ${code} (${(err as Error).message.replace(/^[A-Z]+: /, '')})`);
  }
}

/** `qpgate replay FILE`: the serve overrides that make the gateway publish FILE. */
export function replayOverrides(file: string, flags: { speed: string; once?: boolean }): string[] {
  const speed = Number(flags.speed);
  if (!(speed >= 0) || !Number.isFinite(speed)) throw new ClientError(`--speed must be a number >= 0 (0 = as fast as possible), got ${JSON.stringify(flags.speed)}`);
  // The file's own directory is the replay directory: the operator named this file.
  const path = resolve(file);
  return ['feeds.enabled=true', 'feeds.source=replay', `feeds.replay.dir=${dirname(path)}`, `feeds.replay.file=${basename(path)}`, `feeds.replay.speed=${speed}`, `feeds.replay.loop=${flags.once ? 'false' : 'true'}`];
}

export const replaySpeedOption = () => new Option('--speed <x>', '1 = the recorded pacing, 2 = twice as fast, 0 = as fast as possible').default('1');
