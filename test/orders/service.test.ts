// OrderService on its own engine and device: starts from the config (journal
// under state.dir), serves the risk layout and words, replays its journal on
// the next start, and refuses a TS order handler while the native service has
// no per-order event hook (rather than pretending to deliver orders).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Engine } from '../../src/native/engine.js';
import { openDevice } from '../../src/native/verbs.js';
import { loadConfig } from '../../src/gateway/config/load.js';
import { OrderService } from '../../src/orders/service.js';
import { attachOrderHandler, OrderHandlerUnavailable } from '../../src/orders/handler.js';
import { freeLoopbackAddress } from '../support/loopback.js';

test('the order service starts from the config, serves the risk layout and words, and refuses a TS handler it cannot feed', async () => {
  const stateDir = join(mkdtempSync(join(tmpdir(), 'qpgate-osvc-')), 'state');
  const config = loadConfig({ env: {}, overrides: [`state.dir=${stateDir}`] });
  const engine = new Engine({ hugePages: false });
  await engine.start();
  const device = openDevice(engine, { address: freeLoopbackAddress() });
  try {
    const service = new OrderService(engine, device, config.orders, { stateDir, feeds: config.feeds });
    assert.throws(() => service.native, /the order service is not started/);
    service.start();
    assert.ok(existsSync(join(stateDir, 'orders.journal')), 'the journal is created under state.dir');
    const layout = service.riskLayout();
    assert.equal(layout.pageBytes, 4096);
    assert.deepEqual(layout.remoteOwned.map((w) => [w.name, w.offset]).slice(0, 2), [
      ['credit_limit', 0],
      ['kill_switch', 8],
    ]);
    assert.deepEqual(service.readRisk(1n), { creditLimit: 10_000_000_000n, killSwitch: 0n, position: 0n, openNotional: 0n, openOrders: 0n, tradedNotional: 0n });
    assert.throws(
      () => attachOrderHandler(service, { name: 'forwarder', onOrder: () => {} }),
      (e: unknown) =>
        e instanceof OrderHandlerUnavailable &&
        e.message ===
          'order handler "forwarder": this build\'s native order service does not hand accepted orders to JS (addon.orders has no onAcceptedOrders hook); ' +
            'the built-in native-book handles every order, and its trades and book changes are on the market-data feed',
    );
    service.close();
    assert.throws(() => service.native, /the order service is closed/);
    assert.ok(statSync(join(stateDir, 'orders.journal')).size >= 16, 'the journal has its header');
  } finally {
    device.close();
    await engine.stop();
  }
});
