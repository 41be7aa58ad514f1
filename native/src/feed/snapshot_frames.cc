#include "feed/snapshot_frames.h"

#include <protozero/buffer_fixed.hpp>
#include <protozero/pbf_writer.hpp>

#include <array>

namespace qpgate::feed {
namespace {

// SnapshotBegin / SnapshotEnd bodies (qpgate.marketdata.v1).
std::size_t marker_body(std::span<std::uint8_t> out, std::uint16_t channel, std::uint32_t session, std::uint64_t last,
                        std::uint32_t count, bool begin) {
  protozero::fixed_size_buffer_adaptor buf{reinterpret_cast<char*>(out.data()), out.size()};
  protozero::basic_pbf_writer<protozero::fixed_size_buffer_adaptor> w{buf};
  if (channel != 0) w.add_uint32(1, channel);
  if (session != 0) w.add_uint32(2, session);
  if (last != 0) w.add_uint64(3, last);
  if (begin && count != 0) w.add_uint32(4, count);
  return buf.size();
}

class Builder {
 public:
  Builder(std::uint16_t channel, std::uint32_t session, std::uint64_t first_seq, std::size_t frame_bytes,
          SnapshotFrames& out)
      : channel_(channel), session_(session), first_seq_(first_seq), packer_(frame_bytes), out_(out) {
    packer_.start(channel_, session_, flags::kSnapshot);
  }
  void add(MessageType type, std::uint32_t instrument, std::uint16_t key, std::uint8_t action,
           std::span<const std::uint8_t> body) {
    MessageFields f;
    f.type = type;
    f.instrument_id = instrument;
    f.key = key;
    f.action = static_cast<BookAction>(action);
    if (packer_.append(f, body) == AppendStatus::kFrameFull) {
      flush();
      (void)packer_.append(f, body);
    }
  }
  void flush() {
    if (packer_.empty()) return;
    const auto frame = packer_.finish(first_seq_, 0);
    out_.bytes.insert(out_.bytes.end(), frame.begin(), frame.end());
    out_.ends.push_back(static_cast<std::uint32_t>(out_.bytes.size()));
    packer_.start(channel_, session_, flags::kSnapshot);
  }

 private:
  std::uint16_t channel_;
  std::uint32_t session_;
  std::uint64_t first_seq_;
  FramePacker packer_;
  SnapshotFrames& out_;
};

}  // namespace

void build_snapshot_frames(const SnapshotStore& store, std::uint16_t channel, std::uint32_t session,
                           std::size_t frame_bytes, SnapshotFrames& out) {
  out.bytes.clear();
  out.ends.clear();
  out.last_sequence = store.last_sequence();
  out.entries = 0;
  std::vector<std::uint8_t> slot(store.slot_bytes());
  // First pass counts (SnapshotBegin says how many entries follow).
  for (std::size_t i = 0; i < store.slots_used(); ++i) {
    if (store.read_slot(i, slot) == SlotCheck::kOk) ++out.entries;
  }
  Builder b(channel, session, out.last_sequence + 1, frame_bytes, out);
  std::array<std::uint8_t, 48> marker{};
  b.add(MessageType::kSnapshotBegin, 0, 0, 0,
        std::span(marker.data(), marker_body(marker, channel, session, out.last_sequence, out.entries, true)));
  // Definitions first: an entry's instrument is known before its state.
  for (const bool definitions : {true, false}) {
    for (std::size_t i = 0; i < store.slots_used(); ++i) {
      SlotContents c;
      if (store.read_slot(i, slot, &c) != SlotCheck::kOk) continue;
      const MessageHeaderView h = c.header();
      if ((static_cast<MessageType>(h.type()) == MessageType::kInstrumentDefinition) != definitions) continue;
      b.add(static_cast<MessageType>(h.type()), h.instrument_id(), h.key(), h.action(),
            c.message.subspan(kMessageHeaderBytes));
    }
  }
  b.add(MessageType::kSnapshotEnd, 0, 0, 0,
        std::span(marker.data(), marker_body(marker, channel, session, out.last_sequence, 0, false)));
  b.flush();
}

}  // namespace qpgate::feed
