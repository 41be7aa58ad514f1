// The network faults of the campaign: `tc qdisc replace ... netem` on both
// ends of the veth pair between the gateway's namespace and the clients'
// (netem acts on egress: gw0 carries the multicast and the gateway's RC
// answers, cl0 the clients' requests, acks and recovery asks).
//
// Phases, not per-link profiles: there is one link, and every workload (the
// multicast, recovery over RC, order entry over RC, the control plane's
// TCP) must meet every fault, and a kill must fall in each of them over a
// long enough run. The phases repeat in this order.
import { spawnSync } from 'node:child_process';

export interface NetemPhase {
  name: string;
  /** netem arguments after `netem`. */
  args: string;
}

export const PHASES: readonly NetemPhase[] = [
  { name: 'loss 1%', args: 'loss 1%' },
  { name: 'loss 10%', args: 'loss 10%' },
  { name: 'duplicate 5%', args: 'duplicate 5%' },
  // netem's reorder sends 25% of the packets at once and holds the rest 3 ms.
  { name: 'reorder 25%', args: 'delay 3ms reorder 25% 50%' },
  { name: 'delay 5ms ± 3ms', args: 'delay 5ms 3ms distribution normal' },
  // Well under what the feed, the orders and their answers need together (they queue, then netem drops past its limit).
  { name: 'rate 4mbit', args: 'rate 4mbit limit 200' },
];

export interface Link {
  /** The namespace (undefined: this process's) and the device. */
  netns?: string;
  dev: string;
}

function tc(link: Link, args: string[]): string {
  const argv = link.netns === undefined ? ['tc', ...args] : ['ip', 'netns', 'exec', link.netns, 'tc', ...args];
  const r = spawnSync(argv[0]!, argv.slice(1), { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${argv.join(' ')} failed (${r.status}): ${r.stderr}`);
  return r.stdout;
}

export function applyPhase(links: readonly Link[], phase: NetemPhase): void {
  for (const l of links) tc(l, ['qdisc', 'replace', 'dev', l.dev, 'root', 'netem', ...phase.args.split(' ')]);
}

/** Removes the netem qdisc (the next applyPhase adds a fresh one, its counters at 0). */
export function clearLinks(links: readonly Link[]): void {
  for (const l of links) tc(l, ['qdisc', 'del', 'dev', l.dev, 'root']);
}

export interface NetemCounters {
  sent: number;
  dropped: number;
}

/** What the qdisc on a link sent and dropped (netem's own drops and its queue's overflow). */
export function netemCounters(link: Link): NetemCounters {
  const out = tc(link, ['-s', 'qdisc', 'show', 'dev', link.dev]);
  const m = /Sent \d+ bytes (\d+) pkt \(dropped (\d+)/.exec(out);
  return { sent: m ? Number(m[1]) : NaN, dropped: m ? Number(m[2]) : NaN };
}
