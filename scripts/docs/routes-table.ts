// The README's control-plane routes table, from the OpenAPI document a live
// gateway serves at /openapi.json (src/gateway/control/openapi.ts, made from
// the route schemas): each operation, who may call it (x-qpgate-scope, or
// none without a security requirement), its summary and description, and the
// statuses it answers. The routes the document hides on purpose (the status
// page, the document itself, the docs UI) are README prose.
import { tableCell } from './regions.js';
import { withLiveGateway } from './live-gateway.js';

interface Operation {
  summary?: string;
  description?: string;
  security?: unknown[];
  'x-qpgate-scope'?: string;
  responses: Record<string, unknown>;
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

export async function routesTable(): Promise<string> {
  const doc = await withLiveGateway(async (gw) => (await fetch(`${gw.url}/openapi.json`)).json()) as { paths: Record<string, Record<string, Operation>> };
  const rows = Object.entries(doc.paths).flatMap(([path, item]) =>
    METHODS.filter((m) => item[m] !== undefined).map((m) => row(m.toUpperCase(), path, item[m]!)),
  );
  return ['| route | auth | what | answers |', '|---|---|---|---|', ...rows].join('\n');
}

function row(method: string, path: string, op: Operation): string {
  const auth = op.security === undefined || op.security.length === 0 ? 'none' : (op['x-qpgate-scope'] ?? 'token');
  // The scope sentence documentV1Route appends is the auth column already.
  const description = (op.description ?? '').replace(/\s*Scope: \w+\..*$/s, '').replace(/^Open: no token needed\.\s*/, '').trim();
  const what = [op.summary, description].filter(Boolean).join('. ');
  const statuses = Object.keys(op.responses).sort().join(', ');
  return `| \`${method} ${path.replace(/\{(\w+)\}/g, ':$1')}\` | ${auth} | ${tableCell(what)} | ${statuses} |`;
}
