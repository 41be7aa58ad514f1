// The qpgate Node addon: per-environment state through Napi::Addon (no
// static globals, so it loads in worker threads too).
#include <napi.h>

#include "convert.h"
#include "engine_wrap.h"
#include "feed_wrap.h"
#include "orders_wrap.h"
#include "state_lock.h"
#include "verbs_wrap.h"

namespace qpgate::addon {

class QpgateAddon : public Napi::Addon<QpgateAddon> {
 public:
  QpgateAddon(Napi::Env env, Napi::Object exports) {
    DefineAddon(exports, {
                             InstanceValue("features", features_to_js(env), napi_enumerable),
                             InstanceValue("ringLayout", ring_layout_to_js(env), napi_enumerable),
                             InstanceValue("Engine", EngineWrap::Define(env), napi_enumerable),
                         });
    init_verbs(env, exports, &verbs_);  // exports.verbs: openDevice and the verbs classes
    feed_.verbs = &verbs_;
    init_feed(env, exports, &feed_);  // exports.feed: createPublisher, createSubscriber
    orders_.verbs = &verbs_;
    init_orders(env, exports, &orders_);  // exports.orders: createService
    init_state_lock(env, exports);        // exports.lockStateDir
    exports.Set("__testing_engine", testing_engine_exports(env));  // test-only door
  }

 private:
  VerbsClasses verbs_;
  FeedClasses feed_;
  OrdersClasses orders_;
};

}  // namespace qpgate::addon

// The macro pastes its argument into a name, so it needs an unqualified one.
using QpgateAddon = qpgate::addon::QpgateAddon;
NODE_API_ADDON(QpgateAddon)
