// /v1/feeds: the gateway's feeds (registered under /v1/feeds by the feed extension).
//
//   GET    /v1/feeds                      (read)  every feed with its per-channel stats
//   GET    /v1/feeds/:name                (read)  one feed
//   GET    /v1/feeds/:name/channels/:id   (read)  one channel of a feed
//   POST   /v1/feeds                      (admin) start a feed: { name, channels, instruments?, synthetic?, source?,
//                                                 replay?: {file, speed, loop}, sendSlots?, hopLimit? }; a replay
//                                                 file is read (asynchronously) from feeds.replay.dir only
//   DELETE /v1/feeds/:name                (admin) stop it: END_OF_SESSION sent, groups left, QP destroyed;
//                                                 answers the feed's final stats
//
// A created feed's body is a `feeds` config section with a name (the same
// schema and defaults as the embedded default's config), validated by TypeBox.
import type { FastifyInstance, FastifyReply } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';
import { looseObject } from '../openapi.js';
import { FeedChannelConfig, FeedsConfig } from '../../../feed/config.js';
import { FEED_NAME_PATTERN, FeedError, type FeedEntry, type FeedRegistry } from '../../feed-registry.js';
import type { Logger } from '../../log.js';
import { errorResponses, sendError } from '../errors.js';

const { instruments, synthetic, source, replay, sendSlots, hopLimit } = FeedsConfig.properties;

export const CreateFeedBody = Type.Object(
  {
    name: Type.String({ pattern: FEED_NAME_PATTERN, description: 'the feed name, unique in this gateway' }),
    channels: Type.Array(FeedChannelConfig, { minItems: 1, maxItems: 256 }),
    instruments: Type.Optional(instruments),
    synthetic: Type.Optional(synthetic),
    source: Type.Optional(source),
    // The directory is the gateway's (feeds.replay.dir): a request names a file in it, never another directory.
    replay: Type.Optional(Type.Omit(replay, ['dir'], { additionalProperties: false })),
    sendSlots: Type.Optional(sendSlots),
    hopLimit: Type.Optional(hopLimit),
  },
  { additionalProperties: false },
);
export type CreateFeedBody = Static<typeof CreateFeedBody>;

const NameParams = Type.Object({ name: Type.String({ pattern: FEED_NAME_PATTERN }) }, { additionalProperties: false });
const ChannelParams = Type.Object(
  // Path parameters arrive as strings and the control plane does not coerce types.
  { name: Type.String({ pattern: FEED_NAME_PATTERN }), id: Type.String({ pattern: '^[0-9]{1,5}$', description: 'a channel id' }) },
  { additionalProperties: false },
);

function sendFeedError(reply: FastifyReply, err: unknown): FastifyReply {
  if (!(err instanceof FeedError)) throw err;
  return sendError(reply, err.status, err.message);
}

const FeedViewSchema = Type.Object(
  {
    name: Type.String(),
    origin: Type.Union([Type.Literal('config'), Type.Literal('api')], { description: 'config: the `feeds` section (named default); api: POST /v1/feeds' }),
    createdAt: Type.String({ format: 'date-time' }),
    running: Type.Boolean(),
    session: Type.Union([Type.Integer(), Type.Null()], { description: 'the feed session id in every frame' }),
    reservedBytes: Type.Union([Type.Integer(), Type.Null()], { description: 'memory the channels and send slots reserved' }),
    channels: Type.Array(looseObject('a channel: its config (id, groupA, groupB, frameSize, heartbeatMs, ring, snapshotSlots) and stats')),
    publisher: Type.Union([looseObject('records, rejectedRecords, retries, postErrors, sendErrors, queued'), Type.Null()]),
    source: Type.String({ description: 'synthetic or replay' }),
    synthetic: looseObject('enabled, ratePerSec, stats'),
    replay: Type.Union([looseObject('file, speed, loop, stats'), Type.Null()]),
    instruments: Type.Object({ count: Type.Integer(), firstId: Type.Integer() }),
    publishLatency: Type.Union([looseObject('publish latency percentiles'), Type.Null()]),
    qp: Type.Union([looseObject('the UD QP in brief: qpn, type, state, sqPsn, qkey, sentPackets'), Type.Null()]),
  },
  { additionalProperties: true },
);
const FeedsList = Type.Object({ count: Type.Integer(), feeds: Type.Array(FeedViewSchema) }, { additionalProperties: false });

/** The publisher's UD QP in brief (the full row is in /v1/qps); null once it is gone. */
function qpBrief(e: FeedEntry) {
  try {
    const q = e.service.publisher?.qp();
    return q ? { qpn: q.qpNum, type: q.type, state: q.state, sqPsn: q.sqPsn, qkey: q.qkey, sentPackets: q.counters['sent_pkts'] ?? 0 } : null;
  } catch {
    return null;
  }
}

/** One feed as /v1/feeds shows it: config, per-channel counters, publisher counters, latency, QP. */
export function feedView(e: FeedEntry) {
  const s = e.service.stats();
  const p = s.publisher;
  const cfg = e.service.config;
  return {
    name: e.name,
    origin: e.origin,
    createdAt: e.createdAt.toISOString(),
    running: s.running,
    session: p?.session ?? null,
    reservedBytes: p?.reservedBytes ?? null,
    channels: cfg.channels.map((c) => ({ ...c, stats: p?.channels.find((x) => x.id === c.id) ?? null })),
    publisher: p
      ? { records: p.records, rejectedRecords: p.rejectedRecords, retries: p.retries, postErrors: p.postErrors, sendErrors: p.sendErrors, queued: p.queued }
      : null,
    source: cfg.source,
    synthetic: { enabled: cfg.source === 'synthetic' && cfg.synthetic.enabled, ratePerSec: cfg.synthetic.ratePerSec, stats: s.synthetic ?? null },
    replay: cfg.source === 'replay' ? { ...cfg.replay, stats: s.replay ?? null } : null,
    instruments: { count: cfg.instruments.count, firstId: cfg.instruments.firstId },
    publishLatency: p?.publishLatency ?? null,
    qp: qpBrief(e),
  };
}

export type FeedView = ReturnType<typeof feedView>;

export function feedsSummary(registry: FeedRegistry) {
  const feeds = registry.list().map(feedView);
  return { count: feeds.length, feeds };
}

export async function feedRoutes(app: FastifyInstance, opts: { registry: FeedRegistry; log: Logger }): Promise<void> {
  const { registry, log } = opts;
  const find = (name: string): FeedEntry => {
    const e = registry.get(name);
    if (!e) throw new FeedError(404, `no feed named "${name}"`);
    return e;
  };

  app.get('/', { schema: { tags: ['feeds'], summary: 'every feed with its channels and counters', description: '`default` is the configuration\'s feed; each with its channels, counters, source stats, publish latency and UD QP.', response: { 200: FeedsList } } }, async () =>
    feedsSummary(registry),
  );

  app.get<{ Params: Static<typeof NameParams> }>('/:name', { schema: { tags: ['feeds'], summary: 'one feed', params: NameParams, response: { 200: FeedViewSchema, ...errorResponses(404) } } }, async (request, reply) => {
    try {
      return feedView(find(request.params.name));
    } catch (err) {
      return sendFeedError(reply, err);
    }
  });

  app.get<{ Params: Static<typeof ChannelParams> }>('/:name/channels/:id', {
      schema: { tags: ['feeds'], summary: 'one channel of a feed', params: ChannelParams, response: { 200: looseObject('the channel: its config and stats'), ...errorResponses(404) } },
    }, async (request, reply) => {
    try {
      const view = feedView(find(request.params.name));
      const id = Number(request.params.id);
      const channel = view.channels.find((c) => c.id === id);
      if (!channel) throw new FeedError(404, `feed "${view.name}" has no channel ${id}`);
      return channel;
    } catch (err) {
      return sendFeedError(reply, err);
    }
  });

  app.post<{ Body: CreateFeedBody }>('/', {
      schema: {
        tags: ['feeds'],
        summary: 'start a named feed',
        description:
          'The body is a `feeds` config section plus `name`. 409 for a taken name or group, past 16 feeds, over feeds.memoryBudgetBytes or the host\'s memory; 400 over feeds.feedMemoryBudgetBytes; nothing is left allocated.',
        body: CreateFeedBody,
        response: { 201: FeedViewSchema, ...errorResponses(409, 503) },
      },
    }, async (request, reply) => {
    const { name, ...config } = request.body;
    try {
      const entry = await registry.create(name, config, 'api');
      const view = feedView(entry);
      log.info({ feed: name, session: view.session, qpn: view.qp?.qpn, channels: view.channels.map((c) => c.id) }, 'feed created');
      return reply.code(201).send(view);
    } catch (err) {
      return sendFeedError(reply, err);
    }
  });

  app.delete<{ Params: Static<typeof NameParams> }>('/:name',
    {
      schema: {
        tags: ['feeds'],
        summary: 'stop a feed: END_OF_SESSION sent, groups left, its memory freed',
        params: NameParams,
        response: { 200: Type.Composite([FeedViewSchema, Type.Object({ deleted: Type.Literal(true) })], { additionalProperties: true }), ...errorResponses(404) },
      },
    },
    async (request, reply) => {
    try {
      const view = feedView(find(request.params.name));
      registry.delete(request.params.name);
      log.info({ feed: view.name, session: view.session }, 'feed deleted');
      return { ...view, running: false, deleted: true };
    } catch (err) {
      return sendFeedError(reply, err);
    }
  });
}
