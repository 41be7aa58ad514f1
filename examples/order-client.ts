// examples/order-client.ts: place two orders that trade with each other and
// watch the fills come back.
//
// What it shows: OrderClient.connect() opens a trading session (an RC queue
// pair, set up through the control plane's POST /v1/sessions) for accounts 1
// and 2; newOrder() resolves with the gateway's answer (Ack or Reject); fills
// arrive as 'fill' events. A resting buy for account 1, then a crossing sell
// for account 2: two accounts, because self-match prevention stops an account
// trading with itself (the sell would be cancelled instead). Both fills (the
// buy's as maker, the sell's as taker) come to this session; the rest of the
// buy is then cancelled, and the session closed.
//
// How to run it (in this checkout, with the gateway running: `npm start`):
//   npm run build:ts
//   node dist/examples/order-client.js --url http://127.0.0.1:7470 --token="$(cat var/admin.token)"
// Options: --url, --token (default $QPGATE_TOKEN, else var/admin.token),
// --address (our device's IPv4, not the gateway's; default 127.0.0.2),
// --instrument (default 1001), --price (default 10000), --buy-account (1),
// --sell-account (2).
//
// What it prints:
//   session 1 for accounts 1, 2
//   ack 1764586335000000 order 17                           (the buy: account 1, 5 @ 10000, rests)
//   ack 1764586335000001 order 18                           (the sell: account 2, 3 @ 10000)
//   fill 1764586335000001 sell 3 @ 10000 leaves 0 trade 4 taker  (both sides of trade 4)
//   fill 1764586335000000 buy 3 @ 10000 leaves 2 trade 4 maker
//   cancelled 1764586335000000 quantity 2
//   done
// Exit status 0; 1 if an order was rejected or a fill did not come within 5 s.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { OrderClient, Side, type Fill, type SequencedMessage } from 'qpgate';

const { values: args } = parseArgs({
  options: {
    url: { type: 'string', default: 'http://127.0.0.1:7470' },
    token: { type: 'string' },
    address: { type: 'string', default: '127.0.0.2' },
    instrument: { type: 'string', default: '1001' },
    price: { type: 'string', default: '10000' },
    'buy-account': { type: 'string', default: '1' },
    'sell-account': { type: 'string', default: '2' },
  },
});
// The admin token the gateway generated at start, unless one is given.
const token = args.token ?? process.env['QPGATE_TOKEN'] ?? readFileSync('var/admin.token', 'utf8').trim();
const instrumentId = Number(args.instrument);
const price = Number(args.price);
const buyAccount = BigInt(args['buy-account']);
const sellAccount = BigInt(args['sell-account']);

const client = await OrderClient.connect({
  url: args.url,
  token,
  name: 'example-order-client', // the same token and name resume the same session
  accounts: [buyAccount, sellAccount],
  device: { address: args.address },
  takeover: true, // a run that died left the session connected: take it over
});
console.log(`session ${client.id} for accounts ${buyAccount}, ${sellAccount}`);

// Every message of the session, in the gateway's order (app_seq): the answers to our
// requests and the fills that follow the sell's Ack.
const fills: Fill[] = [];
let fillSeen: () => void = () => {};
client.on('message', (m: SequencedMessage) => {
  if (m.kind === 'ack') console.log(`ack ${m.clientOrderId} order ${m.orderId}`);
  else if (m.kind === 'reject') console.log(`reject ${m.clientOrderId} ${m.reasonName}: ${m.text}`);
  else if (m.kind === 'cancelAck') console.log(`cancelled ${m.origClientOrderId} quantity ${m.cancelledQuantity}`);
});
client.on('fill', (f: Fill) => {
  const side = f.side === Side.SIDE_BUY ? 'buy' : 'sell';
  console.log(`fill ${f.clientOrderId} ${side} ${f.quantity} @ ${f.price} leaves ${f.leavesQuantity} trade ${f.tradeId} ${f.liquidity === 1 ? 'maker' : 'taker'}`);
  fills.push(f);
  fillSeen();
});

let status = 0;
try {
  // Client order ids never repeat within a session (a repeat gets the first answer again): start at the time in µs.
  const buyId = BigInt(Date.now()) * 1000n;
  const sellId = buyId + 1n;
  const buy = await client.newOrder({ clientOrderId: buyId, instrumentId, side: Side.SIDE_BUY, price, quantity: 5, account: buyAccount });
  if (buy.kind !== 'ack') throw new Error(`the buy was rejected`);
  const sell = await client.newOrder({ clientOrderId: sellId, instrumentId, side: Side.SIDE_SELL, price, quantity: 3, account: sellAccount });
  if (sell.kind !== 'ack') throw new Error(`the sell was rejected`);

  // The trade's two fills follow the sell's Ack.
  const deadline = Date.now() + 5000;
  const bothFilled = () => fills.some((f) => f.clientOrderId === buyId) && fills.some((f) => f.clientOrderId === sellId);
  while (!bothFilled() && Date.now() < deadline) {
    await new Promise<void>((resolve) => {
      fillSeen = resolve;
      setTimeout(resolve, 100);
    });
  }
  if (!bothFilled()) throw new Error(`no fills for both orders within 5 s (saw ${fills.length})`);

  // What is left of the buy rests on the book: cancel it.
  const cancel = await client.cancel({ clientOrderId: sellId + 1n, origClientOrderId: buyId, instrumentId });
  if (cancel.kind !== 'cancelAck') throw new Error(`the cancel was rejected`);
  console.log('done');
} catch (err) {
  console.log(`error: ${(err as Error).message}`);
  status = 1;
} finally {
  await client.close();
}
process.exitCode = status;
