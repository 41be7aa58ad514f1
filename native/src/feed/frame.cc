#include "feed/frame.h"

#include <algorithm>
#include <cstring>

namespace qpgate::feed {

Message ParsedFrame::Iterator::operator*() const {
  const MessageHeaderView h(p_);
  Message m;
  m.header = h;
  m.seq = seq_;
  m.bytes = {p_, h.length()};
  m.body = {p_ + kMessageHeaderBytes, h.length() - kMessageHeaderBytes};
  return m;
}

wire::Result<ParsedFrame, FrameError> parse_frame(std::span<const std::uint8_t> bytes, ParseMode mode) {
  if (bytes.size() < kFrameHeaderBytes) return FrameError::kTruncatedHeader;
  const FrameHeaderView h(bytes.data());
  if (h.version() != kFrameVersion) return FrameError::kBadVersion;
  if ((h.flags() & ~flags::kKnown) != 0) return FrameError::kUnknownFlags;
  if (h.reserved() != 0) return FrameError::kReservedNotZero;
  const std::size_t length = h.frame_length();
  if (length < kFrameHeaderBytes || length > kMaxFrameBytes) return FrameError::kBadFrameLength;
  if (length > bytes.size()) return FrameError::kTruncatedFrame;
  if (mode == ParseMode::kExact && bytes.size() != length) return FrameError::kTrailingBytes;
  if (h.session() == 0) return FrameError::kZeroSession;
  if (h.first_seq() == 0) return FrameError::kZeroSequence;
  const std::uint16_t count = h.message_count();
  if (h.first_seq() > UINT64_MAX - count) return FrameError::kSequenceOverflow;

  const std::uint8_t control = h.flags() & flags::kControl;
  if (control != 0) {
    const bool one_flag = control == flags::kHeartbeat || control == flags::kEndOfSession;
    if (!one_flag || count != 0 || (h.flags() & flags::kSnapshot) != 0 || length != kFrameHeaderBytes) {
      return FrameError::kBadControlFrame;
    }
    return ParsedFrame(bytes.first(length));
  }
  if (count == 0) return FrameError::kEmptyFrame;

  std::size_t off = kFrameHeaderBytes;
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::size_t left = length - off;
    if (left == 0) return FrameError::kCountMismatch;  // fewer messages than message_count
    if (left < kMessageHeaderBytes) return FrameError::kTruncatedMessageHeader;
    const MessageHeaderView m(bytes.data() + off);
    const std::size_t mlen = m.length();
    if (mlen == 0) return FrameError::kZeroLengthMessage;
    if (mlen < kMessageHeaderBytes) return FrameError::kMessageTooShort;
    if (mlen > left) return FrameError::kMessageOverrun;
    if (m.type() == 0) return FrameError::kBadMessageType;
    if (m.reserved() != 0) return FrameError::kReservedNotZero;
    off += mlen;
  }
  if (off != length) return FrameError::kCountMismatch;  // bytes after the last counted message
  return ParsedFrame(bytes.first(length));
}

FramePacker::FramePacker(std::size_t frame_bytes)
    : buf_(std::clamp(frame_bytes, kMinFrameBytes, kMaxFrameBytes), 0) {}

void FramePacker::start(std::uint16_t channel, std::uint32_t session, std::uint8_t frame_flags) {
  std::memset(buf_.data(), 0, kFrameHeaderBytes);
  const FrameHeaderRef h(buf_.data());
  h.set_version(kFrameVersion);
  h.set_flags(frame_flags);
  h.set_channel(channel);
  h.set_session(session);
  used_ = kFrameHeaderBytes;
  count_ = 0;
}

std::size_t FramePacker::body_room() const {
  const std::size_t left = buf_.size() - used_;
  return left > kMessageHeaderBytes ? left - kMessageHeaderBytes : 0;
}

wire::Result<std::span<std::uint8_t>, AppendStatus> FramePacker::reserve(const MessageFields& m,
                                                                          std::size_t body_bytes) {
  if (m.type == MessageType::kUnspecified) return AppendStatus::kBadType;
  if (body_bytes > max_body_bytes()) return AppendStatus::kTooLarge;
  if (kMessageHeaderBytes + body_bytes > buf_.size() - used_) return AppendStatus::kFrameFull;
  std::uint8_t* p = buf_.data() + used_;
  MessageHeaderRef(p).set(static_cast<std::uint16_t>(kMessageHeaderBytes + body_bytes),
                          static_cast<std::uint16_t>(m.type), m.instrument_id, m.key,
                          static_cast<std::uint8_t>(m.action));
  used_ += kMessageHeaderBytes + body_bytes;
  ++count_;
  return std::span<std::uint8_t>(p + kMessageHeaderBytes, body_bytes);
}

AppendStatus FramePacker::append(const MessageFields& m, std::span<const std::uint8_t> body) {
  auto r = reserve(m, body.size());
  if (!r.ok()) return r.error();
  if (!body.empty()) std::memcpy(r.value().data(), body.data(), body.size());
  return AppendStatus::kOk;
}

std::span<const std::uint8_t> FramePacker::finish(std::uint64_t first_seq, std::uint64_t send_time_ns) {
  const FrameHeaderRef h(buf_.data());
  h.set_first_seq(first_seq);
  h.set_send_time_ns(send_time_ns);
  h.set_message_count(count_);
  h.set_frame_length(static_cast<std::uint16_t>(used_));
  return {buf_.data(), used_};
}

std::span<const std::uint8_t> encode_control_frame(std::span<std::uint8_t> out, std::uint8_t control_flag,
                                                   std::uint16_t channel, std::uint32_t session,
                                                   std::uint64_t next_seq, std::uint64_t send_time_ns) {
  std::memset(out.data(), 0, kFrameHeaderBytes);
  const FrameHeaderRef h(out.data());
  h.set_version(kFrameVersion);
  h.set_flags(control_flag);
  h.set_channel(channel);
  h.set_session(session);
  h.set_first_seq(next_seq);
  h.set_send_time_ns(send_time_ns);
  h.set_message_count(0);
  h.set_frame_length(static_cast<std::uint16_t>(kFrameHeaderBytes));
  return out.first(kFrameHeaderBytes);
}

}  // namespace qpgate::feed
