// `qpgate pingpong [server]`: the command-line face of pingpong.ts, with the
// options of ibv_rc_pingpong / ibv_ud_pingpong under the same letters, so a
// script written for the C tools runs against qpgate by changing the name.
import { Option, type Command } from 'commander';

import { addClientDeviceOptions, ClientError, clientDevice, clientDeviceFailure, type ClientDeviceFlags } from '../client/control-client.js';
import type { OpenIbvDeviceOptions, PathMtu } from '../native/verbs.js';
import { DEFAULT_PORT } from './exchange.js';
import { runPingpong } from './pingpong.js';

interface PingpongFlags extends Omit<ClientDeviceFlags, 'address'> {
  transport: 'rc' | 'ud';
  address?: string;
  port: string;
  size?: string;
  iters: string;
  mtu: string;
  rxDepth: string;
  chk?: boolean;
  icrc: 'strict' | 'count-unverifiable';
  receiveMode: 'plain-udp' | 'af-packet';
  json?: boolean;
}

const MTUS = ['256', '512', '1024', '2048', '4096'];

export function addPingpongCommand(program: Command, setExitCode: (code: number) => void): void {
  const command = program
    .command('pingpong')
    .argument('[server]', 'connect to this ibv_*_pingpong / qpgate pingpong server; without it, be the server')
    .description(
      'ping-pong SENDs with rdma-core\'s ibv_rc_pingpong or ibv_ud_pingpong (either side) on the soft RoCEv2 backend, or on an RDMA device (--backend ibv)',
    )
    .addOption(new Option('-t, --transport <rc|ud>', 'RC (as ibv_rc_pingpong) or UD (as ibv_ud_pingpong)').choices(['rc', 'ud']).default('rc'))
    .option('-a, --address <ipv4>', 'the soft device\'s IPv4 address (an address of a local interface; --backend soft)')
    .option('-p, --port <port>', 'TCP port of the address exchange', String(DEFAULT_PORT))
    .option('-s, --size <bytes>', 'message size (default 4096 for rc, 1024 for ud)')
    .option('-n, --iters <n>', 'round trips', '1000')
    .addOption(new Option('-m, --mtu <bytes>', 'path MTU').choices(MTUS).default('1024'))
    .option('-r, --rx-depth <n>', 'receives posted', '500')
    .option('-c, --chk', 'client: check that the data came back unchanged after the last round trip')
    .addOption(
      new Option('--icrc <policy>', 'strict: drop packets whose ICRC does not verify with IPv4 ID 0; count-unverifiable: accept and count them (rxe, NIC peers)')
        .choices(['strict', 'count-unverifiable'])
        .default('strict'),
    )
    .addOption(
      new Option('--receive-mode <mode>', 'plain-udp: UDP sockets; af-packet: see the real IP header and verify every ICRC, rxe\'s included (needs CAP_NET_RAW)')
        .choices(['plain-udp', 'af-packet'])
        .default('plain-udp'),
    )
    .option('--json', 'print the result as JSON after the run');
  addClientDeviceOptions(command).action(async (server: string | undefined, flags: PingpongFlags) => {
      try {
        const result = await runPingpong({
          transport: flags.transport,
          ...deviceOf(flags),
          server,
          port: integer(flags.port, '--port'),
          size: flags.size === undefined ? undefined : integer(flags.size, '--size'),
          iters: integer(flags.iters, '--iters'),
          mtu: Number(flags.mtu) as PathMtu,
          rxDepth: integer(flags.rxDepth, '--rx-depth'),
          check: flags.chk === true,
          icrcPolicy: flags.icrc,
          receiveMode: flags.receiveMode,
          // --json: the result alone on stdout (scripts parse it); the C tools' lines go to stderr.
          ...(flags.json === true ? { print: (line: string) => void process.stderr.write(`${line}\n`) } : {}),
        });
        if (flags.json === true) process.stdout.write(`${JSON.stringify(result)}\n`);
        if (result.checked === false) setExitCode(1);
      } catch (err) {
        const device = clientDeviceFailure(err);
        process.stderr.write(`qpgate pingpong: ${(device ?? (err as Error)).message}\n`);
        setExitCode(device !== undefined ? 2 : 1);
      }
    });
}

// -a for soft (the C tools have no such flag); --backend ibv --device as the gateway's config names them.
function deviceOf(flags: PingpongFlags): { address: string } | { ibv: OpenIbvDeviceOptions } {
  if (flags.backend === 'ibv') {
    if (flags.address !== undefined) throw new ClientError('--address is for --backend soft (an ibv device has its interface\'s address)');
    return { ibv: clientDevice({ ...flags, address: '' }) as OpenIbvDeviceOptions };
  }
  if (flags.address === undefined) throw new ClientError('--address is needed for the soft device (--backend soft): an IPv4 address of a local interface');
  clientDevice({ ...flags, address: flags.address });  // --device / --gid-index without --backend ibv: said so
  return { address: flags.address };
}

function integer(text: string, flag: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0) throw new RangeError(`${flag} must be a non-negative integer, got ${JSON.stringify(text)}`);
  return n;
}
