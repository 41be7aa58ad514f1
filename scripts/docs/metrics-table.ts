// The README's metrics table, from the prom-client registry a live gateway's
// GET /metrics serves (metricsRegistryOf, src/gateway/control/app.ts): every
// qpgate_ metric with its type, labels and help. Node's standard process_*
// and nodejs_* metrics are one sentence of README prose.
import { metricsRegistryOf } from '../../src/gateway/control/app.js';
import { tableCell } from './regions.js';
import { withLiveGateway } from './live-gateway.js';

interface MetricInfo {
  name: string;
  help: string;
  type: string;
  labelNames?: readonly string[];
}

export async function metricsTable(): Promise<string> {
  const metrics = await withLiveGateway(async (gw) => {
    const registry = metricsRegistryOf(gw.app);
    if (registry === undefined) throw new Error('the gateway has no metrics registry');
    return registry.getMetricsAsArray() as unknown as MetricInfo[];
  });
  const rows = metrics
    .filter((m) => m.name.startsWith('qpgate_'))
    .map((m) => `| \`${m.name}\` | ${m.type} | ${(m.labelNames ?? []).map((l) => `\`${l}\``).join(', ')} | ${tableCell(m.help)} |`);
  return ['| metric | type | labels | meaning |', '|---|---|---|---|', ...rows].join('\n');
}
