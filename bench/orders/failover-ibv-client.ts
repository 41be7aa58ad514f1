// The guest side of bench/orders/failover-ibv.ts, inside the rdma-vm guest
// (test/rdma-vm/run --veth --veth2): an OrderClient on rxe_b with rxe_d as
// its alternate device, against a gateway on rxe_a with rxe_c as its
// backend.alternateDevice. Each run trades a few orders, cuts the link the
// session is on (tc drops every packet arriving at either of its ends, so
// rxe's ports stay ACTIVE) and times the next order from the cut to its Ack:
// the retries that find the link dead (at most 6 on rxe: 7 x the 67 ms ACK
// timeout), the failover to the other device pair (a new handshake, Hello,
// the resend) and the order again. The link is restored before the next
// run, which cuts the other one: the session goes back and forth. Prints one
// JSON line: { times } in ms.
//
//   node failover-ibv-client.js URL TOKEN DEV ALT_DEV RUNS LINK1_END1 LINK1_END2 LINK2_END1 LINK2_END2
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { OrderClient } from '../../src/orders/client.js';
import { Side } from '../../src/orders/messages.js';

const tc = (...args: string[]): void => void execFileSync('tc', args);

function cut(ends: string[]): void {
  for (const dev of ends) {
    tc('qdisc', 'add', 'dev', dev, 'clsact');
    // u32 and gact, as test/interop/guest-gateway.sh's lose_feed_frames: modules the guest has.
    tc('filter', 'add', 'dev', dev, 'ingress', 'protocol', 'ip', 'u32', 'match', 'u32', '0', '0', 'action', 'drop');
  }
}

const restore = (ends: string[]): void => ends.forEach((dev) => tc('qdisc', 'del', 'dev', dev, 'clsact'));

async function main(): Promise<void> {
  const [url, token, dev, alt, runsText, ...ends] = process.argv.slice(2);
  const links = [ends.slice(0, 2), ends.slice(2, 4)];
  const client = await OrderClient.connect({
    url: url!, token: token!, name: 'failover-bench', accounts: [1n],
    device: { kind: 'ibv', name: dev! }, alternateDevice: { kind: 'ibv', name: alt! },
    keepaliveMs: 0, timeoutMs: 60_000, helloTimeoutMs: 60_000,
  });
  client.on('disconnect', () => undefined);
  let id = 0n;
  const order = () => client.newOrder({ clientOrderId: ++id, instrumentId: 1001, side: Side.SIDE_BUY, price: 9_000, quantity: 1, account: 1n });
  const times: number[] = [];
  for (let run = 0; run < Number(runsText); run++) {
    for (let i = 0; i < 5; i++) await order();
    const link = links[client.activeDevice === 'primary' ? 0 : 1]!;
    const failovers = client.stats().failovers;
    cut(link);
    const t0 = performance.now();
    const answer = await order();
    times.push(performance.now() - t0);
    restore(link);
    if (answer.kind !== 'ack' || client.stats().failovers !== failovers + 1) {
      throw new Error(`run ${run}: ${answer.kind}, failovers ${failovers} -> ${client.stats().failovers}`);
    }
    process.stderr.write(`run ${run + 1}: ${times[times.length - 1]!.toFixed(0)} ms, now on the ${client.activeDevice} device\n`);
  }
  await client.close();
  console.log(JSON.stringify({ times }));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (process.argv.length < 4) {
    console.log('# failover-ibv-client: bench/orders/failover-ibv.ts runs it in the guest; nothing to do here');
  } else {
    await main();
    process.exit(0);
  }
}
