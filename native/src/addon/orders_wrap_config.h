// JS options of addon.orders → C++ (orders/order_service.h), refused in
// args.h's one shape (a RangeError for a number out of range, else a
// TypeError). Runs on the JS thread, before anything reaches the engine.
#pragma once

#include <napi.h>

#include "orders/order_service.h"

namespace qpgate::addon {

// createService's config.
orders::ServiceConfig to_service_config(Napi::Env env, Napi::Value v);
// openSession's argument.
orders::SessionRequest to_session_request(Napi::Env env, Napi::Value v);

}  // namespace qpgate::addon
