// GET /openapi.json and the docs UI at /docs (issue 12 item 5): the document
// lists every /v1 route the control plane registered (a route added without a
// schema fails here), each with the bearer security requirement, its scope
// and its error responses; it is a valid OpenAPI 3 document; the UI is served
// from the package's own files. And the one error shape, {error, message}, on
// the paths that are not a route's own: 413, 415, unknown routes.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import SwaggerParser from '@apidevtools/swagger-parser';
import type { Gateway } from '../../src/gateway/service.js';
import { routesOf, BODY_LIMIT } from '../../src/gateway/control/app.js';
import { startTestGateway, client, READ_TOKEN, ADMIN_TOKEN } from '../support/in-process-gateway.js';

let gw: Gateway; // order entry on: /v1/sessions is served
let bare: Gateway; // the control-plane tests' gateway: no order entry, so no /v1/sessions
let api: ReturnType<typeof client>;
const warnings: Error[] = [];
const onWarning = (w: Error) => warnings.push(w);

before(async () => {
  process.on('warning', onWarning);
  gw = await startTestGateway('orders:\n  enabled: true\n');
  bare = await startTestGateway();
  api = client(gw);
});
after(async () => {
  process.off('warning', onWarning);
  await gw?.close('test done');
  await bare?.close('test done');
});

type Doc = {
  openapi: string;
  info: { description: string };
  paths: Record<string, Record<string, any>>;
  components: { securitySchemes: Record<string, any>; schemas: Record<string, any> };
};

const fetchDoc = async (g: Gateway): Promise<Doc> => {
  const r = await client(g).get('/openapi.json');
  assert.equal(r.status, 200, r.text);
  assert.match(r.headers.get('content-type') ?? '', /^application\/json/);
  return r.json as unknown as Doc;
};

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'options', 'head'];
/** (METHOD, /v1/path/{param}) of every operation in the document. */
const operations = (doc: Doc): string[] =>
  Object.entries(doc.paths).flatMap(([path, item]) => Object.keys(item).filter((m) => METHODS.includes(m)).map((m) => `${m.toUpperCase()} ${path}`));
/** (METHOD, /v1/path/{param}) of every route Fastify registered under /v1 (HEAD is Fastify's copy of each GET). */
const registeredV1 = (g: Gateway, hidden: boolean): string[] =>
  routesOf(g.app)
    .filter((r) => r.url.startsWith('/v1') && r.method !== 'HEAD' && r.hidden === hidden)
    .map((r) => `${r.method} ${r.url.replace(/:([A-Za-z0-9_]+)/g, '{$1}').replace(/(.)\/$/, '$1')}`);

test('/openapi.json is open and a valid OpenAPI 3 document', async () => {
  const doc = await fetchDoc(gw);
  assert.match(doc.openapi, /^3\./);
  // swagger-parser validates against the OpenAPI 3 JSON schema and resolves every $ref; it changes what it is given.
  await SwaggerParser.validate(structuredClone(doc) as never);
  const errorBody = doc.components.schemas['ErrorBody'];
  assert.deepEqual(Object.keys(errorBody.properties).sort(), ['error', 'message']);
  assert.deepEqual([...errorBody.required].sort(), ['error', 'message']);
  assert.equal(errorBody.additionalProperties, false);
  for (const code of ['bad_request', 'unauthorized', 'forbidden', 'not_found', 'not_enabled', 'conflict', 'payload_too_large', 'too_many_requests', 'internal', 'unavailable']) {
    assert.ok(errorBody.properties.error.enum.includes(code), code);
  }
  assert.deepEqual(doc.components.securitySchemes['bearerAuth'], {
    type: 'http',
    scheme: 'bearer',
    description: 'a control.tokens token (or the generated var/admin.token)',
  });
  // The UI's copy is the same document.
  const ui = await api.get('/docs/json');
  assert.equal(ui.status, 200);
  assert.deepEqual(ui.json, doc);
});

test('every /v1 route Fastify registered is in the document, and nothing else under /v1', async () => {
  const doc = await fetchDoc(gw);
  const documented = operations(doc).filter((o) => o.split(' ')[1]!.startsWith('/v1')).sort();
  const registered = [...new Set(registeredV1(gw, false))].sort();
  assert.ok(registered.length >= 18, `only ${registered.length} /v1 routes registered: ${registered.join(', ')}`);
  assert.deepEqual(documented, registered);
  // With order entry on nothing under /v1 is hidden.
  assert.deepEqual(registeredV1(gw, true), []);
  for (const expected of ['POST /v1/sessions', 'DELETE /v1/sessions/{id}', 'POST /v1/feeds', 'PUT /v1/log-level', 'GET /v1/qps/{qpn}']) {
    assert.ok(documented.includes(expected), expected);
  }
});

test('each /v1 operation: bearer security, its scope, a 2xx schema, its parameters and its error responses', async () => {
  const doc = await fetchDoc(gw);
  const entitlement = new Set(['POST /v1/sessions', 'DELETE /v1/sessions/{id}']);
  for (const op of operations(doc).filter((o) => o.includes(' /v1'))) {
    const [method, path] = op.split(' ') as [string, string];
    const o = doc.paths[path]![method.toLowerCase()];
    assert.deepEqual(o.security, [{ bearerAuth: [] }], op);
    const scope = entitlement.has(op) ? 'entitlement' : method === 'GET' ? 'read' : 'admin';
    assert.equal(o['x-qpgate-scope'], scope, op);
    assert.match(o.description, new RegExp(`Scope: ${scope}\\.`), op);
    assert.ok(Array.isArray(o.tags) && o.tags.length === 1, `${op}: a tag`);
    assert.ok(typeof o.summary === 'string' && o.summary.length > 0, `${op}: a summary`);

    const ok = Object.keys(o.responses).filter((s) => /^2\d\d$/.test(s));
    assert.equal(ok.length, 1, `${op}: one success response`);
    assert.ok(o.responses[ok[0]!].description && o.responses[ok[0]!].description !== 'Default Response', `${op}: the success response described`);
    assert.ok(o.responses[ok[0]!].content?.['application/json']?.schema, `${op}: a success response schema`);

    const errors = new Set(['401', '500']);
    if (scope !== 'read') errors.add('403');
    const params = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);
    if (params.length > 0) errors.add('400');
    if (method === 'POST' || method === 'PUT') ['400', '413', '415'].forEach((s) => errors.add(s));
    for (const status of errors) {
      const schema = o.responses[status]?.content?.['application/json']?.schema;
      assert.ok(schema, `${op}: a ${status} response`);
      assert.ok(o.responses[status].description.length > 0, `${op} ${status}: a description`);
      assert.deepEqual(schema, { $ref: '#/components/schemas/ErrorBody' }, `${op} ${status}: the error shape`);
    }
    for (const p of params) {
      assert.ok((o.parameters ?? []).some((x: any) => x.in === 'path' && x.name === p && x.required && x.schema), `${op}: path parameter ${p}`);
    }
    if (method === 'POST' || method === 'PUT') {
      if (op !== 'POST /v1/slo/evaluate') assert.ok(o.requestBody?.content?.['application/json']?.schema, `${op}: a request body schema`);
    }
  }
  // Route-specific errors.
  const sessions = doc.paths['/v1/sessions']!['post'];
  for (const s of ['404', '409', '429', '503']) assert.ok(sessions.responses[s], `POST /v1/sessions ${s}`);
  assert.deepEqual(Object.keys(sessions.requestBody.content['application/json'].schema.properties).sort(), [
    'accounts', 'ackHoldUs', 'alternateGid', 'channels', 'device', 'feed', 'gid', 'mtu', 'name', 'psn', 'qpn', 'role',
  ]);
  for (const s of ['409', '503']) assert.ok(doc.paths['/v1/feeds']!['post'].responses[s], `POST /v1/feeds ${s}`);
  assert.ok(doc.paths['/v1/qps/{qpn}']!['get'].responses['404']);
  // The open routes: health probes without security, /metrics with it (control.metricsAuth: token).
  assert.deepEqual(doc.paths['/healthz']!['get'].security, []);
  assert.ok(doc.paths['/healthz']!['get'].responses['503']);
  assert.deepEqual(doc.paths['/metrics']!['get'].security, [{ bearerAuth: [] }]);
  assert.ok(doc.paths['/metrics']!['get'].responses['200'].content['text/plain']);
  // Not in the document: the status page's HTML, the document itself and its UI.
  for (const p of ['/', '/status', '/openapi.json', '/docs', '/docs/json']) assert.equal(doc.paths[p], undefined, p);
});

test('a gateway without order entry leaves /v1/sessions out and says so', async () => {
  const doc = await fetchDoc(bare);
  assert.equal(doc.paths['/v1/sessions'], undefined);
  assert.match(doc.info.description, /does not serve \/v1\/sessions \(order sessions are not enabled in this gateway yet\): every \/v1\/sessions path answers 404 not_enabled/);
  // Its placeholders are registered, hidden, and nothing else is.
  assert.deepEqual([...new Set(registeredV1(bare, true))].sort(), ['DELETE /v1/sessions', 'DELETE /v1/sessions/*', 'GET /v1/sessions', 'GET /v1/sessions/*'].concat(
    registeredV1(bare, true).filter((r) => !/^(GET|DELETE) /.test(r)),
  ).sort());
  const documented = operations(doc).filter((o) => o.split(' ')[1]!.startsWith('/v1')).sort();
  assert.deepEqual(documented, [...new Set(registeredV1(bare, false))].sort());
  const r = await client(bare).get('/v1/sessions', READ_TOKEN);
  assert.equal(r.status, 404);
  assert.deepEqual(r.json, { error: 'not_enabled', message: 'order sessions are not enabled in this gateway yet' });
});

test('/docs is the Swagger UI, served from the package (nothing from another origin)', async () => {
  for (const path of ['/docs', '/docs/']) {
    const r = await api.get(path);
    assert.equal(r.status, 200, path);
    assert.match(r.headers.get('content-type') ?? '', /^text\/html/);
    assert.match(r.text, /swagger-ui/);
    assert.doesNotMatch(r.text, /(src|href)=["']?(https?:)?\/\//, 'no asset from another origin');
    const csp = r.headers.get('content-security-policy') ?? '';
    assert.match(csp, /default-src 'self'/);
    assert.doesNotMatch(csp, /https:|validator\.swagger\.io/);
  }
  const bundle = await api.get('/docs/static/swagger-ui-bundle.js');
  assert.equal(bundle.status, 200);
  assert.match(bundle.headers.get('content-type') ?? '', /javascript/);
  const init = await api.get('/docs/static/swagger-initializer.js');
  assert.equal(init.status, 200);
  assert.match(init.text, /validatorUrl: null/);
});

test('a body over the limit is 413 payload_too_large with the limit; 401 first without a token', async () => {
  const big = JSON.stringify({ level: 'info', pad: 'x'.repeat(BODY_LIMIT) });
  const expected = { error: 'payload_too_large', message: `request body too large: limit ${BODY_LIMIT} bytes` };
  for (const path of ['/v1/log-level', '/v1/no-such-route']) {
    const r = await api.put(path, ADMIN_TOKEN, big);
    assert.equal(r.status, 413, path);
    assert.deepEqual(r.json, expected, path);
    const anonymous = await api.put(path, undefined, big);
    assert.equal(anonymous.status, 401, path);
    assert.equal(anonymous.json.error, 'unauthorized', path);
  }
  const sessions = await api.post('/v1/sessions', ADMIN_TOKEN, big);
  assert.equal(sessions.status, 413);
  assert.deepEqual(sessions.json, expected);
  // /v1/log-level still takes a body under the limit.
  assert.equal((await api.put('/v1/log-level', ADMIN_TOKEN, { level: 'silent' })).status, 200);
});

test('unknown routes, a wrong media type and a bad body answer {error, message}', async () => {
  const unknown = await api.get('/no-such-page');
  assert.equal(unknown.status, 404);
  assert.deepEqual(unknown.json, { error: 'not_found', message: 'no route GET /no-such-page' });
  const v1 = await api.delete('/v1/nothing/here', ADMIN_TOKEN);
  assert.equal(v1.status, 404);
  assert.deepEqual(v1.json, { error: 'not_found', message: 'no route DELETE /v1/nothing/here' });
  assert.equal((await api.get('/v1/nothing/here')).status, 401);

  const res = await fetch(`${gw.url}/v1/log-level`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/xml' },
    body: '<level>debug</level>',
  });
  assert.equal(res.status, 415);
  const body = (await res.json()) as { error: string; message: string };
  assert.equal(body.error, 'unsupported_media_type');
  assert.equal(typeof body.message, 'string');

  const notJson = await api.put('/v1/log-level', ADMIN_TOKEN, '{"level":');
  assert.equal(notJson.status, 400);
  assert.deepEqual(Object.keys(notJson.json).sort(), ['error', 'message']);
  assert.equal(notJson.json.error, 'bad_request');
});

test('a route that throws is 500 internal, the details only in the log', async () => {
  const qps = gw.state.qps as unknown as { get: (qpn: number) => unknown };
  const get = qps.get;
  qps.get = () => {
    throw new Error('secret detail');
  };
  try {
    const r = await api.get('/v1/qps/7', READ_TOKEN);
    assert.equal(r.status, 500);
    assert.deepEqual(r.json, { error: 'internal', message: 'internal error; see the gateway log' });
  } finally {
    qps.get = get;
  }
  assert.equal((await api.get('/v1/qps/7', READ_TOKEN)).status, 404);
});

test('not_enabled (404) and unavailable (503) keep one meaning each', async () => {
  // Order entry is on, no feed exists: recovery sessions are not served by this gateway (404 not_enabled).
  const recovery = await api.post('/v1/sessions', ADMIN_TOKEN, { role: 'recovery', name: 'rec', qpn: 5, psn: 5, gid: '::ffff:127.9.9.9', mtu: 1024, feed: 'default', channels: [1] });
  assert.equal(recovery.status, 404);
  assert.deepEqual(recovery.json, { error: 'not_enabled', message: 'no recovery sessions: feed recovery is not enabled on this gateway' });
  // Without order entry the risk layout is not_enabled as well (the whole of /v1/sessions is).
  const layout = await client(bare).get('/v1/sessions/risk-layout', READ_TOKEN);
  assert.equal(layout.status, 404);
  assert.equal(layout.json.error, 'not_enabled');
});

test('starting the control plane raised no Fastify deprecation warning', () => {
  assert.deepEqual(
    warnings.filter((w) => w.name === 'DeprecationWarning' || w.name === 'FastifyWarning' || /FSTDEP|FSTWRN/.test(String((w as { code?: unknown }).code))).map(String),
    [],
  );
});
