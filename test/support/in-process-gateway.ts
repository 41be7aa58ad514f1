// Starts the gateway in this process (startGateway) on a free port, its own
// loopback address and state dir, with a read and an admin token, and
// optionally a config file's worth of overrides (YAML text).
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/gateway/config/load.js';
import { createLogger } from '../../src/gateway/log.js';
import { startGateway, type Gateway, type StartOptions } from '../../src/gateway/service.js';
import { freeLoopbackAddress } from './loopback.js';

export const READ_TOKEN = 'read-token-0123456789';
export const ADMIN_TOKEN = 'admin-token-0123456789';

export async function startTestGateway(yaml = '', options: StartOptions = {}): Promise<Gateway> {
  const dir = mkdtempSync(join(tmpdir(), 'qpgate-cp-'));
  const file = join(dir, 'config.yaml');
  // The control-plane tests look at the gateway without its feed (no feed QPs,
  // no tick_publish source) unless the YAML says otherwise; test/gateway/feeds.test.ts
  // runs it with the feed.
  // Likewise without order entry (no journal, no order_ack source) unless the YAML has an orders: section.
  const withFeeds = /^feeds:/m.test(yaml) ? yaml : `feeds:\n  enabled: false\n${yaml}`;
  writeFileSync(file, /^orders:/m.test(yaml) ? withFeeds : `orders:\n  enabled: false\n${withFeeds}`);
  const config = loadConfig({
    env: {},
    file,
    overrides: [
      'control.port=0',
      `state.dir=${dir}`,
      `backend.address=${freeLoopbackAddress()}`,
      `control.tokens=[{name: viewer, scope: read, token: ${READ_TOKEN}}, {name: ops, scope: admin, token: ${ADMIN_TOKEN}}]`,
    ],
  });
  return startGateway(config, createLogger('silent'), { handleSignals: false, ...options });
}

export function client(gw: Gateway) {
  const call = async (method: string, path: string, token?: string, body?: unknown) => {
    const headers: Record<string, string> = {};
    if (token) headers['authorization'] = `Bearer ${token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(`${gw.url}${path}`, { method, headers, ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}) });
    const text = await res.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: res.status, headers: res.headers, text, json: json as Record<string, unknown> & { message?: string; error?: string } };
  };
  return {
    get: (path: string, token?: string) => call('GET', path, token),
    post: (path: string, token?: string, body?: unknown) => call('POST', path, token, body),
    put: (path: string, token?: string, body?: unknown) => call('PUT', path, token, body),
    delete: (path: string, token?: string) => call('DELETE', path, token),
  };
}
