// Start-up and shutdown of the gateway around its device.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/gateway/config/load.js';
import { createLogger } from '../../src/gateway/log.js';
import { startGateway } from '../../src/gateway/service.js';
import { startTestGateway, client, READ_TOKEN } from '../support/in-process-gateway.js';
import { freeLoopbackAddress } from '../support/loopback.js';

const config = (...overrides: string[]) =>
  loadConfig({ env: {}, overrides: ['control.port=0', `state.dir=${mkdtempSync(join(tmpdir(), 'qpgate-svc-'))}`, ...overrides] });

test('backend.kind ibv with a device that is not there fails the start in one line naming the device and the fix', async () => {
  // The host has no RDMA devices (the guest's rxe tests are test/interop/gateway-rxe.test.ts).
  await assert.rejects(startGateway(config('backend.kind=ibv', 'backend.device=qpgate_nodev0'), createLogger('silent'), { handleSignals: false }), (err: Error) => {
    assert.equal(err.name, 'DeviceOpenError');
    assert.match(err.message, /^cannot open the ibv device qpgate_nodev0: (.*no RDMA device named qpgate_nodev0; devices: .* \(set backend\.device to one of the devices listed\)|.*\(ENOSYS\) \(this kernel has no RDMA: load a driver, .*\))$/);
    assert.doesNotMatch(err.message, /\n/);
    return true;
  });
});

test('an address another device owns fails the start naming backend.address, and frees the engine', async () => {
  const gw = await startTestGateway();
  try {
    const taken = gw.state.config.backend.address;
    await assert.rejects(
      startGateway(config(`backend.address=${taken}`), createLogger('silent'), { handleSignals: false }),
      new RegExp(`cannot open the soft device on ${taken.replace(/\./g, '\\.')}: another soft device .* owns ${taken.replace(/\./g, '\\.')}:4791 \\(backend\\.address\\)`),
    );
  } finally {
    await gw.close();
  }
});

test('backend.alternateAddress: refused on ibv (no automatic path migration), and when it is backend.address or no interface has it', async () => {
  const start = (...sets: string[]) => startGateway(config(...sets), createLogger('silent'), { handleSignals: false });
  await assert.rejects(start('backend.kind=ibv', 'backend.device=qpgate_nodev0', 'backend.alternateAddress=127.0.0.9'), (err: Error) => {
    assert.equal(err.name, 'DeviceOpenError');
    assert.match(err.message, /^backend\.alternateAddress 127\.0\.0\.9: the ibv backend has no automatic path migration \(Linux's RDMA core refuses an alternate path on a RoCE port\); give a second RDMA device as backend\.alternateDevice/);
    return true;
  });
  const address = freeLoopbackAddress();
  await assert.rejects(start(`backend.address=${address}`, `backend.alternateAddress=${address}`), /is backend\.address: give a second address of this host/);
  // 192.0.2.0/24 (TEST-NET-1) is on no interface of this host.
  await assert.rejects(start(`backend.address=${address}`, 'backend.alternateAddress=192.0.2.7'), /cannot open the soft device on .*: .*\(backend\.alternateAddress\)$/);
});

test('shutdown: not ready, extensions stop/drain/close in order, QPs destroyed, device closed, engine stopped', async () => {
  const calls: string[] = [];
  const gw = await startTestGateway('', {
    attach: (state) => {
      state.sessions = {
        routes: async () => {},
        summary: () => ({}),
        stopAccepting: () => void calls.push('sessions.stopAccepting'),
        drain: async () => void calls.push(`sessions.drain ready=${state.ready}`),
        close: async () => void calls.push(`sessions.close device=${state.device !== undefined}`),
      };
      state.feeds = {
        routes: async () => {},
        summary: () => ({}),
        close: async () => void calls.push(`feeds.close engine=${state.engine.running}`),
      };
    },
  });
  const device = gw.state.device!;
  const pd = device.allocPd();
  const cq = device.createCq(4);
  const qp = gw.state.qps.createQp(pd, { type: 'UD', sendCq: cq }, { owner: 'test' });
  assert.equal(((await client(gw).get('/v1/qps', READ_TOKEN)).json as { count: number }).count, 1);
  await gw.close('test');
  assert.equal(await gw.closed, 0);
  assert.deepEqual(calls, ['sessions.stopAccepting', 'sessions.drain ready=false', 'sessions.close device=true', 'feeds.close engine=true']);
  assert.equal(gw.state.device, undefined);
  assert.equal(gw.state.qps.size, 0);
  assert.throws(() => qp.query(), /destroyed/);
  assert.equal(gw.state.engine.running, false);
  // The address is free again.
  const again = await startTestGateway();
  await again.close();
});
