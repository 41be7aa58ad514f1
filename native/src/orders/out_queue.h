// A session's messages waiting to be posted: each is held until the journal
// is durable up to `durable` (nothing is acknowledged that a restart could
// forget), then copied into a send slot. A ring of fixed entries that grows
// by doubling when a sweep produces more than ever before, so after warm-up
// nothing allocates.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "orders/codec.h"

namespace qpgate::orders {

struct PendingMessage {
  std::uint64_t app_seq = 0;   // 0 = not sequenced (Welcome, SEQUENCE_AHEAD)
  std::uint64_t durable = 0;   // journal position it waits for
  std::uint64_t recv_ns = 0;   // receive completion seen (the answer to it: ack latency); 0 = none
  std::uint16_t length = 0;
  std::uint8_t bytes[kMaxEncodedBytes];

  std::span<const std::uint8_t> view() const noexcept { return {bytes, length}; }
};

class OutQueue {
 public:
  explicit OutQueue(std::size_t capacity = 64) : ring_(capacity < 2 ? 2 : capacity) {}

  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  PendingMessage& front() noexcept { return ring_[head_]; }
  const PendingMessage& front() const noexcept { return ring_[head_]; }
  void pop() noexcept {
    head_ = (head_ + 1) % ring_.size();
    --size_;
  }

  void push(std::uint64_t app_seq, std::uint64_t durable, std::uint64_t recv_ns, std::span<const std::uint8_t> bytes) {
    if (bytes.size() > kMaxEncodedBytes) return;  // encode() never makes one
    if (size_ == ring_.size()) grow();
    PendingMessage& m = ring_[(head_ + size_) % ring_.size()];
    m.app_seq = app_seq;
    m.durable = durable;
    m.recv_ns = recv_ns;
    m.length = static_cast<std::uint16_t>(bytes.size());
    std::memcpy(m.bytes, bytes.data(), bytes.size());
    ++size_;
  }

  // Drops the sequenced messages (a second Hello resends them all anyway, after its Welcome).
  void drop_sequenced() noexcept {
    std::size_t kept = 0;
    for (std::size_t i = 0; i < size_; ++i) {
      PendingMessage& m = ring_[(head_ + i) % ring_.size()];
      if (m.app_seq != 0) continue;
      if (kept != i) ring_[(head_ + kept) % ring_.size()] = m;
      ++kept;
    }
    size_ = kept;
  }

  void clear() noexcept { head_ = size_ = 0; }

 private:
  void grow() {
    std::vector<PendingMessage> bigger(ring_.size() * 2);
    for (std::size_t i = 0; i < size_; ++i) bigger[i] = ring_[(head_ + i) % ring_.size()];
    ring_.swap(bigger);
    head_ = 0;
  }

  std::vector<PendingMessage> ring_;
  std::size_t head_ = 0;
  std::size_t size_ = 0;
};

}  // namespace qpgate::orders
