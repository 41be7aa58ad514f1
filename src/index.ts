// The qpgate package's public API: the market-data client library (subscribe
// to a feed), the publisher side, and the frame and message codecs.
export * from './feed/subscriber.js';
export * from './feed/publisher.js';
export * from './feed/frame.js';
export * from './feed/messages.js';
export * from './feed/config.js';
export { FeedService, type FeedServiceStats } from './feed/service.js';
export { SyntheticSource, type SyntheticOptions, type SyntheticStats } from './feed/sources/synthetic.js';
export { openFeedDevice, type FeedDevice } from './feed/native.js';
export { summarize as summarizeLatency, type LatencySummary } from './feed/latency.js';
export { Engine, type EngineOptions } from './native/engine.js';
