// The xfrm policy check (src/gateway/security/xfrm-policy.ts) on real
// `ip xfrm policy` output captured in the rdma-vm guest (test/fixtures/xfrm),
// and the refusal it leads to (guard.ts): a peer is covered only when the
// policy that decides its RoCEv2 flow requires an ESP transport SA, and a
// selector on dport 4791 does not cover rxe, whose flows carry no ports.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../support/paths.js';
import { coverage, parseXfrmPolicies, type RoceFlow } from '../../src/gateway/security/xfrm-policy.js';
import { EncryptionGuard, refuseUnprotectedFeedGroups } from '../../src/gateway/security/guard.js';
import type { FeedsConfig } from '../../src/feed/config.js';
import { formatSecurity } from '../../src/gateway/status-commands.js';
import { parseXfrmStates } from '../../src/gateway/security/xfrm-state.js';

const fixture = (name: string) => readFileSync(join(REPO_ROOT, 'test/fixtures/xfrm', name), 'utf8');
const keys = parseXfrmPolicies(fixture('policy-keys.txt'));
const dport = parseXfrmPolicies(fixture('policy-dport.txt'));
const flow = (src: string, dst: string, dir: 'out' | 'in', flowHasPorts = true): RoceFlow => ({ src, dst, dir, flowHasPorts });

test('the policies the gateway installs parse with their selectors, directions and ESP templates', () => {
  assert.deepEqual(
    keys.map((p) => `${p.dir} ${p.src} -> ${p.dst} ${p.proto}:${p.dport} ${p.tmpls.map((t) => `${t.proto}/${t.mode}${t.optional ? '?' : ''}`).join(',')}`),
    [
      'out 10.77.3.1/32 -> 239.77.0.2/32 udp:0 esp/transport',
      'out 10.77.3.1/32 -> 239.77.0.1/32 udp:0 esp/transport',
      'in 10.77.3.2/32 -> 10.77.3.1/32 udp:0 esp/transport',
      'out 10.77.3.1/32 -> 10.77.3.2/32 udp:0 esp/transport',
    ],
  );
  assert.deepEqual(dport.map((p) => [p.dir, p.dport]), [['in', 4791], ['out', 4791]]);
});

test('the installed policies cover the peer both ways and the feed groups out, and nobody else', () => {
  for (const backendHasPorts of [true, false]) {
    assert.equal(coverage(keys, flow('10.77.3.1', '10.77.3.2', 'out', backendHasPorts)).covered, true);
    assert.equal(coverage(keys, flow('10.77.3.2', '10.77.3.1', 'in', backendHasPorts)).covered, true);
    assert.equal(coverage(keys, flow('10.77.3.1', '239.77.0.1', 'out', backendHasPorts)).covered, true);
  }
  assert.deepEqual(coverage(keys, flow('10.77.3.1', '10.77.3.9', 'out')), { covered: false, reason: 'no xfrm policy (dir out) covers UDP 4791 to 10.77.3.9' });
  assert.deepEqual(coverage(keys, flow('10.77.3.9', '10.77.3.1', 'in')), { covered: false, reason: 'no xfrm policy (dir in) covers UDP 4791 from 10.77.3.9' });
});

test('a dport 4791 selector covers the soft backend (a UDP socket: its flows have ports) but not rxe, and says why', () => {
  assert.equal(coverage(dport, flow('10.77.2.1', '10.77.2.2', 'out', true)).covered, true);
  assert.deepEqual(coverage(dport, flow('10.77.2.1', '10.77.2.2', 'out', false)), {
    covered: false,
    reason: "the xfrm policy to 10.77.2.2 names dport 4791, which rxe's route lookup never carries: use a selector without ports (proto udp)",
  });
});

test('the deciding policy is the one of lowest priority value: a bypass, a block or an optional SA ahead of the ESP one leaves the peer uncovered', () => {
  const esp = 'src 10.0.0.0/8 dst 10.0.0.0/8 proto udp \n\tdir out priority 100 ptype main \n\ttmpl src 0.0.0.0 dst 0.0.0.0\n\t\tproto esp reqid 0 mode transport\n';
  const ahead = (body: string) => parseXfrmPolicies(`src 10.0.0.1/32 dst 10.0.0.2/32 \n\tdir out ${body}\n${esp}`);
  const f = flow('10.0.0.1', '10.0.0.2', 'out');
  assert.equal(coverage(parseXfrmPolicies(esp), f).covered, true);
  assert.match(coverage(ahead('priority 10 ptype main '), f).reason!, /^the xfrm policy to 10\.0\.0\.2 \(10\.0\.0\.1\/32 -> 10\.0\.0\.2\/32\) requires no ESP transport SA$/);
  assert.match(coverage(ahead('action block priority 10 ptype main '), f).reason!, /blocks it$/);
  const optional = ahead('priority 10 ptype main \n\ttmpl src 0.0.0.0 dst 0.0.0.0\n\t\tproto esp reqid 0 mode transport\n\t\tlevel use ');
  assert.match(coverage(optional, f).reason!, /requires no ESP transport SA$/);
  assert.equal(coverage(ahead('priority 200 ptype main '), f).covered, true);
});

test('with requireEncryption the guard refuses an uncovered peer and a GID that is no IPv4 address, counts each reason, and lets a covered one through', async () => {
  const config = { requireEncryption: true, ipsec: { mode: 'verify' as const, peers: [] } };
  const guard = await EncryptionGuard.start(config, { primary: '10.77.3.1' }, 'soft', async () => keys);
  assert.equal(await guard.sessionRefusal('::ffff:10.77.3.2', 'trading session "a"'), undefined);
  const refused = await guard.sessionRefusal('::ffff:10.77.3.7', 'trading session "b"');
  assert.deepEqual(refused, {
    reason: 'no_policy',
    message: 'trading session "b" from 10.77.3.7: refused, no xfrm policy (dir out) covers UDP 4791 to 10.77.3.7; nothing was sent. ' +
      'Install an ESP transport policy for UDP between 10.77.3.1 and 10.77.3.7 (ip xfrm policy, or your IKE daemon)',
  });
  assert.equal((await guard.sessionRefusal('fe80::1', 'risk session "c"'))?.reason, 'not_ipv4');
  const unreadable = await EncryptionGuard.start(config, { primary: '10.77.3.1' }, 'soft', async () => { throw new Error('Operation not permitted'); });
  assert.match((await unreadable.refusal('10.77.3.2', 'recovery session "d"'))!.message, /could not be read \(ip xfrm policy: Operation not permitted\); nothing was sent$/);
  const { Registry } = await import('prom-client');
  const registry = new Registry();
  guard.metrics(registry);
  const text = await registry.metrics();
  assert.match(text, /^qpgate_security_refusals_total\{reason="no_policy"\} 1$/m);
  assert.match(text, /^qpgate_security_refusals_total\{reason="not_ipv4"\} 1$/m);
  assert.deepEqual(guard.report().peers.map((p) => [p.address, p.covered]), [['10.77.3.2', true], ['10.77.3.7', false]]);
  const notRequired = await EncryptionGuard.start({ requireEncryption: false }, { primary: '10.77.3.1' }, 'soft', async () => keys);
  assert.equal(await notRequired.sessionRefusal('::ffff:10.77.3.7', 'x'), undefined);
});

// The same installed policies on a gateway's second link (10.77.4.x): what
// `security.ipsec.peers[].link: alternate` installs there.
const secondLink = parseXfrmPolicies(fixture('policy-keys.txt').replaceAll('10.77.3.', '10.77.4.'));
const twoLinks = { primary: '10.77.3.1', alternate: '10.77.4.1' };
const verify = { requireEncryption: true, ipsec: { mode: 'verify' as const, peers: [] } };
const feeds = (groupB: string) => ({ enabled: true, channels: [{ id: 1, groupA: '239.77.0.1', groupB }] }) as unknown as FeedsConfig;

test("on a gateway with two links each flow is checked from its own link's address: the first link's policies do not cover the second", async () => {
  const guard = await EncryptionGuard.start(verify, twoLinks, 'soft', async () => keys);
  assert.equal(guard.has('alternate'), true);
  assert.equal(await guard.sessionRefusal('::ffff:10.77.3.2', 'trading session "a"'), undefined);
  assert.deepEqual(await guard.sessionRefusal('::ffff:10.77.4.2', 'trading session "a" (its alternate path)', 'alternate'), {
    reason: 'no_policy',
    message: 'trading session "a" (its alternate path) from 10.77.4.2: refused, no xfrm policy (dir out) covers UDP 4791 to 10.77.4.2; nothing was sent. ' +
      'Install an ESP transport policy for UDP between 10.77.4.1 and 10.77.4.2 (ip xfrm policy, or your IKE daemon)',
  });
  // A session on the alternate device from the first link's peer: its packets leave from 10.77.4.1, which nothing covers.
  assert.match((await guard.sessionRefusal('::ffff:10.77.3.2', 'trading session "b"', 'alternate'))!.message, /between 10\.77\.4\.1 and 10\.77\.3\.2/);
  // Line B leaves from the second link: the group's first-link policy does not cover it.
  await assert.rejects(refuseUnprotectedFeedGroups(guard, feeds('239.77.0.2')), {
    name: 'SecurityConfigError',
    message: 'feed channel 1 group 239.77.0.2: refused, no xfrm policy (dir out) covers UDP 4791 to 239.77.0.2; nothing was sent. ' +
      'Install an ESP transport policy for UDP between 10.77.4.1 and 239.77.0.2 (ip xfrm policy, or your IKE daemon)',
  });
  assert.deepEqual(
    guard.report().peers.map((p) => [p.local, p.link, p.address, p.covered]),
    [
      ['10.77.3.1', 'primary', '10.77.3.2', true],
      ['10.77.4.1', 'alternate', '10.77.4.2', false],
      ['10.77.4.1', 'alternate', '10.77.3.2', false],
      ['10.77.3.1', 'primary', '239.77.0.1', true],
      ['10.77.4.1', 'alternate', '239.77.0.2', false],
    ],
  );
  // `qpgate status` names the link and the address a second-link peer was checked from.
  assert.ok(formatSecurity(guard.report()).includes('\tPeer 10.77.4.2 (alternate link, from 10.77.4.1): NOT covered (no xfrm policy (dir out) covers UDP 4791 to 10.77.4.2)'));
});

test('with both links covered the alternate path, the alternate device and line B pass; a one-link gateway has no alternate flow to check', async () => {
  const guard = await EncryptionGuard.start(verify, twoLinks, 'soft', async () => [...keys, ...secondLink]);
  assert.equal(await guard.sessionRefusal('::ffff:10.77.4.2', 'trading session "a" (its alternate path)', 'alternate'), undefined);
  await refuseUnprotectedFeedGroups(guard, feeds('239.77.0.2'));
  const oneLink = await EncryptionGuard.start(verify, { primary: '10.77.3.1' }, 'soft', async () => keys);
  assert.equal(oneLink.has('alternate'), false);
  await refuseUnprotectedFeedGroups(oneLink, feeds('239.77.0.2'));
});

test("a peer whose ESP fails authentication here is refused on its next session with the SA and the cause, counted; the attempt after that is let through to prove a fixed key", async () => {
  // The peer's SA to us: 0 failed at its first session, 12 failed (none passed) by the next.
  let sa = { src: '10.77.3.2', dst: '10.77.3.1', spi: 0x1002, packets: 0, failed: 0 };
  const guard = await EncryptionGuard.start(verify, { primary: '10.77.3.1' }, 'soft', async () => keys, async () => [sa]);
  assert.equal(await guard.sessionRefusal('::ffff:10.77.3.2', 'recovery session "s"'), undefined, 'the first session: nothing failed yet');
  sa = { ...sa, failed: 12 };
  assert.deepEqual(await guard.sessionRefusal('::ffff:10.77.3.2', 'trading session "o"'), {
    reason: 'esp_auth_failed',
    message: 'trading session "o" from 10.77.3.2: refused, ESP from 10.77.3.2 fails authentication at this gateway (12 packets to SA 0x00001002 since its last session, ' +
      "none ever authenticated): the peer's key for that SA is not ours; nothing was sent. Give both ends the same key",
  });
  // Nothing was sent since: the next attempt goes through, and with the key fixed its packets authenticate.
  assert.equal(await guard.sessionRefusal('::ffff:10.77.3.2', 'trading session "o"'), undefined);
  sa = { ...sa, failed: 12, packets: 40 };
  assert.equal(await guard.sessionRefusal('::ffff:10.77.3.2', 'trading session "o"'), undefined, 'an SA that ever authenticated is a key that works');
  const { Registry } = await import('prom-client');
  const registry = new Registry();
  guard.metrics(registry);
  assert.match(await registry.metrics(), /^qpgate_security_refusals_total\{reason="esp_auth_failed"\} 1$/m);
});

test("the SAs' counters parse from real `ip -s xfrm state` output: the peer with another key failed and never passed, the feed's SAs passed", () => {
  const states = parseXfrmStates(fixture('state-stats.txt'));
  assert.deepEqual(
    states.map((s) => [s.src, s.dst, `0x${s.spi.toString(16)}`, s.packets, s.failed]),
    [
      ['10.77.3.1', '239.77.0.2', '0x2002', 5257, 0],
      ['10.77.3.1', '239.77.0.1', '0x2001', 5257, 0],
      ['10.77.3.2', '10.77.3.1', '0x1002', 0, 30],
      ['10.77.3.1', '10.77.3.2', '0x1001', 0, 0],
    ],
  );
});

test('sessions that arrive together share one read of the policies and one of the SAs: a burst of handshakes is not a burst of `ip` execs', async () => {
  let policyReads = 0;
  let stateReads = 0;
  let release: () => void = () => undefined;
  const gate = new Promise<void>((r) => (release = r));
  const sa = { src: '10.77.3.2', dst: '10.77.3.1', spi: 0x1002, packets: 7, failed: 0 };
  const guard = await EncryptionGuard.start(verify, { primary: '10.77.3.1' }, 'soft',
    async () => (++policyReads, await gate, keys), async () => (++stateReads, await gate, [sa]));
  policyReads = 0;
  stateReads = 0;
  const burst = Array.from({ length: 20 }, (_, i) => guard.sessionRefusal('::ffff:10.77.3.2', `trading session "b${i}"`));
  release();
  assert.deepEqual(await Promise.all(burst), Array(20).fill(undefined), 'every session of the burst let through');
  assert.equal(policyReads, 1);
  assert.equal(stateReads, 1);
  // A read is shared only while it is under way: the next session reads again.
  assert.equal(await guard.sessionRefusal('::ffff:10.77.3.2', 'trading session "later"'), undefined);
  assert.equal(policyReads, 2);
  assert.equal(stateReads, 2);
});
