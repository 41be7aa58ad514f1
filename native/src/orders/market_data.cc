#include "orders/market_data.h"

#include <protozero/buffer_fixed.hpp>
#include <protozero/pbf_writer.hpp>

#include <algorithm>
#include <cstring>

#include "feed/frame.h"

namespace qpgate::orders {

namespace {

using Writer = protozero::basic_pbf_writer<protozero::fixed_size_buffer_adaptor>;

// Field numbers of qpgate.marketdata.v1 (proto/qpgate/marketdata/v1/marketdata.proto).
namespace trade {
constexpr protozero::pbf_tag_type kInstrumentId = 1, kPrice = 2, kSize = 3, kAggressorSide = 4, kTradeId = 5,
                                  kExchangeTime = 6;
}
namespace level {
constexpr protozero::pbf_tag_type kInstrumentId = 1, kAction = 2, kSide = 3, kLevel = 4, kPrice = 5, kSize = 6,
                                  kOrderCount = 7, kExchangeTime = 8;
}
constexpr std::int32_t kSideBid = 1;  // marketdata Side
constexpr std::int32_t kSideAsk = 2;
// Room for the header and any of the two bodies (each < 70 bytes).
constexpr std::size_t kMessageRoom = 128;

// Writes header + body into `out`; returns the total length.
template <typename Body>
std::size_t encode_message(std::uint8_t* out, feed::MessageType type, std::uint32_t instrument, std::uint16_t key,
                           std::uint8_t action, Body&& body) {
  char* body_at = reinterpret_cast<char*>(out + feed::kMessageHeaderBytes);
  protozero::fixed_size_buffer_adaptor buffer{body_at, kMessageRoom - feed::kMessageHeaderBytes};
  std::size_t body_bytes = 0;
  {
    Writer w{buffer};
    body(w);
  }
  body_bytes = buffer.size();
  const std::size_t total = feed::kMessageHeaderBytes + body_bytes;
  feed::MessageHeaderRef(out).set(static_cast<std::uint16_t>(total), static_cast<std::uint16_t>(type), instrument, key,
                                  action);
  return total;
}

bool same(const LevelView& a, const LevelView& b) {
  return a.price == b.price && a.quantity == b.quantity && a.order_count == b.order_count;
}

}  // namespace

MarketData::MarketData(std::span<const InstrumentFeed> instruments) {
  for (const InstrumentFeed& f : instruments) {
    Instrument& ins = instruments_[f.instrument_id];
    ins.feed = f;
    const std::size_t depth = std::max<std::size_t>(f.depth, 1);
    for (auto& side : ins.published) side.assign(depth, LevelView{0, 0, 0});
    ins.scratch.assign(depth, LevelView{0, 0, 0});
  }
  queue_.reserve(1024);
  bytes_.reserve(1024 * 64);
}

void MarketData::enqueue(std::uint16_t channel, std::span<const std::uint8_t> message, std::uint64_t durable,
                         std::uint64_t now_ns) {
  if (queued() >= kMaxQueued) {
    counters_.md_unpublished.add();
    return;
  }
  const auto offset = static_cast<std::uint32_t>(bytes_.size());
  bytes_.insert(bytes_.end(), message.begin(), message.end());
  queue_.push_back(Queued{channel, static_cast<std::uint16_t>(message.size()), offset, durable, now_ns});
}

void MarketData::add_trade(const Instrument& ins, const TradeEvent& t, std::uint64_t durable, std::uint64_t now_ns,
                           std::uint64_t realtime_ns) {
  std::uint8_t m[kMessageRoom];
  const std::size_t n = encode_message(m, feed::MessageType::kTrade, t.instrument_id, 0, 0, [&](Writer& w) {
    w.add_uint32(trade::kInstrumentId, t.instrument_id);
    if (t.price != 0) w.add_int64(trade::kPrice, t.price);
    if (t.quantity != 0) w.add_int64(trade::kSize, t.quantity);
    w.add_enum(trade::kAggressorSide, t.aggressor_side == Side::kBuy ? kSideBid : kSideAsk);
    if (t.trade_id != 0) w.add_uint64(trade::kTradeId, t.trade_id);
    if (realtime_ns != 0) w.add_uint64(trade::kExchangeTime, realtime_ns);
  });
  enqueue(ins.feed.channel, {m, n}, durable, now_ns);
}

void MarketData::diff_side(Instrument& ins, int side, const OrderBook& book, std::uint64_t durable,
                           std::uint64_t now_ns, std::uint64_t realtime_ns) {
  std::vector<LevelView>& before = ins.published[side];
  std::fill(ins.scratch.begin(), ins.scratch.end(), LevelView{0, 0, 0});
  book.top(side == 0 ? Side::kBuy : Side::kSell, ins.scratch);
  for (std::size_t i = 0; i < before.size(); ++i) {
    const LevelView& now = ins.scratch[i];
    const bool was = before[i].quantity != 0;
    const bool is = now.quantity != 0;
    if (!was && !is) continue;
    if (was && is && same(before[i], now)) continue;
    const feed::BookAction action = !was ? feed::BookAction::kAdd : !is ? feed::BookAction::kDelete : feed::BookAction::kModify;
    const LevelView shown = is ? now : LevelView{0, 0, 0};
    const std::uint32_t id = ins.feed.instrument_id;
    std::uint8_t m[kMessageRoom];
    const std::size_t n = encode_message(
        m, feed::MessageType::kBookLevelUpdate, id, feed::book_key(side == 1, static_cast<std::uint8_t>(i)),
        static_cast<std::uint8_t>(action), [&](Writer& w) {
          w.add_uint32(level::kInstrumentId, id);
          w.add_enum(level::kAction, static_cast<std::int32_t>(action));
          w.add_enum(level::kSide, side == 0 ? kSideBid : kSideAsk);
          if (i != 0) w.add_uint32(level::kLevel, static_cast<std::uint32_t>(i));
          if (shown.price != 0) w.add_int64(level::kPrice, shown.price);
          if (shown.quantity != 0) w.add_int64(level::kSize, shown.quantity);
          if (shown.order_count != 0) w.add_uint32(level::kOrderCount, shown.order_count);
          if (realtime_ns != 0) w.add_uint64(level::kExchangeTime, realtime_ns);
        });
    enqueue(ins.feed.channel, {m, n}, durable, now_ns);
    before[i] = shown;
  }
}

void MarketData::absorb(const OutBuffer& out, std::uint64_t durable, std::uint64_t now_ns, std::uint64_t realtime_ns,
                        const OrderHandler& handler) {
  for (const TradeEvent& t : out.trades()) {
    const auto it = instruments_.find(t.instrument_id);
    if (it == instruments_.end()) {
      counters_.md_unpublished.add();
      continue;
    }
    add_trade(it->second, t, durable, now_ns, realtime_ns);
  }
  if (out.level_changes().empty()) return;
  for (const LevelChange& c : out.level_changes()) {
    const auto it = instruments_.find(c.instrument_id);
    if (it == instruments_.end()) continue;
    it->second.touched[c.side == Side::kBuy ? 0 : 1] = true;
  }
  for (const LevelChange& c : out.level_changes()) {
    const auto it = instruments_.find(c.instrument_id);
    if (it == instruments_.end()) continue;
    Instrument& ins = it->second;
    const OrderBook* book = handler.book(c.instrument_id);
    for (int side = 0; side < 2; ++side) {
      if (!ins.touched[side]) continue;
      ins.touched[side] = false;
      if (book != nullptr) diff_side(ins, side, *book, durable, now_ns, realtime_ns);
    }
  }
}

std::size_t MarketData::publish_ready(std::uint64_t durable_position, const MarketDataSink* sink) {
  std::size_t published = 0;
  while (head_ < queue_.size()) {
    const Queued& q = queue_[head_];
    if (q.durable > durable_position) break;
    const PublishOutcome o = sink != nullptr && *sink
                                 ? (*sink)(q.channel, std::span<const std::uint8_t>(bytes_.data() + q.offset, q.length),
                                           q.enqueue_ns)
                                 : PublishOutcome::kFailed;
    if (o == PublishOutcome::kRetry) {
      counters_.md_retries.add();
      break;
    }
    if (o == PublishOutcome::kPublished) {
      counters_.md_published.add();
      ++published;
    } else {
      counters_.md_unpublished.add();
    }
    ++head_;
  }
  if (head_ == queue_.size()) {
    queue_.clear();
    bytes_.clear();
    head_ = 0;
  } else if (head_ >= 4096) {  // a sink that keeps saying retry: move the rest to the front
    const std::uint32_t base = queue_[head_].offset;
    bytes_.erase(bytes_.begin(), bytes_.begin() + base);
    queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(head_));
    for (Queued& q : queue_) q.offset -= base;
    head_ = 0;
  }
  return published;
}

}  // namespace qpgate::orders
