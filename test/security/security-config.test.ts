// security (src/gateway/security/config.ts, xfrm-keys.ts): what the config
// loader and the key reader refuse, each with one message naming the key,
// the value and the fix, before anything starts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../../src/gateway/config/load.js';
import { installLines, readEspKey, readPeerSas, SecurityConfigError } from '../../src/gateway/security/xfrm-keys.js';

function problemsOf(file: string): string[] {
  try {
    loadConfig({ file, env: {} });
  } catch (err) {
    assert.ok(err instanceof ConfigError, String(err));
    return err.problems;
  }
  return assert.fail('expected the configuration to be rejected');
}

const dir = mkdtempSync(join(tmpdir(), 'qpgate-security-'));
function file(name: string, text: string, mode = 0o600): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  chmodSync(path, mode);
  return path;
}
const KEY = 'a1'.repeat(36);

test('the default protects nothing and requires nothing', () => {
  const config = loadConfig({ env: {} });
  assert.deepEqual(config.security, { requireEncryption: false });
});

test('a keys config with a unicast peer and a feed group loads as written', () => {
  const config = loadConfig({
    file: file('ok.yaml', `security:\n  requireEncryption: true\n  ipsec:\n    mode: keys\n    peers:\n` +
      `      - {address: 10.0.0.2, out: {spi: 4097, keyFile: /k/out}, in: {spi: 4098, keyFile: /k/in}}\n` +
      `      - {address: 239.77.0.1, out: {spi: 4099, keyFile: /k/feed}}\n`),
    env: {},
  });
  assert.equal(config.security.ipsec?.peers.length, 2);
  assert.equal(config.security.ipsec?.peers[1]?.in, undefined);
});

test('requireEncryption without ipsec, peers in verify mode, a group with in, a unicast peer without in and a shared SPI are refused', () => {
  assert.deepEqual(problemsOf(file('a.yaml', 'security:\n  requireEncryption: true\n')), [
    "security.requireEncryption (from a.yaml): true without security.ipsec: set security.ipsec.mode ('keys' or 'verify')",
  ].map((p) => p.replace('a.yaml', join(dir, 'a.yaml'))));
  const problems = problemsOf(file('b.yaml', `security:\n  ipsec:\n    mode: verify\n    peers:\n` +
    `      - {address: 239.1.1.1, out: {spi: 300, keyFile: /k}, in: {spi: 301, keyFile: /k}}\n` +
    `      - {address: 10.0.0.9, out: {spi: 300, keyFile: /k}}\n`));
  assert.equal(problems.length, 4, problems.join('\n'));
  assert.match(problems[0]!, /^security\.ipsec\.peers .*: mode 'verify' installs nothing: remove the peers or use mode 'keys'$/);
  assert.match(problems[1]!, /^security\.ipsec\.peers\.0\.in .*: 239\.1\.1\.1 is a multicast group: it only receives \(out\); remove in$/);
  assert.match(problems[2]!, /^security\.ipsec\.peers\.1 .*: unicast peer 10\.0\.0\.9 needs in .* as well as out$/);
  assert.match(problems[3]!, /^security\.ipsec\.peers\.1\.out\.spi .*: 300 is already the SPI of security\.ipsec\.peers\.0\.out: each SA needs its own$/);
  const spi = problemsOf(file('c.yaml', 'security:\n  ipsec:\n    mode: keys\n    peers:\n      - {address: 239.1.1.1, out: {spi: 255, keyFile: /k}}\n'));
  assert.equal(spi.length, 1, spi.join('\n'));
  assert.match(spi[0]!, /security\.ipsec\.peers\.0\.out\.spi/);
});

test('a key file others may read, a missing one and one of the wrong length are refused with the file and the fix', () => {
  assert.equal(readEspKey('k', file('good.key', `0x${KEY}\n`)), KEY);
  assert.equal(readEspKey('k', file('good128.key', 'B2'.repeat(20))), 'b2'.repeat(20));
  const open = file('open.key', KEY, 0o644);
  assert.throws(() => readEspKey('security.ipsec.peers.0.out.keyFile', open), {
    name: 'SecurityConfigError',
    message: `security.ipsec.peers.0.out.keyFile: ${open} has mode 0644: others may read the key; expected 0600 (chmod 600 ${open})`,
  });
  assert.throws(() => readEspKey('k', join(dir, 'absent.key')), { message: `k: cannot read ${join(dir, 'absent.key')}: ENOENT` });
  const short = file('short.key', 'a1'.repeat(16));
  assert.throws(() => readEspKey('k', short), new SecurityConfigError(`k: ${short}: expected the rfc4106(gcm(aes)) key and salt in hex, 40 digits (AES-128) or 72 (AES-256), got 32 digits`));
  assert.throws(() => readEspKey('k', file('nothex.key', 'zz'.repeat(36))), /got a non-hex character$/);
});

test('each peer gets a transport ESP state and a policy on all of UDP (no port: rxe flows carry none), per direction', () => {
  const sas = readPeerSas(() => '10.0.0.1', [
    { address: '10.0.0.2', out: { spi: 4097, keyFile: file('o.key', KEY) }, in: { spi: 4098, keyFile: file('i.key', 'c3'.repeat(20)) } },
  ]);
  assert.deepEqual(sas.map(({ hex: _h, ...s }) => s), [
    { src: '10.0.0.1', dst: '10.0.0.2', spi: 4097, dir: 'out', keyBits: 256 },
    { src: '10.0.0.2', dst: '10.0.0.1', spi: 4098, dir: 'in', keyBits: 128 },
  ]);
  assert.deepEqual(installLines(sas), [
    `xfrm state add src 10.0.0.1 dst 10.0.0.2 proto esp spi 0x00001001 mode transport aead rfc4106(gcm(aes)) 0x${KEY} 128`,
    'xfrm policy update src 10.0.0.1/32 dst 10.0.0.2/32 proto udp dir out tmpl src 10.0.0.1 dst 10.0.0.2 proto esp mode transport',
    `xfrm state add src 10.0.0.2 dst 10.0.0.1 proto esp spi 0x00001002 mode transport aead rfc4106(gcm(aes)) 0x${'c3'.repeat(20)} 128`,
    'xfrm policy update src 10.0.0.2/32 dst 10.0.0.1/32 proto udp dir in tmpl src 10.0.0.2 dst 10.0.0.1 proto esp mode transport',
  ]);
});

test("a peer on the alternate link gets its SAs from the gateway's second address, the others from its first", () => {
  const local = (link: 'primary' | 'alternate' | undefined) => (link === 'alternate' ? '10.1.0.1' : '10.0.0.1');
  const sas = readPeerSas(local, [
    { address: '10.0.0.2', out: { spi: 4097, keyFile: file('p-o.key', KEY) }, in: { spi: 4098, keyFile: file('p-i.key', KEY) } },
    { address: '10.1.0.2', link: 'alternate', out: { spi: 4099, keyFile: file('a-o.key', KEY) }, in: { spi: 4100, keyFile: file('a-i.key', KEY) } },
    { address: '239.77.0.2', link: 'alternate', out: { spi: 4101, keyFile: file('b.key', KEY) } },
  ]);
  assert.deepEqual(sas.map((s) => [s.dir, s.src, s.dst]), [
    ['out', '10.0.0.1', '10.0.0.2'],
    ['in', '10.0.0.2', '10.0.0.1'],
    ['out', '10.1.0.1', '10.1.0.2'],
    ['in', '10.1.0.2', '10.1.0.1'],
    ['out', '10.1.0.1', '239.77.0.2'],
  ]);
});

test("link 'alternate' on a gateway with one link is refused; with backend.alternateAddress it loads", () => {
  const peers = `    peers:\n      - {address: 10.1.0.2, link: alternate, out: {spi: 4097, keyFile: /k/o}, in: {spi: 4098, keyFile: /k/i}}\n`;
  const problems = problemsOf(file('one-link.yaml', `security:\n  ipsec:\n    mode: keys\n${peers}`));
  assert.deepEqual(problems, [
    `security.ipsec.peers.0.link (from ${join(dir, 'one-link.yaml')}): 'alternate' on a gateway with one link: set backend.alternateAddress (soft) or backend.alternateDevice (ibv), or leave link out`,
  ]);
  const two = loadConfig({ file: file('two-links.yaml', `backend:\n  alternateAddress: 127.0.0.88\nsecurity:\n  ipsec:\n    mode: keys\n${peers}`), env: {} });
  assert.equal(two.security.ipsec?.peers[0]?.link, 'alternate');
});
