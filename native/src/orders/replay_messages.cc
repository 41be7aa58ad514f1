// OrderHandler::replay_messages: the messages the journal's records made,
// rebuilt by a second, private handler (order_handler.h). Apart from
// order_handler.cc, which holds the live path.
#include "orders/order_handler.h"

#include <new>

namespace qpgate::orders {

bool OrderHandler::replay_messages(const HandlerConfig& config, std::uint64_t end,
                                   const std::function<bool(const OutBuffer&)>& visit, std::string& error) {
  // The key decides where an id is kept, never what is answered; a random
  // one, as open() takes, so that ids picked to collide cannot slow this replay.
  SipKey key;
  if (!dedupe_key_of(config, key, error)) return false;
  // Its books, pool and duplicate table are allocated here, on the caller's
  // thread (the rebuild worker's): running out of memory fails this rebuild, not the engine.
  try {
    OrderHandler h(config, key);
    return Journal::replay_written(
        config.journal.path, end,
        [&h, &visit](std::uint16_t type, std::span<const std::uint8_t> payload, std::uint64_t, std::string& why) {
          if (!h.replay(type, payload, why)) return false;
          if (visit(h.replay_out_)) return true;
          why = "stopped by its reader";
          return false;
        },
        error);
  } catch (const std::bad_alloc&) {
    error = "out of memory for the replay's handler";
    return false;
  }
}

}  // namespace qpgate::orders
