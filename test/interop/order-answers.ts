// The guest tests' order session (clients-ibv-guest.sh, gateway-rxe-guest.sh):
// `qpgate order --json` with accounts 1 and 2 sends PLACE_FILL_CANCEL, and
// assertPlacedFilledCancelled checks the answers a trader relies on.
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';

/** `qpgate order --file` lines: a sell of 5, a buy of 3 from the other account that meets it, the sell's rest cancelled. */
export const PLACE_FILL_CANCEL = 'sell 1001 10000 5 id=1\nbuy 1001 10000 3 id=2 account=2\ncancel 1 1001 id=3\n';

type Answer = { kind: string; clientOrderId?: string; origClientOrderId?: string; quantity?: number; leavesQuantity?: number };

/** Both orders acked, the buy fills 3 of the sell (both sides told), the sell's rest cancelled. */
export function assertPlacedFilledCancelled(lines: string[], where: string): void {
  const answers = lines.map((l) => JSON.parse(l) as Answer);
  const has = (pred: (a: Answer) => boolean, what: string) => assert.ok(answers.some(pred), `${what}: ${lines.join('\n')}${where}`);
  has((a) => a.kind === 'ack' && a.clientOrderId === '1', 'no ack for the sell');
  has((a) => a.kind === 'ack' && a.clientOrderId === '2', 'no ack for the buy');
  has((a) => a.kind === 'fill' && a.clientOrderId === '1' && a.quantity === 3 && a.leavesQuantity === 2, 'no fill of the sell');
  has((a) => a.kind === 'fill' && a.clientOrderId === '2' && a.quantity === 3 && a.leavesQuantity === 0, 'no fill of the buy');
  has((a) => a.kind === 'cancelAck' && a.origClientOrderId === '1', 'no cancel of the sell');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  // The guest scripts write the orders file with it; `node --test dist/test/` runs it without arguments.
  const [verb, file] = process.argv.slice(2);
  if (verb === 'write' && file !== undefined) {
    const { writeFileSync } = await import('node:fs');
    writeFileSync(file, PLACE_FILL_CANCEL);
  } else if (verb !== undefined) {
    process.stderr.write('usage: order-answers.js write FILE\n');
    process.exit(2);
  } else {
    console.log('# order-answers: the guest scripts run it as `write FILE`; nothing to do here');
  }
}
