// The built-in drop-copy order handler (`orders.handlers: [{module: drop-copy,
// options: {file: drop-copy.jsonl}}]`): every order event as one JSON line
// appended to a file, for compliance, reconciliation or a downstream system
// that tails it. 64-bit integers are written as decimal strings.
//
// Writes go through one append stream (buffered by Node, never blocking the
// event loop); close() ends it, so a clean shutdown leaves every line on disk.
import { createWriteStream, mkdirSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import type { OrderEvent } from '../events.js';
import { sideName, timeInForceName } from '../messages.js';
import type { OrderHandlerContext, OrderHandlerPlugin } from '../handler.js';

export function dropCopyLine(e: OrderEvent): string {
  return JSON.stringify({
    kind: e.kind,
    session: e.session,
    orderId: String(e.orderId),
    clientOrderId: String(e.clientOrderId),
    origClientOrderId: String(e.origClientOrderId),
    account: String(e.account),
    instrumentId: e.instrumentId,
    side: sideName(e.side),
    timeInForce: timeInForceName(e.timeInForce),
    price: String(e.price),
    quantity: String(e.quantity),
    leaves: String(e.leaves),
    ...(e.kind === 'filled' ? { tradeId: String(e.tradeId) } : {}),
    ...(e.cancelReason !== undefined ? { cancelReason: e.cancelReason } : {}),
    appSeq: String(e.appSeq),
  });
}

export function createOrderHandler(context: OrderHandlerContext): OrderHandlerPlugin {
  const file = context.options['file'] ?? 'drop-copy.jsonl';
  if (typeof file !== 'string' || file.length === 0) {
    throw new Error(`options.file: expected a non-empty path, got ${JSON.stringify(file)}`);
  }
  const path = isAbsolute(file) ? file : join(context.stateDir, file);
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const out = createWriteStream(path, { flags: 'a', mode: 0o600 });
  out.on('error', (err) => context.logger.error({ err, file: path }, 'drop copy: write failed'));
  context.logger.info({ file: path }, 'drop copy: appending every order event');
  return {
    name: 'drop-copy',
    onEvent(e) {
      out.write(`${dropCopyLine(e)}\n`);
    },
    close: () => new Promise<void>((done) => out.end(done)),
  };
}
