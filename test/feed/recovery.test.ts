// Recovery over RC end to end through the public TS APIs: the gateway's
// recovery provider opening sessions on the publisher, the subscriber client
// doing the HTTP handshake (POST /v1/sessions role 'recovery', bearer token)
// and the native engines recovering gaps and late joins. Soft devices on
// 127.78.9x.y, groups 239.78.9x.y. The HTTP server here stands in for the
// control plane's sessions route (it hands the request to the same provider).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

import { Engine } from '../../src/native/engine.js';
import { setFaults, faultCounters } from '../../src/native/testing/faults.js';
import { MessageType, toBigInt } from '../../src/feed/messages.js';
import { openFeedDevice } from '../../src/feed/native.js';
import { FEED_RECOVERY_REPORT_COUNTERS, FEED_RECOVERY_SESSION_COUNTERS } from '../../src/declared/feed-counters.js';
import { createPublisher, type FeedPublisher } from '../../src/feed/publisher.js';
import { RecoverySessionProvider } from '../../src/feed/recovery-provider.js';
import { SessionError, type SessionDevice, type SessionOpenRequest } from '../../src/common/session-provider.js';
import { httpRecoveryHandshake, RecoveryHandshakeError } from '../../src/feed/recovery-handshake.js';
import { subscribe, type FeedGap, type FeedMessage } from '../../src/feed/subscriber.js';

const TOKEN = 'recovery-test-token';
const UD_SEND_ONLY = 0x64;

async function engine(): Promise<Engine> {
  const e = new Engine({ toEngineCapacity: 1 << 20, fromEngineCapacity: 1 << 22, hugePages: false, idle: 'backoff' });
  await e.start();
  return e;
}

async function until(cond: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out');
    await sleep(2);
  }
}

function quote(i: number) {
  return { type: MessageType.MESSAGE_TYPE_QUOTE, value: { instrumentId: 1 + (i % 50), bidPrice: 10_000 + i, askPrice: 10_002 + i, bidSize: i } } as const;
}

// A minimal POST/DELETE /v1/sessions in front of the provider.
async function sessionsServer(provider: RecoverySessionProvider): Promise<{ url: string; requests: Array<Record<string, unknown>>; close(): Promise<void> }> {
  let nextId = 1;
  const requests: Array<Record<string, unknown>> = [];
  const server = http.createServer((req, res) => {
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.headers.authorization !== `Bearer ${TOKEN}`) return send(401, { error: 'unauthorized', message: 'bad token' });
    if (req.method === 'DELETE') {
      const id = Number(req.url?.split('/').pop());
      return send(provider.close(id) ? 200 : 404, { id });
    }
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString()));
    req.on('end', () => {
      const body = JSON.parse(text) as Record<string, unknown>;
      requests.push(body);
      try {
        const open: SessionOpenRequest = {
          role: body['role'] as 'recovery',
          id: nextId++,
          name: body['name'] as string,
          qpn: body['qpn'] as number,
          psn: body['psn'] as number,
          gid: body['gid'] as string,
          mtu: body['mtu'] as number,
          accounts: [],
          feed: body['feed'] as string,
          channels: body['channels'] as number[],
          ...(body['device'] === undefined ? {} : { device: body['device'] as SessionDevice }),
        };
        const a = provider.open(open);
        send(201, { id: open.id, role: 'recovery', name: open.name, ...a });
      } catch (e) {
        const err = e as SessionError;
        send(err.status ?? 500, { error: 'refused', message: err.message });
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, requests, close: () => new Promise<void>((r) => server.close(() => r())) };
}

function providerFor(pub: FeedPublisher, channels: number[]): RecoverySessionProvider {
  return new RecoverySessionProvider(new Map([['default', { publisher: () => pub, channels }]]));
}

test('5% multicast loss on one subscriber: every gap recovered over RC, every message once and in order; the clean subscriber is unaffected', async () => {
  const e = await engine();
  const pubDev = openFeedDevice(e, { address: '127.78.91.1' });
  const pub = createPublisher(e, pubDev, { channels: [{ id: 1, groupA: '239.78.91.1', heartbeatMs: 5 }], instruments: { 1: 1 } });
  const server = await sessionsServer(providerFor(pub, [1]));
  try {
    const lossyDev = openFeedDevice(e, { address: '127.78.91.3' });
    const lossy: FeedMessage[] = [];
    const clean: FeedMessage[] = [];
    const gaps: FeedGap[] = [];
    const subLossy = await subscribe({
      engine: e,
      device: lossyDev,
      channels: [{ id: 1, groupA: '239.78.91.1' }],
      maxFrameSize: 1024,
      recvSlots: 1024,
      onMessage: (m) => lossy.push(m),
      onGap: (g) => gaps.push(g),
      recovery: { name: 'lossy', url: server.url, token: TOKEN },
    });
    const subClean = await subscribe({ engine: e, device: { address: '127.78.91.4' }, channels: [{ id: 1, groupA: '239.78.91.1' }], onMessage: (m) => clean.push(m) });
    assert.equal(server.requests.length, 1);
    assert.equal(server.requests[0]!['role'], 'recovery');
    assert.deepEqual(server.requests[0]!['channels'], [1]);
    assert.equal(server.requests[0]!['feed'], 'default');
    assert.equal(subLossy.recoverySessionId, 1);
    setFaults(lossyDev, { seed: 11, rx: { drop: 0.05 }, opcodes: [UD_SEND_ONLY] });
    await sleep(10);
    const N = 20_000;
    for (let i = 0; i < N; i += 50) {
      pub.publish(1, Array.from({ length: 50 }, (_, k) => quote(i + k)));
      if (i % 1000 === 0) await sleep(1);
    }
    await until(() => lossy.length >= N && clean.length >= N);
    await sleep(50);
    assert.ok(faultCounters(lossyDev).rx_dropped > 20, 'the injector dropped packets');
    for (const got of [lossy, clean]) {
      assert.equal(got.length, N);
      got.forEach((m, i) => assert.equal(m.seq, BigInt(i + 1)));
    }
    assert.deepEqual(gaps, []);
    const s = subLossy.stats().channels[0]!;
    assert.ok(s.gaps > 5, `gaps: ${s.gaps}`);
    assert.ok(s.recovered > 0);
    assert.equal(s.unrecoverable, 0);
    assert.equal(s.recoveryFailures, 0);
    assert.equal(lossy.filter((m) => m.recovered).length, s.recovered);
    assert.ok(lossy.filter((m) => m.recovered).every((m) => m.line === 'RC'));
    assert.equal(subClean.stats().channels[0]!.gaps, 0);
    const sessions = pub.recoverySessions();
    assert.equal(sessions.length, 1);
    assert.equal(sessions[0]!.session, 1);
    assert.equal(sessions[0]!.state, 'RTS');
    assert.equal(sessions[0]!.retransmitRequests, s.recoveryRequests);
    assert.equal(sessions[0]!.byStatus['ok'], s.recoveryRequests);
    assert.ok(sessions[0]!.framesSent > 0);
    // Its counters are the declared ones (feed_counters.def), the report's too.
    const declared = (list: ReadonlyArray<{ js: string }>) => list.map((c) => c.js);
    const { session: _s, publisher: _p, qpn: _q, state: _st, channels: _c, throttled: _t, rangeGone: _r, byStatus: _b, subscriber, ...counters } = sessions[0]!;
    assert.deepEqual(Object.keys(counters).filter((k) => declared(FEED_RECOVERY_SESSION_COUNTERS).includes(k)), declared(FEED_RECOVERY_SESSION_COUNTERS));
    assert.deepEqual(Object.keys(subscriber), declared(FEED_RECOVERY_REPORT_COUNTERS));
    await subLossy.close();
    // Closing the subscriber ends its gateway session (DELETE /v1/sessions/1).
    await until(() => pub.recoverySessions().length === 0, 2000);
    await subClean.close();
  } finally {
    pub.close();
    await server.close();
    await e.stop();
  }
});

test('a subscriber joining mid-stream gets the snapshot, then the stream, with no gap', async () => {
  const e = await engine();
  const pub = createPublisher(e, openFeedDevice(e, { address: '127.78.92.1' }), { channels: [{ id: 1, groupA: '239.78.92.1', heartbeatMs: 5 }], instruments: { 1: 1 } });
  const server = await sessionsServer(providerFor(pub, [1]));
  try {
    for (let i = 0; i < 1000; i += 100) pub.publish(1, Array.from({ length: 100 }, (_, k) => quote(i + k)));
    await pub.drained();
    await sleep(30);
    const got: FeedMessage[] = [];
    const gaps: FeedGap[] = [];
    const sub = await subscribe({
      engine: e,
      device: { address: '127.78.92.3' },
      channels: [{ id: 1, groupA: '239.78.92.1' }],
      onMessage: (m) => got.push(m),
      onGap: (g) => gaps.push(g),
      recovery: { name: 'late', url: server.url, token: TOKEN },
    });
    for (let i = 1000; i < 2000; i += 100) {
      pub.publish(1, Array.from({ length: 100 }, (_, k) => quote(i + k)));
      await sleep(1);
    }
    await until(() => got.length > 0 && got[got.length - 1]!.seq === 2000n);
    const snapshot = got.filter((m) => m.snapshot);
    const live = got.filter((m) => !m.snapshot);
    // SnapshotBegin, one quote per instrument (50), SnapshotEnd; all before any live message.
    assert.equal(snapshot.length, 52);
    assert.equal(got.findIndex((m) => !m.snapshot), snapshot.length);
    assert.equal(snapshot[0]!.type, MessageType.MESSAGE_TYPE_SNAPSHOT_BEGIN);
    assert.equal(snapshot[51]!.type, MessageType.MESSAGE_TYPE_SNAPSHOT_END);
    const begin = snapshot[0]!.decode();
    assert.ok(begin !== undefined && begin.type === MessageType.MESSAGE_TYPE_SNAPSHOT_BEGIN);
    const asOf = snapshot[0]!.seq;
    assert.ok(asOf >= 1000n);
    assert.equal(toBigInt(begin.value.lastSequence ?? 0), asOf);
    assert.equal(begin.value.messageCount, 50);
    assert.equal(new Set(snapshot.slice(1, 51).map((m) => m.instrumentId)).size, 50);
    live.forEach((m, i) => assert.equal(m.seq, asOf + 1n + BigInt(i)));
    assert.deepEqual(gaps, []);
    const s = sub.stats().channels[0]!;
    assert.equal(s.snapshots, 1);
    assert.equal(s.snapshotMessages, 52);
    assert.equal(s.unrecoverable, 0);
    await sub.close();
  } finally {
    pub.close();
    await server.close();
    await e.stop();
  }
});

test('the handshake is refused with the route status: bad token 401, unknown feed 404, unknown channel 400', async () => {
  const e = await engine();
  const pub = createPublisher(e, openFeedDevice(e, { address: '127.78.93.1' }), { channels: [{ id: 1, groupA: '239.78.93.1' }], instruments: { 1: 1 } });
  const server = await sessionsServer(providerFor(pub, [1]));
  try {
    let host = 3;
    const attempt = (recovery: { token?: string; feed?: string }, channel = 1) =>
      subscribe({
        engine: e,
        device: { address: `127.78.93.${host++}` },
        channels: [{ id: channel, groupA: `239.78.93.${channel + 1}` }],
        recovery: { name: 'x', url: server.url, token: recovery.token ?? TOKEN, ...(recovery.feed ? { feed: recovery.feed } : {}) },
      });
    await assert.rejects(attempt({ token: 'wrong' }), (err: unknown) => err instanceof RecoveryHandshakeError && err.status === 401 && /bad token/.test(err.message));
    await assert.rejects(attempt({ feed: 'other' }), (err: unknown) => err instanceof RecoveryHandshakeError && err.status === 404 && /unknown feed 'other'/.test(err.message));
    await assert.rejects(attempt({}, 2), (err: unknown) => err instanceof RecoveryHandshakeError && err.status === 400 && /has no channel 2/.test(err.message));
    assert.equal(pub.recoverySessions().length, 0);
    assert.throws(
      () => pub.openRecoverySession({ session: 5, channels: [1], remote: { qpn: 1, psn: 1, gid: '::ffff:127.78.93.3', mtu: 1000 } }),
      /mtu must be 256, 512, 1024, 2048 or 4096/,
    );
    assert.throws(
      () => pub.openRecoverySession({ session: 5, channels: [1], remote: { qpn: 1, psn: 1, gid: '::ffff:127.78.93.3', mtu: 1024 }, limits: { replyBytes: 100 } }),
      /replyBytes must be 8192\.\.16777216/,
    );
  } finally {
    pub.close();
    await server.close();
    await e.stop();
  }
});

test('a gap older than the ring is reported unrecoverable, then the channel resyncs from a snapshot and carries on with no gap', async () => {
  const e = await engine();
  const pub = createPublisher(e, openFeedDevice(e, { address: '127.78.94.1' }), {
    channels: [{ id: 1, groupA: '239.78.94.1', heartbeatMs: 5, ring: { frames: 8 } }],
    instruments: { 1: 1 },
  });
  const server = await sessionsServer(providerFor(pub, [1]));
  try {
    const got: FeedMessage[] = [];
    const gaps: FeedGap[] = [];
    const sub = await subscribe({
      engine: e,
      device: { address: '127.78.94.3' },
      channels: [{ id: 1, groupA: '239.78.94.1' }],
      onMessage: (m) => got.push(m),
      onGap: (g) => gaps.push(g),
      recovery: { name: 'ring', url: server.url, token: TOKEN },
    });
    const publish = async (from: number, n: number) => {
      for (let i = from; i < from + n; i += 10) {
        pub.publish(1, Array.from({ length: 10 }, (_, k) => quote(i + k)));
        await pub.drained();
        await sleep(1);
      }
    };
    await publish(0, 100);
    await until(() => got.length === 100);
    pub.setLines({ a: false, b: false }); // the subscriber misses 300 messages: far more than 8 frames
    await publish(100, 300);
    await sleep(10);
    pub.setLines({ a: true, b: false });
    await publish(400, 100);
    await until(() => got.length > 0 && got[got.length - 1]!.seq === 500n && !got[got.length - 1]!.snapshot);
    assert.equal(gaps.length, 1);
    assert.equal(gaps[0]!.fromSeq, 101n);
    assert.equal(gaps[0]!.recoverable, false);
    const s = sub.stats().channels[0]!;
    assert.equal(s.rangeGone, 1);
    assert.equal(s.snapshots, 1);
    assert.equal(BigInt(s.unrecoverable), gaps[0]!.count);
    const firstSnapshot = got.findIndex((m) => m.snapshot);
    assert.equal(firstSnapshot, 100);
    got.slice(0, 100).forEach((m, i) => assert.equal(m.seq, BigInt(i + 1)));
    const after = got.slice(firstSnapshot).filter((m) => !m.snapshot);
    const asOf = got[firstSnapshot]!.seq;
    after.forEach((m, i) => assert.equal(m.seq, asOf + 1n + BigInt(i)));
    assert.equal(pub.recoverySessions()[0]!.rangeGone, 1);
    await sub.close();
  } finally {
    pub.close();
    await server.close();
    await e.stop();
  }
});

test('a name is refused (409) while its session is connected; once the subscriber went away silently the session is ended and the name reconnects', async () => {
  const e = await engine();
  const pub = createPublisher(e, openFeedDevice(e, { address: '127.78.95.1' }), { channels: [{ id: 1, groupA: '239.78.95.1' }], instruments: { 1: 1 } });
  const provider = new RecoverySessionProvider(new Map([['default', { publisher: () => pub, channels: [1] }]]), { limits: { silenceTimeoutMs: 100 } });
  try {
    const open = (local: { qpn: number; psn: number; gid: string; mtu: number }) =>
      provider.open({ role: 'recovery', id: 7, name: 'desk', ...local, accounts: [], feed: 'default', channels: [1] });
    // The same stable id the route gives (token, name), through a handshake that does not DELETE on close.
    const handshake = async (r: { local: { qpn: number; psn: number; gid: string; mtu: number } }) => ({ id: 7, ...open(r.local), close: async () => undefined });
    const sub = await subscribe({ engine: e, device: { address: '127.78.95.3' }, channels: [{ id: 1, groupA: '239.78.95.1' }], recovery: { name: 'desk', handshake, reportIntervalMs: 10 } });
    await until(() => (provider.list()[0]?.['subscriber'] as { reports: number } | undefined)?.reports! > 2);
    assert.throws(() => open({ qpn: 1, psn: 1, gid: '::ffff:127.78.95.4', mtu: 1024 }), (err: unknown) => err instanceof SessionError && err.status === 409);
    await sub.close(); // its QP is gone; nobody told the gateway
    await until(() => provider.list()[0]?.state === 'ERR', 3000);
    assert.equal(provider.list()[0]?.['silenced'], true);
    const again = await subscribe({ engine: e, device: { address: '127.78.95.4' }, channels: [{ id: 1, groupA: '239.78.95.1' }], recovery: { name: 'desk', handshake, reportIntervalMs: 10 } });
    assert.equal(provider.list().length, 1);
    assert.equal(provider.list()[0]?.state, 'RTS');
    await again.close();
  } finally {
    pub.close();
    await e.stop();
  }
});

// The campaign's late joiners never got their snapshot (test/campaign): under
// TCG the handshake took longer than requestTimeoutMs while frames already
// came in, and the wait for the connection timed out into live delivery
// without state. The wait for a connection being made is now bounded by
// bufferFrames, and requestTimeoutMs counts from the connection.
test('a late join whose handshake takes longer than requestTimeoutMs still starts from the snapshot, with no gap', async () => {
  const e = await engine();
  const pub = createPublisher(e, openFeedDevice(e, { address: '127.78.92.5' }), { channels: [{ id: 1, groupA: '239.78.92.5', heartbeatMs: 5 }], instruments: { 1: 1 } });
  const server = await sessionsServer(providerFor(pub, [1]));
  let publishing = true;
  const feeding = (async () => {
    for (let i = 0; publishing; i += 10) {
      pub.publish(1, Array.from({ length: 10 }, (_, k) => quote(i + k)));
      await sleep(5);
    }
  })();
  try {
    await sleep(50);
    const got: FeedMessage[] = [];
    const gaps: FeedGap[] = [];
    const http = httpRecoveryHandshake({ url: server.url, token: TOKEN });
    const sub = await subscribe({
      engine: e,
      device: { address: '127.78.92.7' },
      channels: [{ id: 1, groupA: '239.78.92.5' }],
      onMessage: (m) => got.push(m),
      onGap: (g) => gaps.push(g),
      // Frames arrive all through this handshake: three request timeouts long.
      recovery: { name: 'slow-handshake', handshake: async (r) => (await sleep(1500), http(r)), requestTimeoutMs: 500 },
    });
    await until(() => got.some((m) => !m.snapshot));
    await sleep(200);
    publishing = false;
    await feeding;
    const s = sub.stats().channels[0]!;
    assert.equal(s.recoveryFailures, 0, 'the wait for the connection did not time out');
    assert.equal(s.snapshots, 1);
    assert.ok(got[0]!.snapshot, 'state came first');
    const live = got.filter((m) => !m.snapshot);
    const asOf = got[0]!.seq;
    live.forEach((m, i) => assert.equal(m.seq, asOf + 1n + BigInt(i)));
    assert.deepEqual(gaps, []);
    await sub.close();
  } finally {
    publishing = false;
    await feeding;
    pub.close();
    await server.close();
    await e.stop();
  }
});

// An ibv gateway's two links (docs/protocol.md §1.11), here soft devices on
// loopback: the publisher sends line B from its alternate device and serves
// recovery sessions there; the subscriber has a device on each link. The
// first link goes down (every packet of the first devices dropped): line B
// carries the feed, the recovery session's retries run out and it fails
// over to the alternate devices, where a gap is then recovered.
test('with a device on each link, line B carries the feed when the first link goes down and the recovery session fails over to the alternate devices', async () => {
  const e = await engine();
  const gw = openFeedDevice(e, { address: '127.78.96.1' });
  const gwAlternate = openFeedDevice(e, { address: '127.78.96.2' });
  const channels = [{ id: 1, groupA: '239.78.96.1', groupB: '239.78.96.2', heartbeatMs: 5 }];
  const pub = createPublisher(e, gw, { channels, instruments: { 1: 1 }, alternateDevice: gwAlternate });
  const provider = new RecoverySessionProvider(new Map([['default', { publisher: () => pub, channels: [1] }]]), { alternateDeviceGid: gwAlternate.gid });
  const server = await sessionsServer(provider);
  try {
    const first = openFeedDevice(e, { address: '127.78.96.3' });
    const got: FeedMessage[] = [];
    const gaps: FeedGap[] = [];
    const sub = await subscribe({
      engine: e,
      device: first,
      alternateDevice: openFeedDevice(e, { address: '127.78.96.4' }),
      channels,
      maxFrameSize: 1024,
      recvSlots: 1024,
      onMessage: (m) => got.push(m),
      onGap: (g) => gaps.push(g),
      recovery: { name: 'two-links', url: server.url, token: TOKEN, reportIntervalMs: 20 },
    });
    let sent = 0;
    const publish = async (n: number) => {
      for (let i = 0; i < n; i += 10, sent += 10) {
        pub.publish(1, Array.from({ length: 10 }, (_, k) => quote(sent + k)));
        await sleep(2);
      }
    };
    await publish(100);
    await until(() => got.length === 100);
    assert.equal(pub.recoverySessions()[0]!.device, 'primary');

    setFaults(gw, { tx: { drop: 1 }, rx: { drop: 1 } });
    setFaults(first, { tx: { drop: 1 }, rx: { drop: 1 } });
    await publish(100); // on line B only
    await until(() => sub.stats().recovery?.failovers === 1, 15_000);
    const link = sub.stats().recovery!;
    assert.equal(link.device, 'alternate');
    assert.equal(link.connection?.retryExceeded, 1);
    assert.match(link.lastReason ?? '', /failing over to the alternate device/);
    assert.ok(link.lastFailoverMs! > 0);
    assert.equal(server.requests.at(-1)!['device'], 'alternate');
    // (The route would close the one left on the first link at this handshake: a new id here.)
    const session = pub.recoverySessions().find((x) => x.device === 'alternate');
    assert.equal(session?.state, 'RTS');

    pub.setLines({ a: false, b: false }); // a gap: recovered over the alternate devices
    await publish(50);
    pub.setLines({ a: true, b: true });
    await publish(50);
    await until(() => got.length === 300);
    got.forEach((m, i) => assert.equal(m.seq, BigInt(i + 1)));
    assert.deepEqual(gaps, []);
    const s = sub.stats().channels[0]!;
    assert.ok(s.recovered > 0);
    assert.equal(s.lineAFrames > 0 && s.lineBFrames > s.lineAFrames, true, 'line B went on after line A stopped');
    await sub.close();
  } finally {
    pub.close();
    await server.close();
    await e.stop();
  }
});

test('a subscriber with an alternate device is refused at subscribe() by a gateway without one: its recovery could not fail over', async () => {
  const e = await engine();
  const pub = createPublisher(e, openFeedDevice(e, { address: '127.78.97.1' }), { channels: [{ id: 1, groupA: '239.78.97.1' }], instruments: { 1: 1 } });
  const server = await sessionsServer(providerFor(pub, [1]));
  try {
    await assert.rejects(
      subscribe({
        engine: e,
        device: { address: '127.78.97.3' },
        alternateDevice: openFeedDevice(e, { address: '127.78.97.4' }),
        channels: [{ id: 1, groupA: '239.78.97.1' }],
        recovery: { name: 'no-alternate', url: server.url, token: TOKEN },
      }),
      /the subscriber has an alternate device but the gateway has none \(backend.alternateDevice\)/,
    );
    assert.equal(pub.recoverySessions().length, 0, 'the session it opened was closed');
  } finally {
    pub.close();
    await server.close();
    await e.stop();
  }
});
