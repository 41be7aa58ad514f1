// Order entry from JS (src/orders types it; docs/protocol.md §3 is the
// contract): exports.orders = { createService(engine, device, config),
// riskLayout(), NativeOrderService }.
//
// A service lives in the engine's OrderAgent (orders/order_agent.h) on the
// engine thread; the JS object is its handle. Every method runs on the
// engine thread through Engine::run_on_engine (the control path: sessions
// opened and closed, stats read), and converts on the JS thread. The data
// path (SENDs, acks, fills, risk atomics) never comes near JS.
//
// The device is a Device (either backend) from verbs.openDevice on the same engine.
#pragma once

#include <napi.h>

#include "verbs_wrap.h"

namespace qpgate::addon {

struct OrdersClasses {
  Napi::FunctionReference service;
  VerbsClasses* verbs = nullptr;
};

// Also registers the OrderAgent as an engine extension: every Engine made
// after this call hosts one.
void init_orders(Napi::Env env, Napi::Object exports, OrdersClasses* classes);

}  // namespace qpgate::addon
