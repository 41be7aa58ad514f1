// Start-up and shutdown of the gateway around its device.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadConfig } from '../../src/gateway/config/load.js';
import { createLogger } from '../../src/gateway/log.js';
import { startGateway } from '../../src/gateway/service.js';
import { startTestGateway, client, READ_TOKEN } from '../support/in-process-gateway.js';
import { freeLoopbackAddress } from '../support/loopback.js';
import { QKEY, node, startEngine, udQp } from '../native/verbs-helpers.js';

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

test("the device's async events reach the log: a CQ of the gateway's device that overflows is logged as IBV_EVENT_CQ_ERR", async () => {
  const lines: string[] = [];
  const capture = new Writable({ write: (chunk: Buffer, _enc, done) => (lines.push(...chunk.toString().split('\n').filter(Boolean)), done()) });
  const gw = await startGateway(config('feeds.enabled=false', 'orders.enabled=false', `backend.address=${freeLoopbackAddress()}`), createLogger('info', capture), { handleSignals: false });
  const engine = startEngine();
  try {
    // A tiny CQ on the gateway's own device, overrun by three UD SENDs from another device.
    const device = gw.state.device!;
    const pd = device.allocPd();
    const mr = pd.regMr(Buffer.alloc(4096), ['LOCAL_WRITE']);
    const tiny = device.createCq(1);
    const qp = pd.createQp({ type: 'UD', sendCq: tiny, recvCq: tiny, cap: { maxSendWr: 4, maxRecvWr: 4 } });
    qp.modify({ state: 'INIT', pkeyIndex: 0, port: 1, qkey: QKEY });
    qp.modify({ state: 'RTR' });
    qp.postRecv([0, 1, 2].map((i) => ({ wrId: BigInt(i), sgList: [mr.sge(i * 1024, 1024)] })));
    const peer = node(engine, freeLoopbackAddress());
    const qa = udQp(peer);
    const ah = peer.pd.createAh({ dgid: device.gid });
    qa.postSend([0, 1, 2].map((i) => ({ wrId: BigInt(i), sgList: [peer.mr.sge(0, 8)], ah, remoteQpn: qp.qpNum, remoteQkey: QKEY })));
    const logged = () => lines.map((l) => JSON.parse(l) as { msg: string; event?: string; elementId?: number }).find((l) => l.msg === 'device async event');
    for (let i = 0; i < 500 && logged() === undefined; i++) await sleep(10);
    assert.deepEqual(
      { event: logged()?.event, elementId: logged()?.elementId },
      { event: 'IBV_EVENT_CQ_ERR', elementId: tiny.handle },
      lines.join('\n'),
    );
    qp.destroy();
    tiny.destroy();
  } finally {
    engine.stop();
    await gw.close();
  }
});
