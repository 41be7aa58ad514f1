// Sequencing of a channel's messages (docs/protocol.md 2.4).
//
// Sequence numbers count messages, like MoldUDP64: a frame carries the
// sequence of its first message and a count; the next frame starts at
// first_seq + count. Each channel has its own sequence, starting at 1 in every
// session. A session id is drawn at random when the gateway starts (never 0,
// never the previous one), so subscribers see a restart as a session change.
#pragma once

#include <cstdint>

namespace qpgate::feed {

// A random non-zero session id from getrandom(2), different from `previous`.
std::uint32_t new_session_id(std::uint32_t previous = 0);

class ChannelSequence {
 public:
  ChannelSequence(std::uint16_t channel, std::uint32_t session, std::uint64_t next_seq = 1)
      : channel_(channel), session_(session), next_(next_seq) {}

  std::uint16_t channel() const { return channel_; }
  std::uint32_t session() const { return session_; }
  // The sequence the next message will get (what a heartbeat carries).
  std::uint64_t next() const { return next_; }
  // Claims `count` consecutive sequences for one frame and returns the first.
  std::uint64_t claim(std::uint16_t count) {
    const std::uint64_t first = next_;
    next_ += count;
    return first;
  }

 private:
  std::uint16_t channel_;
  std::uint32_t session_;
  std::uint64_t next_;
};

}  // namespace qpgate::feed
