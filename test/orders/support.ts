// Gateways with order entry for the tests: in this process (startGateway) or
// as a child process (`qpgate serve`, which a test can SIGKILL), on their own
// loopback address and state dir, with tokens that carry session entitlements.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/gateway/config/load.js';
import { createLogger } from '../../src/gateway/log.js';
import { startGateway, type Gateway } from '../../src/gateway/service.js';
import { freeLoopbackAddress } from '../support/loopback.js';

export const TOKENS = {
  ops: 'ops-token-0123456789abcdef',
  viewer: 'viewer-token-0123456789abcdef',
  desk: 'desk-token-0123456789abcdef',
  desk2: 'desk2-token-0123456789abcdef',
  risk: 'risk-token-0123456789abcdef',
} as const;

export const TOKENS_YAML = `control:
  tokens:
    - {name: ops, scope: admin, token: ${TOKENS.ops}}
    - {name: viewer, scope: read, token: ${TOKENS.viewer}}
    - {name: desk, scope: read, token: ${TOKENS.desk}, roles: [trading], accounts: ["1", "2", "3", "4", "5", "6", "7", "8"]}
    - {name: desk2, scope: read, token: ${TOKENS.desk2}, roles: [trading], accounts: ["1"]}
    - {name: risk, scope: read, token: ${TOKENS.risk}, roles: [risk], accounts: ["1"]}
`;

/** An orders section for tests: instruments 1..4 (band 1..20000), accounts 1..8, no throttle, no collar. */
export function ordersYaml(options: { selfMatch?: string; fsync?: string; throttle?: number; creditLimit?: string } = {}): string {
  const ins = [1, 2, 3, 4]
    .map((id) => `    - {id: ${id}, maxPrice: 20000, selfMatch: ${options.selfMatch ?? 'cancel-oldest'}, collar: {mode: none}}`)
    .join('\n');
  const accounts = [1, 2, 3, 4, 5, 6, 7, 8].map((a) => `    - {account: ${a}, creditLimit: "${options.creditLimit ?? '1000000000000000'}"}`).join('\n');
  return `orders:
  enabled: true
  journal: {fsync: ${options.fsync ?? 'none'}}
  orderCapacity: 262144
  instruments:
${ins}
  accounts:
${accounts}
  sessions:
    throttle: {ordersPerSecond: ${options.throttle ?? 0}, burst: 1000}
`;
}

export function writeConfig(yaml: string, dir = mkdtempSync(join(tmpdir(), 'qpgate-orders-'))): { dir: string; file: string } {
  const file = join(dir, 'config.yaml');
  writeFileSync(file, yaml);
  return { dir, file };
}

/** An in-process gateway with order entry (no feed unless the YAML has one). */
export async function startOrdersGateway(yaml = ordersYaml(), stateDir?: string): Promise<Gateway> {
  const { dir, file } = writeConfig(`${/^feeds:/m.test(yaml) ? '' : 'feeds:\n  enabled: false\n'}${TOKENS_YAML}${yaml}`, stateDir);
  const config = loadConfig({
    env: {},
    file,
    overrides: ['control.port=0', `state.dir=${stateDir ?? dir}`, `backend.address=${freeLoopbackAddress()}`],
  });
  return startGateway(config, createLogger('silent'), { handleSignals: false });
}

export async function call(url: string, method: string, path: string, token?: string, body?: unknown) {
  const headers: Record<string, string> = {};
  if (token) headers['authorization'] = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${url}${path}`, { method, headers, ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}) });
  const text = await res.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, json };
}

/** A seedable PRNG (Numerical Recipes' LCG, top bits), so a failing stream can be replayed. */
export function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 4294967296;
  };
}
