// examples/risk-kill-switch.ts: stop an account's trading with one RDMA
// atomic, and let it trade again.
//
// What it shows: a RiskClient (a risk session: an RC queue pair that sends no
// messages) changes the account's kill-switch word in the gateway's memory
// with ATOMIC CMP_SWAP 0 → 1; the order path reads that word before it acks,
// so the account's next order is rejected KILL_SWITCH. CMP_SWAP 1 → 0 clears
// it, and an order is accepted again (then cancelled, so nothing rests).
//
// How to run it (in this checkout, with the gateway running: `npm start`):
//   npm run build:ts
//   node dist/examples/risk-kill-switch.js --url http://127.0.0.1:7470 --token="$(cat var/admin.token)"
// Options: --url, --token (default $QPGATE_TOKEN, else var/admin.token),
// --account (default 1), --address (the order session's device, default
// 127.0.0.2), --risk-address (the risk session's device, default 127.0.0.4):
// local addresses that are not the gateway's.
//
// What it prints:
//   kill switch of account 1: 0 -> 1 (CMP_SWAP)
//   order 1764586335000000: reject KILL_SWITCH: account 1: kill switch is set
//   kill switch of account 1: 1 -> 0 (CMP_SWAP)
//   order 1764586335000001: ack order 19
//   cancelled 1764586335000001
//   done
// Exit status 0; 1 if the gateway did not answer as above.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { OrderClient, RiskClient, Side, type NewOrderAnswer } from 'qpgate';

const { values: args } = parseArgs({
  options: {
    url: { type: 'string', default: 'http://127.0.0.1:7470' },
    token: { type: 'string' },
    account: { type: 'string', default: '1' },
    address: { type: 'string', default: '127.0.0.2' },
    'risk-address': { type: 'string', default: '127.0.0.4' },
  },
});
// The admin token the gateway generated at start, unless one is given.
const token = args.token ?? process.env['QPGATE_TOKEN'] ?? readFileSync('var/admin.token', 'utf8').trim();
const account = BigInt(args.account);
const instrumentId = 1001;

const risk = await RiskClient.connect({ url: args.url, token, name: 'example-risk', accounts: [account], device: { address: args['risk-address'] }, takeover: true });
const orders = await OrderClient.connect({ url: args.url, token, name: 'example-kill-switch', accounts: [account], device: { address: args.address }, takeover: true });

// A resting buy far from the market, well inside the collar.
let nextId = BigInt(Date.now()) * 1000n;
const buy = (): Promise<NewOrderAnswer> => orders.newOrder({ clientOrderId: nextId++, instrumentId, side: Side.SIDE_BUY, price: 9800, quantity: 1, account });
const show = (id: bigint, a: NewOrderAnswer): string => `order ${id}: ${a.kind === 'ack' ? `ack order ${a.orderId}` : `reject ${a.reasonName}: ${a.text}`}`;

let status = 0;
let leftKilled = false; // set by us and not yet cleared
const expect = (ok: boolean, what: string) => {
  if (!ok) {
    console.log(`unexpected: ${what}`);
    status = 1;
  }
};
try {
  // CMP_SWAP returns the value before: it swapped iff that was the value compared.
  const before = await risk.compareSwap(account, 'killSwitch', 0n, 1n);
  leftKilled = before === 0n;
  console.log(`kill switch of account ${account}: ${before === 0n ? '0 -> 1' : `was ${before}, left as is`} (CMP_SWAP)`);

  const killedId = nextId;
  const killed = await buy();
  console.log(show(killedId, killed));
  expect(killed.kind === 'reject' && killed.reasonName === 'KILL_SWITCH', 'the order was not rejected KILL_SWITCH');

  const set = await risk.compareSwap(account, 'killSwitch', 1n, 0n);
  leftKilled = false;
  console.log(`kill switch of account ${account}: ${set === 1n ? '1 -> 0' : `was ${set}, left as is`} (CMP_SWAP)`);

  const acceptedId = nextId;
  const accepted = await buy();
  console.log(show(acceptedId, accepted));
  expect(accepted.kind === 'ack', 'the order after the kill switch was cleared was not accepted');
  if (accepted.kind === 'ack') {
    const c = await orders.cancel({ clientOrderId: nextId++, origClientOrderId: acceptedId, instrumentId });
    console.log(c.kind === 'cancelAck' ? `cancelled ${acceptedId}` : `cancel rejected: ${c.reasonName}: ${c.text}`);
  }
  if (status === 0) console.log('done');
} finally {
  // Never leave the account stopped by a run that failed half-way.
  if (leftKilled) await risk.compareSwap(account, 'killSwitch', 1n, 0n);
  await orders.close();
  await risk.close();
}
process.exitCode = status;
