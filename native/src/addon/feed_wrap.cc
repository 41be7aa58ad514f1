#include "feed_wrap.h"

#include "feed/feed_records.h"
#include "feed_wrap_support.h"
#include "metrics/latency_histogram.h"

namespace qpgate::addon {
namespace {

Napi::Object record_layout(Napi::Env env) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("publishHeaderBytes", Napi::Number::New(env, feed::records::kPublishHeaderBytes));
  o.Set("frameRecordHeaderBytes", Napi::Number::New(env, feed::records::kFrameRecordHeaderBytes));
  o.Set("gapRecordBytes", Napi::Number::New(env, feed::records::kGapRecordBytes));
  o.Set("sessionRecordBytes", Napi::Number::New(env, feed::records::kSessionRecordBytes));
  o.Set("latencyCountsLength", Napi::Number::New(env, static_cast<double>(metrics::LatencyHistogram::kCountsLength)));
  return o;
}

}  // namespace

void init_feed(Napi::Env env, Napi::Object exports, FeedClasses* classes) {
  Napi::Function publisher = feed_wrap::define_publisher(env);
  Napi::Function subscriber = feed_wrap::define_subscriber(env);
  classes->publisher = Napi::Persistent(publisher);
  classes->subscriber = Napi::Persistent(subscriber);
  Napi::Object feed = Napi::Object::New(env);
  feed.Set("createPublisher", Napi::Function::New(env, feed_wrap::create_publisher, "createPublisher", classes));
  feed.Set("createSubscriber", Napi::Function::New(env, feed_wrap::create_subscriber, "createSubscriber", classes));
  feed.Set("recordLayout", record_layout(env));
  feed.Set("FeedPublisher", publisher);
  feed.Set("FeedSubscriber", subscriber);
  exports.Set("feed", feed);
}

}  // namespace qpgate::addon
