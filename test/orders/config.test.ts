// The `orders` config section and the session entitlements of control.tokens:
// defaults, the native service's config, and errors that name the key, what
// was expected, the value and where it came from.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../../src/gateway/config/load.js';
import { nativeServiceConfig } from '../../src/orders/config.js';
import { entitlementsOf } from '../../src/gateway/sessions/entitlements.js';

/** The problems of the ConfigError `load` throws. */
const problemsOf = (load: () => unknown): string[] => {
  let problems: string[] | undefined;
  assert.throws(load, (err: unknown) => err instanceof ConfigError && (problems = err.problems) !== undefined);
  return problems!;
};

const yaml = (text: string): string => {
  const path = join(mkdtempSync(join(tmpdir(), 'qpgate-orders-config-')), 'config.yaml');
  writeFileSync(path, text);
  return path;
};

test('the embedded default enables order entry: 8 instruments on the feed channel, 4 accounts, journal under state.dir, fsync none', () => {
  const config = loadConfig({ env: {}, overrides: ['state.dir=/srv/qpgate'] });
  assert.equal(config.orders.enabled, true);
  const native = nativeServiceConfig(config.orders, config.state.dir, config.feeds, 7);
  assert.deepEqual(native.journal, { path: '/srv/qpgate/orders.journal', sync: 'none', groupMaxRecords: 64, groupMaxDelayUs: 0 });
  assert.deepEqual(native.instruments.map((i) => i.id), [1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008]);
  assert.deepEqual(native.instruments[0], {
    id: 1001,
    tickSize: 1,
    minPrice: 1,
    maxPrice: 20000,
    maxQuantity: 1_000_000,
    selfMatch: 'cancel-newest',
    collar: { mode: 'bps', width: 500, referencePrice: 10000 },
    bookDepth: 10,
    channel: 1,
  });
  assert.deepEqual(native.accounts, [1n, 2n, 3n, 4n].map((account) => ({ account, creditLimit: 10_000_000_000n })));
  assert.equal(native.feedPublisherId, 7);
  assert.equal(native.recvDepth, 256);
  assert.equal(config.orders.sessions.throttle.ordersPerSecond, 10_000);
  assert.equal(config.orders.sessions.cancelOnDisconnect, true);
});

test('fsync none|interval|every map to the native none|group|every; instruments follow the feed channels', () => {
  const file = yaml(
    [
      'feeds:',
      '  channels: [{id: 1, groupA: 239.77.0.1}, {id: 2, groupA: 239.77.0.3}]',
      'orders:',
      '  journal: {file: /tmp/j.bin, fsync: interval, intervalUs: 500, groupMaxRecords: 8}',
      '  instruments: [{id: 1}, {id: 2}, {id: 3, channel: 1, selfMatch: cancel-oldest}]',
      '  accounts: [{account: "18446744073709551615", creditLimit: "18446744073709551615"}]',
    ].join('\n'),
  );
  const config = loadConfig({ env: {}, file });
  const native = nativeServiceConfig(config.orders, config.state.dir, config.feeds);
  assert.deepEqual(native.journal, { path: '/tmp/j.bin', sync: 'group', groupMaxRecords: 8, groupMaxDelayUs: 500 });
  assert.deepEqual(native.instruments.map((i) => [i.id, i.channel, i.selfMatch]), [
    [1, 1, 'cancel-newest'],
    [2, 2, 'cancel-newest'],
    [3, 1, 'cancel-oldest'],
  ]);
  assert.deepEqual(native.accounts, [{ account: (1n << 64n) - 1n, creditLimit: (1n << 64n) - 1n }]);
  assert.equal(native.feedPublisherId, undefined);
  assert.equal(loadConfig({ env: {}, overrides: ['orders.journal.fsync=every'] }).orders.journal.fsync, 'every');
});

test('bad orders config is reported by key, expectation, value and origin', () => {
  const file = yaml(
    [
      'orders:',
      '  instruments:',
      '    - {id: 5, tickSize: 5, minPrice: 7, maxPrice: 100}',
      '    - {id: 5, maxPrice: 2000000, collar: {referencePrice: 3000000}}',
      '    - {id: 6, channel: 9}',
      '  accounts: [{account: 1, creditLimit: 5}, {account: 1, creditLimit: "99999999999999999999"}]',
    ].join('\n'),
  );
  assert.deepEqual(problemsOf(() => loadConfig({ env: {}, file })), [
    `orders.instruments.0.minPrice (from ${file}): expected a multiple of tickSize 5, got 7`,
    `orders.instruments.0.collar.referencePrice (from ${file}): expected 0 or a tick multiple within [7, 100], got 10000`,
    `orders.instruments.1.id (from ${file}): expected an id not used by orders.instruments.0, got 5`,
    `orders.instruments.1.maxPrice (from ${file}): expected a band of at most 1000000 ticks above minPrice, got 2000000 ticks (2000000)`,
    `orders.instruments.1.collar.referencePrice (from ${file}): expected 0 or a tick multiple within [1, 2000000], got 3000000`,
    `orders.instruments.2.channel (from ${file}): expected one of the feed channels (1), got 9`,
    `orders.accounts.1.creditLimit (from ${file}): expected at most 2^64-1, got 99999999999999999999`,
    `orders.accounts.1.account (from ${file}): expected an account not configured by orders.accounts.0, got 1`,
  ]);
  assert.deepEqual(problemsOf(() => loadConfig({ env: { QPGATE_ORDERS__JOURNAL__FSYNC: 'sometimes' } })), [
    `orders.journal.fsync (from environment QPGATE_ORDERS__JOURNAL__FSYNC): expected 'none' (written before each answer, never fdatasync'ed: survives a process crash), 'interval' (group commit: fdatasync before answers go out, at most intervalUs after the first unsynced record) or 'every' (fdatasync per record), got "sometimes"`,
  ]);
  assert.deepEqual(problemsOf(() => loadConfig({ env: {}, overrides: ['orders.sessions.recvDepth=4'] })), [
    'orders.sessions.recvDepth (from --set orders.sessions.recvDepth=4): expected receives posted per session, got 4',
  ]);
  // The per-session caps must nest: slowed before ended, ended before its resends are lost, a share within the whole.
  assert.deepEqual(
    problemsOf(() =>
      loadConfig({
        env: {},
        overrides: ['orders.sessions.maxQueuedMessages=100', 'orders.sessions.maxClientOrderIds=5000', 'orders.clientOrderIdCapacity=4096'],
      }),
    ),
    [
      'orders.sessions.maxQueuedMessages (from --set orders.sessions.maxQueuedMessages=100): expected between backPressureMessages 1024 and resendCapacity 8192, got 100',
      'orders.sessions.maxClientOrderIds (from --set orders.sessions.maxClientOrderIds=5000): expected at most orders.clientOrderIdCapacity 4096, got 5000',
    ],
  );
});

test('token entitlements: none for read, everything for admin, unless listed; duplicate names and bad accounts are errors', () => {
  const config = loadConfig({
    env: {},
    overrides: [
      'control.tokens=[{name: desk, scope: read, token: desk-token-0123456789, roles: [trading], accounts: ["1001", 7]}, {name: viewer, scope: read, token: view-token-0123456789}, {name: ops, scope: admin, token: ops-token-0123456789}, {name: feeds, scope: read, token: feed-token-0123456789, roles: [recovery], channels: ["*"]}]',
    ],
  });
  const [desk, viewer, ops, feeds] = config.control.tokens.map(entitlementsOf);
  assert.deepEqual([...desk!.roles], ['trading']);
  assert.deepEqual([...desk!.accounts!], [1001n, 7n]);
  assert.deepEqual([...desk!.channels!], []);
  assert.deepEqual([...viewer!.roles], []);
  assert.deepEqual([...viewer!.accounts!], []);
  assert.deepEqual([...ops!.roles], ['trading', 'risk', 'recovery']);
  assert.equal(ops!.accounts, undefined);
  assert.equal(ops!.channels, undefined);
  assert.equal(feeds!.channels, undefined);
  assert.equal(entitlementsOf(undefined).accounts, undefined, 'the generated admin token may do everything');

  assert.deepEqual(
    problemsOf(() =>
      loadConfig({
        env: {},
        overrides: [
          'control.tokens=[{name: a, scope: read, token: aaaa-token-0123456789, roles: [trading, trade]}, {name: a, scope: read, token: bbbb-token-0123456789, accounts: ["99999999999999999999"]}]',
        ],
      }),
    ),
    [`control.tokens.0.roles.1 (from --set control.tokens=[{name: a, scope: read, token: aaaa-token-0123456789, roles: [trading, trade]}, {name: a, scope: read, token: bbbb-token-0123456789, accounts: ["99999999999999999999"]}]): expected one of 'trading', 'risk', 'recovery', got "trade"`],
  );
  const dup = problemsOf(() =>
    loadConfig({ env: {}, overrides: ['control.tokens=[{name: a, scope: read, token: aaaa-token-0123456789}, {name: a, scope: admin, token: bbbb-token-0123456789, accounts: ["99999999999999999999"]}]'] }),
  );
  assert.equal(dup.length, 2);
  assert.match(dup[0]!, /^control\.tokens\.1\.name \(from --set .*\): expected a name not used by control\.tokens\.0, got "a"$/);
  assert.match(dup[1]!, /^control\.tokens\.1\.accounts\.0 \(from --set .*\): expected at most 2\^64-1, got 99999999999999999999$/);
});
