// The live status page: served at / without a token, with a CSP that allows
// only its own inline script and requests to the gateway, no external URL,
// and the elements the page fills from /v1/status.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import type { Gateway } from '../../src/gateway/service.js';
import { startTestGateway, client } from '../support/in-process-gateway.js';

let gw: Gateway;
before(async () => {
  gw = await startTestGateway();
});
after(async () => {
  await gw.close('test done');
});

test('GET / serves the status page shell, open, with the elements it fills', async () => {
  const r = await client(gw).get('/');
  assert.equal(r.status, 200);
  assert.match(r.headers.get('content-type') ?? '', /^text\/html/);
  for (const id of ['auth', 'token', 'device', 'rates', 'latency', 'histograms', 'slo', 'feeds', 'sessions', 'qps', 'state']) {
    assert.match(r.text, new RegExp(`id="${id}"`), id);
  }
  assert.match(r.text, /fetch\('\/v1\/status'/);
  assert.match(r.text, /sessionStorage/);
  assert.match(r.text, /createElementNS\(ns, 'svg'\)|createElementNS/);
  // Nothing from elsewhere: no external URLs but the SVG namespace.
  const urls = [...r.text.matchAll(/https?:\/\/[^\s"'<>)]+/g)].map((m) => m[0]);
  assert.deepEqual([...new Set(urls)], ['http://www.w3.org/2000/svg']);
  assert.doesNotMatch(r.text, /<script[^>]+src=/);
  // The CSP names the inline script by its hash.
  const script = /<script>([\s\S]*?)<\/script>/.exec(r.text)![1]!;
  const hash = createHash('sha256').update(script, 'utf8').digest('base64');
  const csp = r.headers.get('content-security-policy') ?? '';
  assert.match(csp, /default-src 'none'/);
  assert.ok(csp.includes(`script-src 'sha256-${hash}'`), csp);
  assert.match(csp, /connect-src 'self'/);
  // The page holds no data: /v1/status still needs a token.
  assert.equal((await client(gw).get('/v1/status')).status, 401);
});
