// The feed from JS (src/feed/publisher.ts and subscriber.ts type it):
// exports.feed = { createPublisher(engine, device, config),
//                  createSubscriber(engine, device, config), recordLayout }.
//
// A publisher or subscriber lives in the engine's FeedAgent (feed/feed_agent.h)
// on the engine thread; the JS object is its handle: id (written into the
// records), stats() and latencyCounts() (read from counters the engine
// thread writes: relaxed atomics, no engine round trip), close() (on the
// engine thread through Engine::run_on_engine). The data path does not go
// through these objects: PUBLISH records go into the toEngine ring and
// FEED_* records come back in fromEngine (src/native/engine.ts routes them).
//
// The device is a Device (either backend) from verbs.openDevice on the same engine.
#pragma once

#include <napi.h>

#include "verbs_wrap.h"

namespace qpgate::addon {

struct FeedClasses {
  Napi::FunctionReference publisher;
  Napi::FunctionReference subscriber;
  VerbsClasses* verbs = nullptr;
};

// Also registers the FeedAgent as an engine extension: every Engine made
// after this call hosts one.
void init_feed(Napi::Env env, Napi::Object exports, FeedClasses* classes);

}  // namespace qpgate::addon
