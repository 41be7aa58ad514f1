// Trades and book changes of the order handler, as qpgate.marketdata.v1
// messages for the feed (docs/protocol.md Part 2): each a 12-byte message
// header + a protobuf body (protozero), on the channel configured for its
// instrument.
//
// The handler reports price levels by price (LevelChange); the feed
// addresses the best `depth` levels by index (BookLevelUpdate.level, 0 =
// best), one update per index whose content changed. So after each input the
// touched sides are re-read from the book (OrderBook::top) and compared with
// what was last published: ADD (index became occupied), MODIFY (changed),
// DELETE (now empty).
//
// Like every answer, the events wait until the journal is durable up to the
// input that made them; then publish_ready() hands them to the sink (a feed
// publisher, through FeedPublishers). A sink that says "retry" keeps the rest for the
// next duty cycle; events that cannot be published (no publisher, unknown
// channel, queue over its limit) are counted, never block the ack path.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/counters.h"
#include "orders/order_counters.def"
#include "orders/order_book.h"
#include "orders/order_handler.h"
#include "orders/out_buffer.h"

namespace qpgate::orders {

struct InstrumentFeed {
  std::uint32_t instrument_id = 0;
  std::uint16_t channel = 0;
  std::uint8_t depth = 10;  // levels per side published
};

// What a sink answers for one message.
enum class PublishOutcome : std::uint8_t { kPublished, kRetry, kFailed };
using MarketDataSink =
    std::function<PublishOutcome(std::uint16_t channel, std::span<const std::uint8_t> message, std::uint64_t enqueue_ns)>;

// The feed publishers of the engine an order service runs on, by id: how an
// order agent reaches the feed without knowing it (the gateway's engine
// builder gives it one over its feed agent: gateway/engine_agents.cc).
// Engine thread.
class FeedPublishers {
 public:
  virtual ~FeedPublishers() = default;
  virtual bool has_publisher(std::uint32_t publisher_id) const = 0;
  // kFailed when there is no such publisher (any more).
  virtual PublishOutcome publish(std::uint32_t publisher_id, std::uint16_t channel, std::span<const std::uint8_t> message,
                                 std::uint64_t enqueue_ns) = 0;
};

// The list QPGATE_ORDER_MARKET_DATA_COUNTERS (order_counters.def).
struct MarketDataCounters {
  QPGATE_ORDER_MARKET_DATA_COUNTERS(QPGATE_COUNTER_MEMBER)

  template <class Fn>
  void for_each(Fn&& fn) const {
    QPGATE_ORDER_MARKET_DATA_COUNTERS(QPGATE_COUNTER_VISIT)
  }
};

class MarketData {
 public:
  static constexpr std::size_t kMaxQueued = 1 << 16;  // messages waiting for the journal or the sink

  explicit MarketData(std::span<const InstrumentFeed> instruments);

  // After one input: encodes its trades and the changed levels of the handler's books.
  // `durable`: the journal position the events wait for.
  void absorb(const OutBuffer& out, std::uint64_t durable, std::uint64_t now_ns, std::uint64_t realtime_ns,
              const OrderHandler& handler);
  // Publishes what is durable; returns the number published.
  std::size_t publish_ready(std::uint64_t durable_position, const MarketDataSink* sink);

  const MarketDataCounters& counters() const noexcept { return counters_; }
  std::size_t queued() const noexcept { return queue_.size() - head_; }

 private:
  struct Instrument {
    InstrumentFeed feed;
    std::vector<LevelView> published[2];  // [bid, ask], `depth` entries; quantity 0 = empty
    std::vector<LevelView> scratch;
    bool touched[2] = {false, false};
  };
  struct Queued {
    std::uint16_t channel;
    std::uint16_t length;
    std::uint32_t offset;  // into bytes_
    std::uint64_t durable;
    std::uint64_t enqueue_ns;
  };

  void add_trade(const Instrument& ins, const TradeEvent& t, std::uint64_t durable, std::uint64_t now_ns,
                 std::uint64_t realtime_ns);
  void diff_side(Instrument& ins, int side, const OrderBook& book, std::uint64_t durable, std::uint64_t now_ns,
                 std::uint64_t realtime_ns);
  void enqueue(std::uint16_t channel, std::span<const std::uint8_t> message, std::uint64_t durable, std::uint64_t now_ns);

  std::unordered_map<std::uint32_t, Instrument> instruments_;
  std::vector<Queued> queue_;
  std::size_t head_ = 0;
  std::vector<std::uint8_t> bytes_;
  MarketDataCounters counters_;
};

}  // namespace qpgate::orders
