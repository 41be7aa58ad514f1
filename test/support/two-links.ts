// Two network namespaces joined by two veth pairs, for the path migration
// test and bench (docs/protocol.md §1.10): the gateway's namespace holds one
// end of each link (the primary and the alternate address), the client's the
// other. Links go down with `ip link set down`, as an operator or a failing
// NIC takes them; the host kernel needs nothing beyond veth. Names carry the
// prefix qga- and the pid, so runs side by side do not meet, and close()
// deletes both namespaces (their veths go with them) whatever happened.
import { execFileSync, spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';

export interface Link {
  /** The gateway's end (in `gateway`) and its address; the client's end and its address. */
  gatewayEnd: string;
  gatewayAddress: string;
  clientEnd: string;
  clientAddress: string;
}

export interface TwoLinks {
  gateway: string;
  client: string;
  primary: Link;
  alternate: Link;
  /** Runs `argv` in namespace `ns` (ip netns exec), as a child process. */
  spawnIn(ns: string, argv: string[], options?: SpawnOptions): ChildProcess;
  /** Runs `argv` in namespace `ns` and returns its stdout (throws on a non-zero exit). */
  runIn(ns: string, argv: string[]): string;
  /** `ip link set <end> down` in the gateway's namespace: the link loses its carrier at both ends. */
  down(link: Link): void;
  /**
   * `ip link set <end> up` again (the kernel restores the link's route), and
   * returns once both ends are operationally up, with their neighbour entries
   * for the link flushed. Either way a connection across the link right after
   * up() could fail with EHOSTUNREACH (a failover bench run did): until the
   * carrier is up ARP cannot work, and a resolution that the down link's
   * traffic started, its probes spent while the link was down, fails the
   * packets queued behind it once its last probe goes unanswered.
   */
  up(link: Link): void;
  close(): void;
}

/** Why the test cannot run here, or undefined: namespaces need root (CAP_SYS_ADMIN and CAP_NET_ADMIN). */
export function twoLinksUnavailable(): string | undefined {
  if (process.getuid?.() !== 0) return 'needs root: it makes two network namespaces joined by two veth pairs (ip netns, ip link)';
  const probe = `qga-probe${process.pid}`;
  try {
    execFileSync('ip', ['netns', 'add', probe], { stdio: 'ignore' });
    execFileSync('ip', ['netns', 'del', probe], { stdio: 'ignore' });
  } catch {
    return 'needs iproute2 and a kernel that lets root make network namespaces (ip netns add failed)';
  }
  return undefined;
}

const ip = (...args: string[]): void => void execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });

/** Whether `dev` in `ns` is operationally up (`state UP`: its veth peer is up too). */
const operUp = (ns: string, dev: string): boolean => / state UP /.test(execFileSync('ip', ['-n', ns, '-o', 'link', 'show', 'dev', dev], { encoding: 'utf8' }));

/** Up to `ms` for `ok`, checking every 10 ms without giving the event loop up (up() is synchronous, as the test steps around it are). */
function waitSync(ok: () => boolean, ms: number): boolean {
  const tick = new Int32Array(new SharedArrayBuffer(4));
  for (const deadline = Date.now() + ms; !ok(); Atomics.wait(tick, 0, 0, 10)) if (Date.now() > deadline) return false;
  return true;
}

/** Makes the namespaces and links; `tag` tells runs of one process apart (1..250). */
export function makeTwoLinks(tag = 1): TwoLinks {
  const id = `${process.pid % 100000}${tag}`;
  const gateway = `qga-g${id}`;
  const client = `qga-c${id}`;
  const subnet = (k: number): string => `10.${200 + k}.${tag % 250}`;
  const link = (k: number, name: string): Link => ({
    gatewayEnd: `qga${id}${name}`,
    gatewayAddress: `${subnet(k)}.1`,
    clientEnd: `qga${id}${name.toUpperCase()}`,
    clientAddress: `${subnet(k)}.2`,
  });
  const primary = link(1, 'p');
  const alternate = link(2, 'a');
  const close = (): void => {
    for (const ns of [gateway, client]) {
      try {
        ip('netns', 'del', ns);
      } catch {
        // not made, or gone already
      }
    }
  };
  try {
    ip('netns', 'add', gateway);
    ip('netns', 'add', client);
    for (const ns of [gateway, client]) ip('-n', ns, 'link', 'set', 'lo', 'up');
    for (const l of [primary, alternate]) {
      ip('link', 'add', l.gatewayEnd, 'netns', gateway, 'type', 'veth', 'peer', 'name', l.clientEnd, 'netns', client);
      ip('-n', gateway, 'addr', 'add', `${l.gatewayAddress}/24`, 'dev', l.gatewayEnd);
      ip('-n', client, 'addr', 'add', `${l.clientAddress}/24`, 'dev', l.clientEnd);
      ip('-n', gateway, 'link', 'set', l.gatewayEnd, 'up');
      ip('-n', client, 'link', 'set', l.clientEnd, 'up');
    }
  } catch (err) {
    close();
    throw err;
  }
  return {
    gateway,
    client,
    primary,
    alternate,
    spawnIn: (ns, argv, options = {}) => spawn('ip', ['netns', 'exec', ns, ...argv], options),
    runIn: (ns, argv) => execFileSync('ip', ['netns', 'exec', ns, ...argv], { encoding: 'utf8' }),
    down: (l) => ip('-n', gateway, 'link', 'set', l.gatewayEnd, 'down'),
    up: (l) => {
      ip('-n', gateway, 'link', 'set', l.gatewayEnd, 'up');
      if (!waitSync(() => operUp(gateway, l.gatewayEnd) && operUp(client, l.clientEnd), 10_000)) {
        throw new Error(`${l.gatewayEnd} (${gateway}) and ${l.clientEnd} (${client}): not both up 10 s after ip link set up`);
      }
      ip('-n', gateway, 'neigh', 'flush', 'dev', l.gatewayEnd);
      ip('-n', client, 'neigh', 'flush', 'dev', l.clientEnd);
    },
    close,
  };
}
