// The live status page and the one document it (and `qpgate status`) reads.
//
//   GET /            (open)  the page: a static HTML shell with inline JS, no data in it
//   GET /v1/status   (read)  device, engine, counters, latencies, SLOs, feeds, sessions, QPs
//
// Why the page asks for a token instead of reading an open /status.json: the
// QP table carries QPNs and PSNs, which are what keeps a blind RoCE peer from
// injecting into an RC connection; if control.host is ever set off loopback
// they must not be open. The page keeps the pasted token in sessionStorage
// (gone with the tab), sends it as a bearer header (never in a URL), and the
// page itself is served with a CSP that allows only its own inline script
// (by hash) and requests to this origin: nothing is loaded from elsewhere.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import type { GatewayState } from '../../state.js';
import { deviceReport } from './device.js';
import { latencySummary } from '../../metrics/latency-registry.js';

/** The page lives next to the sources; dist/ has no copy of it (tsc copies no HTML). */
export function statusPagePath(): string {
  const candidates = [
    new URL('../status-page/index.html', import.meta.url), // if a build step copies it next to the JS
    new URL('../../../../../src/gateway/control/status-page/index.html', import.meta.url), // dist/src/gateway/control/routes → src/
  ].map((u) => fileURLToPath(u));
  const found = candidates.find((p) => existsSync(p));
  if (!found) throw new Error(`status page missing: looked in ${candidates.join(', ')}`);
  return found;
}

const Extension = Type.Object(
  { enabled: Type.Boolean(), summary: Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()]) },
  { additionalProperties: false, description: 'whether the service exists in this gateway, and its summary' },
);

export function statusReport(state: GatewayState) {
  const ext = (e: GatewayState['feeds']) => (e ? { enabled: true, summary: e.summary() } : { enabled: false, summary: null });
  return {
    version: state.version,
    now: new Date().toISOString(),
    uptimeSeconds: (Date.now() - state.startedAt.getTime()) / 1000,
    ready: state.ready,
    control: { tls: state.controlTls },
    device: deviceReport(state),
    latencies: state.latency.names().map((n) => latencySummary(state.latency.get(n)!)),
    slo: state.slo.report(),
    feeds: ext(state.feeds),
    sessions: ext(state.sessions),
    qps: state.qps.list(),
  };
}

export async function statusPageRoutes(app: FastifyInstance): Promise<void> {
  const html = readFileSync(statusPagePath(), 'utf8');
  const scripts = [...html.matchAll(/<script>([\s\S]*?)<\/script>/g)].map(
    (m) => `'sha256-${createHash('sha256').update(m[1]!, 'utf8').digest('base64')}'`,
  );
  const csp = [
    "default-src 'none'",
    `script-src ${scripts.join(' ')}`,
    "style-src 'unsafe-inline'",
    "connect-src 'self'",
    "img-src 'self' data:",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
  const page = async (_request: unknown, reply: import('fastify').FastifyReply) =>
    reply
      .type('text/html; charset=utf-8')
      .header('content-security-policy', csp)
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
      .header('cache-control', 'no-store')
      .send(html);
  // The HTML shell is not part of the API document.
  app.get('/', { schema: { hide: true } }, page);
  app.get('/status', { schema: { hide: true } }, page);
}

export async function statusRoutes(app: FastifyInstance, opts: { state: GatewayState }): Promise<void> {
  app.get(
    '/status',
    {
      schema: {
        tags: ['status'],
        summary: 'one document for the status page and `qpgate status`',
        response: {
          200: Type.Object(
            {
              version: Type.String(),
              now: Type.String({ format: 'date-time' }),
              uptimeSeconds: Type.Number(),
              ready: Type.Boolean(),
              control: Type.Object(
                { tls: Type.Object({ enabled: Type.Boolean() }, { additionalProperties: true, description: 'https: enabled, certFile, subject, issuer, validFrom, validTo, fingerprint256, clientCertificates' }) },
                { additionalProperties: true, description: 'the control plane itself' },
              ),
              device: Type.Object({}, { additionalProperties: true, description: 'as GET /v1/device' }),
              latencies: Type.Array(Type.Object({}, { additionalProperties: true }), { description: 'each latency histogram: count, percentiles, buckets' }),
              slo: Type.Object({}, { additionalProperties: true, description: 'as GET /v1/slo' }),
              feeds: Extension,
              sessions: Extension,
              qps: Type.Array(Type.Object({}, { additionalProperties: true }), { description: 'as GET /v1/qps' }),
            },
            { additionalProperties: true },
          ),
        },
      },
    },
    async () => statusReport(opts.state),
  );
}
