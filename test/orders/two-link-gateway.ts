// A gateway with order entry (and a feed, if asked) in the gateway namespace
// of two-links.ts, for the path migration tests and the failover bench: `qpgate serve` with
// backend.address on the primary link and backend.alternateAddress on the
// alternate one.
import { fileURLToPath } from 'node:url';
import { QPGATE_BIN } from '../support/paths.js';
import { startGatewayProcess, type GatewayProcess } from '../support/gateway-process.js';
import type { TwoLinks } from '../support/two-links.js';
import { ordersYaml, TOKENS, TOKENS_YAML, writeConfig } from './support.js';

/** The client half (test/support/failover-client.ts), compiled. */
export const FAILOVER_CLIENT = fileURLToPath(new URL('../support/failover-client.js', import.meta.url));
/** Its risk session counterpart (test/support/risk-failover-client.ts), compiled. */
export const RISK_FAILOVER_CLIENT = fileURLToPath(new URL('../support/risk-failover-client.js', import.meta.url));

/**
 * `qpgate serve` in the gateway's namespace with both addresses, its control
 * plane on every address of that namespace; `feedsYaml` a feeds section
 * (default: no feed) and `tokensYaml` more tokens after TOKENS_YAML's.
 */
export async function startTwoLinkGateway(
  links: TwoLinks,
  options: { feedsYaml?: string; tokensYaml?: string } = {},
): Promise<{ gw: GatewayProcess; port: number }> {
  const feeds = options.feedsYaml ?? 'feeds:\n  enabled: false\n';
  const { file } = writeConfig(`${feeds}${TOKENS_YAML}${options.tokensYaml ?? ''}${ordersYaml()}`);
  const gw = await startGatewayProcess(
    ['-c', file, '--set', `backend.address=${links.primary.gatewayAddress}`, '--set', `backend.alternateAddress=${links.alternate.gatewayAddress}`,
      '--set', 'control.host=0.0.0.0', '--set', 'control.allowPlaintextOnNetwork=true'],
    {},
    // Ready in seconds on a quiet host; at load 15 node's start alone can take tens.
    { command: 'ip', argv: ['netns', 'exec', links.gateway, process.execPath, QPGATE_BIN], readyTimeoutMs: 90_000 },
  );
  return { gw, port: Number(new URL(gw.url).port) };
}

/** GET /v1/sessions from inside the gateway's namespace. */
export function sessionsOf(links: TwoLinks, port: number): Array<Record<string, unknown>> {
  const out = links.runIn(links.gateway, ['curl', '-sf', '-H', `authorization: Bearer ${TOKENS.ops}`, `http://127.0.0.1:${port}/v1/sessions`]);
  return (JSON.parse(out) as { sessions: Array<Record<string, unknown>> }).sessions;
}

/** The session `which` picks from /v1/sessions once `ok` holds of it, or as it is after `ms`. */
export async function sessionWhen(
  links: TwoLinks,
  port: number,
  which: (s: Record<string, unknown>) => boolean,
  ok: (s: Record<string, unknown>) => boolean,
  ms = 15_000,
): Promise<Record<string, unknown> | undefined> {
  const deadline = Date.now() + ms;
  let s = sessionsOf(links, port).find(which);
  while ((s === undefined || !ok(s)) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
    s = sessionsOf(links, port).find(which);
  }
  return s;
}

/** One unlabelled sample of GET /metrics from inside the gateway's namespace. */
export function metricOf(links: TwoLinks, port: number, name: string): number | undefined {
  const out = links.runIn(links.gateway, ['curl', '-sf', '-H', `authorization: Bearer ${TOKENS.ops}`, `http://127.0.0.1:${port}/metrics`]);
  const line = out.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.split(' ')[1]);
}
