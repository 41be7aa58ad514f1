// The gateway's feeds as a control-plane extension: a FeedRegistry on the
// gateway's engine and device, started with the embedded default feed
// ("default", from the `feeds` config section, when feeds.enabled) and
// growing by POST /v1/feeds. Exports the publish latency of every feed as
// `tick_publish` (the SLOs on it start being evaluated), serves /v1/feeds,
// exports per-feed metrics and takes part in shutdown (END_OF_SESSION sent,
// groups left).
import { resolve } from 'node:path';

import type { Logger } from 'pino';

import type { FeedDevice } from '../feed/native.js';
import { RecoverySessionProvider } from '../feed/recovery-provider.js';
import { recoveryMetrics } from '../feed/recovery-metrics.js';
import { LatencyCounts } from '../native/latency-counts.js';
import { budgetsOf } from '../feed/memory.js';
import { DEFAULT_FEED, FeedRegistry } from './feed-registry.js';
import { feedRoutes, feedsSummary } from './control/routes/feeds.js';
import { exportFeedMetrics } from './metrics/feed-metrics.js';
import type { ControlExtension, GatewayState } from './state.js';

export async function startFeeds(state: GatewayState): Promise<(ControlExtension & { readonly registry: FeedRegistry }) | undefined> {
  const { config, device } = state;
  if (device === undefined) return undefined;
  // tick_publish exists from the first feed on (a gateway without feeds has no such latency):
  // deleted feeds' counts stay in it.
  // Recovery sessions (POST /v1/sessions role 'recovery') are served by the
  // publisher of the feed a request names, whichever feeds exist then; the
  // role is offered from the first feed on, as tick_publish is.
  // With backend.alternateDevice, each feed's line B and any recovery session
  // a subscriber fails over with are on it (docs/protocol.md §1.11).
  const alternateDevice = state.alternateDevice as FeedDevice | undefined;
  const recovery = new RecoverySessionProvider(
    {
      get: (name: string) => {
        const entry = registry.get(name);
        return entry && { publisher: () => entry.service.publisher, channels: entry.service.config.channels.map((c) => c.id) };
      },
    },
    { alternateDeviceGid: state.alternateDevice?.gid ?? null },
  );
  state.metricSources.push(recoveryMetrics(recovery));
  let latencyRegistered = false;
  const onCreated = (): void => {
    if (latencyRegistered) return;
    latencyRegistered = true;
    state.sessionProviders.push(recovery);
    state.latency.registerLatency('tick_publish', 'Tick publish latency: enqueued by JS to posted on the wire by the engine.', () =>
      LatencyCounts.fromDense(registry.publishLatencyCounts()),
    );
  };
  const replayDir = resolve(config.state.dir, config.feeds.replay.dir);
  const registry: FeedRegistry = new FeedRegistry(state.engine, device as FeedDevice, state.qps, {
    replayDir,
    budgets: budgetsOf(config.feeds),
    onCreated,
    ...(alternateDevice ? { alternateDevice } : {}),
  });
  const log = state.logger.child({ component: 'feeds' });
  if (config.feeds.enabled) {
    const { service } = await registry.create(DEFAULT_FEED, config.feeds, 'config', 'feeds');
    state.feedService = service;  // order entry publishes its trades and book levels on it
    log.info(
      {
        feed: DEFAULT_FEED,
        channels: service.config.channels.map((c) => ({ id: c.id, groupA: c.groupA, groupB: c.groupB ?? null })),
        source: service.config.source,
        synthetic: service.config.source === 'synthetic' && service.config.synthetic.enabled ? service.config.synthetic.ratePerSec : false,
        replay: service.config.source === 'replay' ? service.config.replay : false,
      },
      'feed publishing',
    );
    warnSingleLineChannels(service.config.channels, alternateDevice !== undefined, log);
  }



  return {
    registry,
    routes: async (app) => feedRoutes(app, { registry, log }),
    summary: () => feedsSummary(registry),
    exportMetrics: (metrics) => exportFeedMetrics(metrics, registry),
    stopAccepting: () => registry.stopAll(),
    close: async () => registry.stopAll(),
  };
}

/** With an alternate device, a channel without groupB has no line on the second link: say so once at start. */
function warnSingleLineChannels(channels: readonly { id: number; groupB?: string }[], twoLinks: boolean, log: Logger): void {
  if (!twoLinks) return;
  const single = channels.filter((c) => c.groupB === undefined).map((c) => c.id);
  if (single.length === 0) return;
  log.warn(
    { channels: single },
    'channels without groupB are sent on the primary device only: subscribers lose them while its link is down (give each a groupB: line B leaves from backend.alternateDevice)',
  );
}
