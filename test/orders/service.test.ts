// OrderService on its own engine and device: starts from the config (journal
// under state.dir), serves the risk layout and words, and attaches and
// detaches a TS order handler (the engine makes order events only while one
// listens; test/orders/handler.test.ts has them flowing).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Engine } from '../../src/native/engine.js';
import { openDevice } from '../../src/native/verbs.js';
import { loadConfig } from '../../src/gateway/config/load.js';
import { OrderService } from '../../src/orders/service.js';
import { attachOrderHandler } from '../../src/orders/handler.js';
import { freeLoopbackAddress } from '../support/loopback.js';

test('the order service starts from the config, serves the risk layout and words, and attaches and detaches a TS handler', async () => {
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
    let closed = 0;
    const attached = attachOrderHandler(service, { name: 'forwarder', onEvent: () => {}, close: () => void closed++ });
    assert.equal(attached.name, 'forwarder');
    await attached.detach();
    await attached.detach();
    assert.equal(closed, 1, 'detach closes the handler once');
    assert.equal(attached.events, 0);
    assert.equal(service.stats()?.['orderEvents'], 0);
    service.close();
    assert.throws(() => service.native, /the order service is closed/);
    assert.ok(statSync(join(stateDir, 'orders.journal')).size >= 16, 'the journal has its header');
  } finally {
    device.close();
    await engine.stop();
  }
});
