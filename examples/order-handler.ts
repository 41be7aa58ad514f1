// examples/order-handler.ts: an order-handler plug-in that counts the fills
// of each account and logs every one.
//
// What it shows: a module exporting createOrderHandler(context) (README,
// "Order handlers"). The gateway calls it at start with the entry's
// `options`, its state.dir and its pino logger; the handler's onEvent() then
// sees every step of every order (accepted, replaced, filled, cancelled) after
// its answer went out. onEvent must not block: this one only counts and logs;
// it writes its totals to a file once, at close() (the gateway's shutdown).
//
// How to configure it: build (`npm run build:ts`), then give the gateway the
// compiled module under orders.handlers, e.g. in desk.yaml:
//   orders:
//     handlers:
//       - module: dist/examples/order-handler.js   # a path relative to where `qpgate serve` runs, or absolute
//         options: {file: fills-per-account.json}  # under state.dir unless absolute
// How to run it:
//   node bin/qpgate.js serve --config desk.yaml          # or: npm start -- --config desk.yaml
//   node dist/examples/order-client.js                   # in another shell: makes a trade
// What it prints (in the gateway's log, one JSON line each):
//   {"level":30,...,"handler":"/path/to/dist/examples/order-handler.js","file":"/path/to/var/fills-per-account.json","msg":"fill-counter: ready"}
//   {"level":30,...,"account":"1","fills":1,"quantity":"3","price":"10000","tradeId":"1","msg":"fill-counter: fill"}
// and at shutdown (SIGTERM) it writes <state.dir>/fills-per-account.json:
//   {"1":{"fills":1,"quantity":"3"},"2":{"fills":1,"quantity":"3"}}
import { writeFile } from 'node:fs/promises';
import { isAbsolute, join } from 'node:path';
import type { OrderEvent, OrderHandlerContext, OrderHandlerPlugin } from 'qpgate';

export function createOrderHandler({ options, stateDir, logger }: OrderHandlerContext): OrderHandlerPlugin {
  const name = options['file'] ?? 'fills-per-account.json';
  if (typeof name !== 'string' || name.length === 0) throw new Error(`options.file: expected a file name, got ${JSON.stringify(name)}`);
  const file = isAbsolute(name) ? name : join(stateDir, name);
  // Per account: how many fills, and the quantity they traded.
  const byAccount = new Map<bigint, { fills: number; quantity: bigint }>();
  // logger: the gateway's pino logger, its lines already naming this module.
  logger.info({ file }, 'fill-counter: ready');
  return {
    name: 'fill-counter',
    onEvent(e: OrderEvent) {
      if (e.kind !== 'filled') return;
      const counts = byAccount.get(e.account) ?? { fills: 0, quantity: 0n };
      counts.fills++;
      counts.quantity += e.quantity; // a fill's quantity is what it traded
      byAccount.set(e.account, counts);
      logger.info(
        { account: String(e.account), fills: counts.fills, quantity: String(e.quantity), price: String(e.price), tradeId: String(e.tradeId) },
        'fill-counter: fill',
      );
    },
    async close() {
      const totals = Object.fromEntries([...byAccount].map(([account, c]) => [String(account), { fills: c.fills, quantity: String(c.quantity) }]));
      await writeFile(file, `${JSON.stringify(totals)}\n`);
      logger.info({ file, totals }, 'fill-counter: totals written');
    },
  };
}
