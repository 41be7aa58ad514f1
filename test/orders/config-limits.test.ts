// The order service's integer settings are declared once
// (native/src/orders/config_limits.def): the config schema and the addon
// refuse the same values, just outside each declared bound, naming the
// setting and its bounds.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Engine } from '../../src/native/engine.js';
import { openDevice } from '../../src/native/verbs.js';
import { loadConfig } from '../../src/gateway/config/load.js';
import { OrderService } from '../../src/orders/service.js';
import { nativeOrders } from '../../src/orders/native.js';
import { nativeDeviceOf } from '../../src/feed/native.js';
import { ORDERS_LIMITS } from '../../src/declared/orders-config.js';
import { freeLoopbackAddress } from '../support/loopback.js';

const configKey = (name: string) => (name === 'orderCapacity' || name === 'clientOrderIdCapacity' ? `orders.${name}` : `orders.sessions.${name}`);
const outside = (l: { minimum: number; maximum: number }) => [l.minimum - 1, l.maximum + 1];

test('the config refuses each integer setting just outside its declared bounds and takes its default', () => {
  const config = loadConfig({ env: {} });
  for (const [name, limits] of Object.entries(ORDERS_LIMITS)) {
    const [section, key] = configKey(name) === `orders.${name}` ? [config.orders, name] : [config.orders.sessions, name];
    assert.equal((section as Record<string, unknown>)[key], limits.default, `${name}'s default`);
    for (const v of outside(limits)) {
      assert.throws(() => loadConfig({ env: {}, overrides: [`${configKey(name)}=${v}`] }), new RegExp(`${configKey(name).replace(/\./g, '\\.')}\\b`), `${name}=${v}`);
    }
  }
});

test('the addon refuses the same values with a RangeError naming the setting and its declared bounds', async () => {
  const stateDir = join(mkdtempSync(join(tmpdir(), 'qpgate-olimits-')), 'state');
  const config = loadConfig({ env: {}, overrides: [`state.dir=${stateDir}`] });
  const engine = new Engine({ hugePages: false });
  await engine.start();
  const device = openDevice(engine, { address: freeLoopbackAddress() });
  try {
    const base = new OrderService(engine, device, config.orders, { stateDir, feeds: config.feeds }).nativeConfig;
    for (const [name, limits] of Object.entries(ORDERS_LIMITS)) {
      for (const v of outside(limits)) {
        assert.throws(
          () => nativeOrders().createService(engine.native, nativeDeviceOf(device), { ...base, [name]: v }),
          (e: Error) => e instanceof RangeError && e.message === `orders.createService: config.${name} must be an integer in ${limits.minimum}..${limits.maximum}, got ${v}`,
          `${name}=${v}`,
        );
      }
    }
  } finally {
    device.close();
    await engine.stop();
  }
});
