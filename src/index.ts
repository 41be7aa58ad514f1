// The qpgate package's public API (package.json "exports" ".": this file and
// its types): the market-data client library (subscribe to a feed, discover a
// gateway's channels), the publisher side, the frame and message codecs, and
// the order entry and risk clients.
export * from './feed/subscriber.js';
export * from './feed/publisher.js';
export { MessageBatch, MAX_BATCH_BYTES } from './feed/message-batch.js';
export * from './feed/frame.js';
export * from './feed/messages.js';
export * from './feed/config.js';
export { FeedService, type FeedServiceStats } from './feed/service.js';
export { SyntheticSource, type SyntheticOptions, type SyntheticStats } from './feed/sources/synthetic.js';
export { openFeedDevice, type FeedDevice } from './feed/native.js';
// Channel discovery: a running gateway's channels and groups, for subscribe().
export { discoverChannels } from './feed/discovery.js';
export { ClientError, DEFAULT_URL, type ClientOptions } from './client/control-client.js';
import './gateway/state-dir-of.js'; // resolveToken reads state.dir from the gateway's config layers
export { summarize as summarizeLatency, type LatencySummary } from './feed/latency.js';
export { Engine, type EngineOptions } from './native/engine.js';
// Order entry: the trading and risk client libraries (RC sessions through the
// verbs API), the message codec, and the gateway-side service.
export { OrderClient, type OrderClientOptions, type OrderClientStats, type NewOrderAnswer, type CancelAnswer, type ReplaceAnswer } from './orders/client.js';
export { RiskClient, RdmaError, RISK_WORDS, type RiskClientOptions, type RiskWord, type RiskWords } from './orders/risk-client.js';
export { HandshakeError, type EndpointOptions, type SessionAnswer, type SessionRegion } from './orders/rc-endpoint.js';
export type { ControlTlsOptions } from './http/control-fetch.js';
export * from './orders/messages.js';
export { OrderService, type OrderServiceOptions } from './orders/service.js';
export { OrdersConfig } from './orders/config.js';
export * from './orders/handler.js';
export * from './orders/events.js';
