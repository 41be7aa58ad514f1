// The gateway's feed as a control-plane extension: starts the FeedService on
// the gateway's engine and device (the embedded default publishes the
// synthetic source on 239.77.0.1/.2), exports its publish latency as
// `tick_publish` (the SLOs on it start being evaluated), serves /v1/feeds
// and takes part in shutdown (END_OF_SESSION sent, groups left).
import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import { FeedService } from '../feed/service.js';
import { RecoverySessionProvider } from '../feed/recovery-provider.js';
import type { FeedDevice } from '../feed/native.js';
import type { Engine } from '../native/engine.js';
import { LatencyCounts } from '../native/latency-counts.js';
import type { ControlExtension, GatewayState } from './state.js';

export function startFeeds(state: GatewayState): ControlExtension | undefined {
  const { config, device } = state;
  if (!config.feeds.enabled || device === undefined) return undefined;
  const service = new FeedService(state.engine as Engine, device as FeedDevice, config.feeds);
  service.start();
  state.feedService = service;
  const log = state.logger.child({ component: 'feeds' });
  log.info(
    {
      channels: service.config.channels.map((c) => ({ id: c.id, groupA: c.groupA, groupB: c.groupB ?? null })),
      source: service.config.source,
      synthetic: service.config.source === 'synthetic' && service.config.synthetic.enabled ? service.config.synthetic.ratePerSec : false,
      replay: service.config.source === 'replay' ? service.config.replay : false,
    },
    'feed publishing',
  );
  state.latency.registerLatency('tick_publish', 'Tick publish latency: enqueued by JS to posted on the wire by the engine.', () => {
    const counts = service.publisher?.latencyCounts();
    return counts ? LatencyCounts.fromDense(counts) : LatencyCounts.EMPTY;
  });

  // Recovery sessions (POST /v1/sessions role 'recovery') are served by this feed's publisher.
  const recovery = new RecoverySessionProvider(
    new Map([['default', { publisher: () => service.publisher, channels: service.config.channels.map((c) => c.id) }]]),
  );
  state.sessionProviders.push(recovery);

  const channelView = (id: number) => {
    const cfg = service.config.channels.find((c) => c.id === id);
    if (!cfg) return undefined;
    const stats = service.stats().publisher?.channels.find((c) => c.id === id);
    return { ...cfg, stats: stats ?? null };
  };

  return {
    async routes(app: FastifyInstance) {
      app.get('/', async () => ({
        running: service.running,
        session: service.stats().publisher?.session ?? null,
        channels: service.config.channels.map((c) => channelView(c.id)),
        synthetic: service.stats().synthetic ?? null,
        replay: service.stats().replay ?? null,
        publishLatency: service.stats().publisher?.publishLatency ?? null,
      }));
      app.get(
        '/:id',
        // Path parameters arrive as strings and the control plane does not coerce types.
        { schema: { params: Type.Object({ id: Type.String({ pattern: '^[0-9]{1,5}$', description: 'a channel id' }) }) } },
        async (request, reply) => {
          const id = Number((request.params as { id: string }).id);
          const view = channelView(id);
          if (!view) return reply.code(404).send({ error: 'not_found', message: `no feed channel ${id}` });
          return view;
        },
      );
    },
    summary: () => {
      const s = service.stats();
      return {
        running: s.running,
        session: s.publisher?.session ?? null,
        channels: s.publisher?.channels ?? [],
        publishLatency: s.publisher?.publishLatency ?? null,
      };
    },
    stopAccepting: () => service.stop(),
    close: async () => service.stop(),
  };
}
