// The address exchange of ibv_rc_pingpong / ibv_ud_pingpong, byte for byte:
// what the C tools' sprintf("%04x:%06x:%06x:%s") writes and sscanf reads.
import assert from 'node:assert/strict';
import net from 'node:net';
import { test } from 'node:test';

import { clientExchange, DEST_MESSAGE_BYTES, formatDest, parseDest, serverExchange, wireToGid } from '../../src/pingpong/exchange.js';

test('an address is the C tools\' 52-byte message: hex fields, wire-order GID, trailing NULs', () => {
  const msg = formatDest({ lid: 0, qpn: 0x11, psn: 0x67a39c, gid: '::ffff:10.77.2.1' });
  assert.equal(msg.length, DEST_MESSAGE_BYTES);
  assert.equal(msg.toString('latin1', 0, 51), '0000:000011:67a39c:00000000000000000000ffff0a4d0201');
  assert.equal(msg[51], 0);
});

test('a message written by the C tools parses, IPv4-mapped and native IPv6 GIDs alike', () => {
  const c = Buffer.alloc(52);
  c.write('0000:0000a2:0f00ba:00000000000000000000ffff0a4d0202', 'latin1');
  assert.deepEqual(parseDest(c), { lid: 0, qpn: 0xa2, psn: 0x0f00ba, gid: '::ffff:10.77.2.2' });
  assert.equal(wireToGid('fe800000000000000250b6fffe1a2b3c'), 'fe80:0:0:0:250:b6ff:fe1a:2b3c');
  assert.equal(formatDest({ lid: 1, qpn: 2, psn: 3, gid: 'fe80::250:b6ff:fe1a:2b3c' }).toString('latin1', 19, 51), 'fe800000000000000250b6fffe1a2b3c');
});

test('a malformed address is refused with what was received', () => {
  assert.throws(() => parseDest(Buffer.from('0000:xyz:000000:00\0', 'latin1')), /expected "LID:QPN:PSN:GID" in hex, got "0000:xyz:000000:00"/);
  assert.throws(() => formatDest({ lid: 0, qpn: 1, psn: 1, gid: 'not-a-gid' }), /not a GID: "not-a-gid"/);
});

test('server and client exchange in the C order: the server connects its QP before answering, then waits for "done"', async () => {
  const events: string[] = [];
  let port = 0;
  const listening = new Promise<void>((resolve) => {
    void serverExchange(
      0,
      { lid: 0, qpn: 0x100, psn: 0x200, gid: '::ffff:127.0.0.1' },
      (peer) => events.push(`server connects to ${peer.qpn.toString(16)}`),
      { host: '127.0.0.1', onListening: (p) => ((port = p), resolve()) },
    ).then((peer) => events.push(`server done with ${peer.gid}`));
  });
  await listening;
  const theirs = await clientExchange('127.0.0.1', port, { lid: 0, qpn: 0x300, psn: 0x400, gid: '::ffff:127.0.0.2' });
  assert.deepEqual(theirs, { lid: 0, qpn: 0x100, psn: 0x200, gid: '::ffff:127.0.0.1' });
  while (events.length < 2) await new Promise((r) => setTimeout(r, 5));
  assert.deepEqual(events, ['server connects to 300', 'server done with ::ffff:127.0.0.2']);
});

test('a server whose client hangs up before "done" fails with a message, not a hang', async () => {
  let port = 0;
  let failure: Error | undefined;
  const listening = new Promise<void>((resolve) => {
    serverExchange(0, { lid: 0, qpn: 1, psn: 1, gid: '::ffff:127.0.0.1' }, () => {}, {
      host: '127.0.0.1',
      onListening: (p) => ((port = p), resolve()),
    }).catch((e: Error) => (failure = e));
  });
  await listening;
  const s = net.connect({ host: '127.0.0.1', port });
  await new Promise((r) => s.once('connect', r));
  s.end(formatDest({ lid: 0, qpn: 2, psn: 2, gid: '::ffff:127.0.0.2' }));
  while (failure === undefined) await new Promise((r) => setTimeout(r, 5));
  assert.match(failure.message, /closed the connection before "done"/);
});
