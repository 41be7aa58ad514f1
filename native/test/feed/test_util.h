// Helpers shared by the feed tests: building frames message by message.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "feed/frame.h"

namespace qpgate::feed::test {

inline std::vector<std::uint8_t> body_of(std::size_t n, std::uint8_t seed) {
  std::vector<std::uint8_t> b(n);
  for (std::size_t i = 0; i < n; ++i) b[i] = static_cast<std::uint8_t>(seed + i * 7);
  return b;
}

// A data frame of `count` quotes (bodies of `body_bytes`) starting at first_seq.
inline std::vector<std::uint8_t> data_frame(std::uint32_t session, std::uint64_t first_seq, std::uint16_t count,
                                            std::size_t body_bytes = 20, std::uint16_t channel = 7,
                                            std::size_t frame_bytes = kDefaultFrameBytes) {
  FramePacker p(frame_bytes);
  p.start(channel, session);
  for (std::uint16_t i = 0; i < count; ++i) {
    const auto body = body_of(body_bytes, static_cast<std::uint8_t>(first_seq + i));
    const auto st = p.append({MessageType::kQuote, 100u + i, 0, BookAction::kNone}, body);
    if (st != AppendStatus::kOk) return {};
  }
  const auto f = p.finish(first_seq, 1'700'000'000'000'000'000ULL + first_seq);
  return {f.begin(), f.end()};
}

inline std::vector<std::uint8_t> heartbeat(std::uint32_t session, std::uint64_t next_seq, std::uint16_t channel = 7) {
  std::vector<std::uint8_t> out(kFrameHeaderBytes);
  encode_control_frame(out, flags::kHeartbeat, channel, session, next_seq, 1);
  return out;
}

inline ParsedFrame parsed(const std::vector<std::uint8_t>& bytes) { return parse_frame(bytes).value(); }

}  // namespace qpgate::feed::test
