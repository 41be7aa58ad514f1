// https on the control plane (control.tls) with real certificates made by
// openssl (test/support/certificates.ts). What a user relies on:
//   - a gateway on https answers `qpgate status --ca <file>`, which says it is https;
//   - without that CA the CLI fails with one message naming the certificate, sends
//     nothing in the clear, and the gateway counts the refused handshake;
//   - an OrderClient given the CA places an order; without it the handshake is refused;
//     a subscriber's recovery handshake verifies the same way;
//   - an expired certificate, a key of another certificate or a missing file stop
//     `qpgate serve` at exit 2 with one line naming the file;
//   - a control.host off loopback without TLS is refused when the config loads,
//     before anything listens;
//   - with control.tls.clientCaFile a client without a certificate, or with an
//     expired one, is refused with a 401 saying which, counted by reason; the
//     CLI and an OrderClient show that reason;
//   - a gateway certificate that expires while the gateway runs: /metrics had
//     its expiry, and the CLI and an OrderClient say it expired and that the
//     gateway's operator must renew it (no CA option can help).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeCertificates, shortLived, type TestCertificates } from '../support/certificates.js';
import { startGatewayProcess, type GatewayProcess } from '../support/gateway-process.js';
import { runCli } from '../support/cli.js';
import { freeLoopbackAddress } from '../support/loopback.js';
import { ConfigError, loadConfig } from '../../src/gateway/config/load.js';
import { OrderClient } from '../../src/orders/client.js';
import { HandshakeError } from '../../src/orders/rc-endpoint.js';
import { Side } from '../../src/orders/messages.js';
import { controlFetch } from '../../src/http/control-fetch.js';
import { httpRecoveryHandshake, RecoveryHandshakeError } from '../../src/feed/recovery-handshake.js';

let certs: TestCertificates;
let gw: GatewayProcess;
let token: string;

const tlsArgs = (pair: { cert: string; key: string }): string[] => ['--set', `control.tls.certFile=${pair.cert}`, '--set', `control.tls.keyFile=${pair.key}`];

before(async () => {
  certs = makeCertificates();
  gw = await startGatewayProcess([...tlsArgs(certs.gateway), '--set', 'feeds.enabled=false']);
  token = readFileSync(join(gw.stateDir, 'admin.token'), 'utf8').trim();
});
after(async () => {
  gw?.child.kill('SIGTERM');
  await gw?.exited;
});

test('a gateway on https answers `qpgate status --ca` and reports its certificate', async () => {
  assert.match(gw.url, /^https:\/\/127\.0\.0\.1:\d+$/);
  const r = await runCli(['status', '--url', gw.url, '--token', token, '--ca', certs.ca]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^Control plane: https, certificate CN=qpgate-gateway from .*gateway\.crt, issuer CN=ca, valid until \S+, client certificates not requested$/m);
  const json = await runCli(['status', '--json', '--url', gw.url, '--token', token, '--ca', certs.ca]);
  const status = JSON.parse(json.stdout) as { control: { tls: { enabled: boolean; certFile: string } } };
  assert.deepEqual([status.control.tls.enabled, status.control.tls.certFile], [true, certs.gateway.cert]);
});

test('without the CA the CLI fails with one message about the certificate, and the gateway counts the refused handshake', async () => {
  const r = await runCli(['status', '--url', gw.url, '--token', token]);
  assert.equal(r.code, 1);
  assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
  assert.match(r.stderr, /^qpgate status: the certificate of the gateway at https:\/\/127\.0\.0\.1:\d+ did not verify \(UNABLE_TO_VERIFY_LEAF_SIGNATURE: .*\): pass the CA that signed it with --ca <file>/);
  const wrong = await runCli(['qps', '--url', gw.url, '--token', token, '--ca', certs.otherCa]);
  assert.equal(wrong.code, 1);
  assert.match(wrong.stderr, /did not verify \(UNABLE_TO_VERIFY_LEAF_SIGNATURE/);
  // The same gateway asked over http: refused, never answered in the clear.
  const plain = await runCli(['status', '--url', gw.url.replace('https:', 'http:'), '--token', token]);
  assert.equal(plain.code, 1);
  assert.match(plain.stderr, /no gateway answers at http:.*\(if it serves https, use an https:\/\/ URL\)/);

  const res = await controlFetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${token}` } }, { ca: readFileSync(certs.ca) });
  const refused = [...(await res.text()).matchAll(/^qpgate_control_tls_handshake_failures_total\{reason="([^"]+)"\} (\d+)$/gm)];
  const total = refused.reduce((n, m) => n + Number(m[2]), 0);
  assert.ok(total >= 3, `three refused handshakes counted, got ${JSON.stringify(refused.map((m) => m.slice(1)))}`);
});

test('an OrderClient given the CA places an order on an https gateway; without it the handshake is refused', { timeout: 60_000 }, async () => {
  const options = { url: gw.url, token, name: 'tls-desk', accounts: [1n], device: { address: freeLoopbackAddress() } };
  await assert.rejects(OrderClient.connect(options), (err: unknown) => {
    assert.ok(err instanceof HandshakeError);
    assert.match(err.message, /certificate of the gateway at https:.* did not verify \(UNABLE_TO_VERIFY_LEAF_SIGNATURE.*tls\.ca/);
    return true;
  });
  const client = await OrderClient.connect({ ...options, tls: { ca: readFileSync(certs.ca) } });
  try {
    const answer = await client.newOrder({ clientOrderId: 1n, instrumentId: 1001, side: Side.SIDE_BUY, price: 10000, quantity: 1, account: 1n });
    assert.equal(answer.kind, 'ack');
  } finally {
    await client.close();
  }
});

test("a subscriber's recovery handshake verifies the certificate: refused without the CA, answered by the gateway with it", async () => {
  const request = { name: 'tls-sub', feed: 'default', channels: [1], local: { qpn: 0x11, psn: 1, gid: '::ffff:127.0.0.9', mtu: 1024 } };
  await assert.rejects(httpRecoveryHandshake({ url: gw.url, token })(request), (err: unknown) => {
    assert.ok(err instanceof RecoveryHandshakeError);
    assert.equal(err.status, 0);
    assert.match(err.message, /certificate of the gateway at https:.* did not verify \(UNABLE_TO_VERIFY_LEAF_SIGNATURE.*recovery\.tls\.ca/);
    return true;
  });
  // This gateway runs no feed: the answer (404) is the gateway's own, over the verified connection.
  await assert.rejects(httpRecoveryHandshake({ url: gw.url, token, tls: { ca: readFileSync(certs.ca) } })(request), (err: unknown) => {
    assert.ok(err instanceof RecoveryHandshakeError);
    assert.equal(err.status, 404, err.message);
    return true;
  });
});

/** `qpgate serve` that must stop before it starts: its exit code and its stderr lines. */
async function refusedServe(args: string[]): Promise<{ code: number | null; lines: string[] }> {
  const r = await runCli(['serve', '--port', '0', '--set', `backend.address=${freeLoopbackAddress()}`, '--set', `state.dir=${join(certs.dir, 'state')}`, ...args], 30_000);
  return { code: r.code, lines: r.stderr.trim().split('\n') };
}

test('an expired certificate, a key of another certificate and a missing file stop `qpgate serve` at exit 2, one line each', async () => {
  const expired = await refusedServe(tlsArgs(certs.expired));
  assert.deepEqual(expired, {
    code: 2,
    lines: [`qpgate: control.tls.certFile: the certificate in ${certs.expired.cert} expired on 2020-01-02T00:00:00.000Z: renew it and point control.tls.certFile at the new one`],
  });
  const mismatched = await refusedServe(tlsArgs({ cert: certs.gateway.cert, key: certs.client.key }));
  assert.equal(mismatched.code, 2);
  assert.deepEqual(mismatched.lines, [`qpgate: control.tls.keyFile: the key in ${certs.client.key} does not match the certificate in ${certs.gateway.cert}: give the key the certificate was issued for`]);
  const missing = await refusedServe(tlsArgs({ cert: join(certs.dir, 'nowhere.crt'), key: certs.gateway.key }));
  assert.equal(missing.code, 2);
  assert.deepEqual(missing.lines, [`qpgate: control.tls.certFile: no such file ${join(certs.dir, 'nowhere.crt')}: give the path of the PEM certificate the control plane serves`]);
});

test('a control.host off loopback without TLS is refused when the config loads, before anything listens', async () => {
  // loadConfig is what `qpgate serve` runs before the engine, the device or a socket exists.
  assert.throws(
    () => loadConfig({ env: {}, overrides: ['control.host=0.0.0.0'] }),
    (err: unknown) => err instanceof ConfigError && /^control\.host \(from --set control\.host=0\.0\.0\.0\): "0\.0\.0\.0" is not loopback and control\.tls is not set: tokens would cross the network in the clear/.test(err.problems[0] ?? ''),
  );
  assert.equal(loadConfig({ env: {}, overrides: ['control.host=0.0.0.0', 'control.allowPlaintextOnNetwork=true'] }).control.host, '0.0.0.0');
  assert.equal(loadConfig({ env: {}, overrides: ['control.host=0.0.0.0', `control.tls.certFile=${certs.gateway.cert}`, `control.tls.keyFile=${certs.gateway.key}`] }).control.host, '0.0.0.0');
  assert.equal(loadConfig({ env: {}, overrides: ['control.host=::1'] }).control.host, '::1');
  const serve = await refusedServe(['--host', '0.0.0.0']);
  assert.equal(serve.code, 2);
  assert.match(serve.lines.join('\n'), /control\.host \(from --set control\.host=0\.0\.0\.0\): "0\.0\.0\.0" is not loopback/);
});

test('with control.tls.clientCaFile a client without a certificate is refused, one with a certificate the CA signed is served', async () => {
  const mtls = await startGatewayProcess([...tlsArgs(certs.gateway), '--set', `control.tls.clientCaFile=${certs.ca}`, '--set', 'feeds.enabled=false', '--set', 'orders.enabled=false']);
  try {
    const adminToken = readFileSync(join(mtls.stateDir, 'admin.token'), 'utf8').trim();
    const without = await runCli(['status', '--url', mtls.url, '--token', adminToken, '--ca', certs.ca]);
    assert.equal(without.code, 1);
    assert.deepEqual(without.stderr.trim().split('\n'), [`qpgate status: the gateway at ${mtls.url} refused the client certificate (401: this gateway requires a client certificate (control.tls.clientCaFile) ` +
      'and none was presented: present one its CA signed): pass one with --cert <file> --key <file> (or $QPGATE_CERT, $QPGATE_KEY)']);
    const expired = await runCli(['status', '--url', mtls.url, '--token', adminToken, '--ca', certs.ca, '--cert', certs.expiredClient.cert, '--key', certs.expiredClient.key]);
    assert.equal(expired.code, 1);
    assert.deepEqual(expired.stderr.trim().split('\n'), [`qpgate status: the gateway at ${mtls.url} refused the client certificate (401: the client certificate CN=desk-8 expired on 2020-01-02T00:00:00.000Z: renew it): ` +
      'pass one with --cert <file> --key <file> (or $QPGATE_CERT, $QPGATE_KEY)']);
    // The client libraries' handshake is told the same.
    await assert.rejects(OrderClient.connect({ url: mtls.url, token: adminToken, name: 'mtls-desk', accounts: [1n], device: { address: freeLoopbackAddress() },
      tls: { ca: readFileSync(certs.ca), cert: readFileSync(certs.expiredClient.cert), key: readFileSync(certs.expiredClient.key) } }), (err: unknown) => {
      assert.ok(err instanceof HandshakeError);
      assert.equal(err.status, 401);
      assert.match(err.message, /the client certificate CN=desk-8 expired on 2020-01-02T00:00:00\.000Z: renew it/);
      return true;
    });
    const withCert = await runCli(['status', '--url', mtls.url, '--token', adminToken, '--ca', certs.ca, '--cert', certs.client.cert, '--key', certs.client.key]);
    assert.equal(withCert.code, 0, withCert.stderr);
    assert.match(withCert.stdout, /client certificates required/);
    const tls = { ca: readFileSync(certs.ca), cert: readFileSync(certs.client.cert), key: readFileSync(certs.client.key) };
    const metrics = await (await controlFetch(`${mtls.url}/metrics`, { headers: { authorization: `Bearer ${adminToken}` } }, tls)).text();
    assert.match(metrics, /^qpgate_control_tls_handshake_failures_total\{reason="NO_CLIENT_CERTIFICATE"\} 1$/m);
    assert.match(metrics, /^qpgate_control_tls_handshake_failures_total\{reason="CERT_HAS_EXPIRED"\} 2$/m);
  } finally {
    mtls.child.kill('SIGTERM');
    await mtls.exited;
  }
});

/**
 * A gateway serving a certificate that expires a few seconds after it started: signed for
 * `seconds` and, should the start outlast that (a loaded host), again for twice as long.
 */
async function gatewayWhoseCertificateExpires(seconds = 10): Promise<{ gw: GatewayProcess; validTo: Date }> {
  const soon = shortLived(certs, `soon-${seconds}`, seconds);
  try {
    const gw = await startGatewayProcess([...tlsArgs(soon), '--set', 'feeds.enabled=false']);
    if (Date.now() < soon.validTo.getTime() - 1000) return { gw, validTo: soon.validTo };
    gw.child.kill('SIGTERM');
    await gw.exited;
  } catch (err) {
    if (seconds >= 320) throw err;
  }
  return gatewayWhoseCertificateExpires(seconds * 2);
}

test("a gateway certificate that expires while the gateway runs: /metrics had its expiry; then the CLI and an OrderClient say it expired and the gateway's operator must renew it", { timeout: 900_000 }, async () => {
  const { gw: expiring, validTo } = await gatewayWhoseCertificateExpires();
  try {
    const adminToken = readFileSync(join(expiring.stateDir, 'admin.token'), 'utf8').trim();
    const metrics = await (await controlFetch(`${expiring.url}/metrics`, { headers: { authorization: `Bearer ${adminToken}` } }, { ca: readFileSync(certs.ca) })).text();
    const expiry = /^qpgate_control_tls_certificate_expiry_timestamp_seconds\{subject="CN=qpgate-soon-\d+"\} (\d+)$/m.exec(metrics);
    assert.equal(Number(expiry?.[1]), validTo.getTime() / 1000, 'the expiry is the certificate\'s notAfter');
    await new Promise((r) => setTimeout(r, validTo.getTime() - Date.now() + 1500));
    const status = await runCli(['status', '--url', expiring.url, '--token', adminToken, '--ca', certs.ca]);
    assert.equal(status.code, 1);
    assert.deepEqual(status.stderr.trim().split('\n'), [`qpgate status: the certificate of the gateway at ${expiring.url} did not verify (CERT_HAS_EXPIRED: certificate has expired): ` +
      "it has expired: the gateway's operator must renew it (control.tls.certFile) and restart the gateway; no CA option makes it verify"]);
    await assert.rejects(OrderClient.connect({ url: expiring.url, token: adminToken, name: 'late-desk', accounts: [1n], device: { address: freeLoopbackAddress() }, tls: { ca: readFileSync(certs.ca) } }),
      (err: unknown) => {
        assert.ok(err instanceof HandshakeError);
        assert.match(err.message, /\(CERT_HAS_EXPIRED: certificate has expired\): it has expired: the gateway's operator must renew it/);
        return true;
      });
  } finally {
    expiring.child.kill('SIGTERM');
    await expiring.exited;
  }
});
