// A channel's snapshot as feed frames (docs/protocol.md 2.9, over RC): frames
// flagged SNAPSHOT whose first_seq is last_sequence + 1, carrying
// SnapshotBegin, every held entry (instrument definitions first, each exactly
// as it was in its live frame), then SnapshotEnd. Built in one go on the
// engine thread that writes the store, so the frames are one consistent
// state as of last_sequence.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "feed/snapshot_store.h"

namespace qpgate::feed {

struct SnapshotFrames {
  std::vector<std::uint8_t> bytes;    // frames back to back
  std::vector<std::uint32_t> ends;    // end offset of each frame in `bytes`
  std::uint64_t last_sequence = 0;
  std::uint32_t entries = 0;          // messages between SnapshotBegin and SnapshotEnd

  std::size_t frame_count() const { return ends.size(); }
  std::span<const std::uint8_t> frame(std::size_t i) const {
    const std::size_t begin = i == 0 ? 0 : ends[i - 1];
    return {bytes.data() + begin, ends[i] - begin};
  }
};

// Fills `out` (reusing its capacity) with the snapshot of `store`, in frames
// of at most `frame_bytes`.
void build_snapshot_frames(const SnapshotStore& store, std::uint16_t channel, std::uint32_t session,
                           std::size_t frame_bytes, SnapshotFrames& out);

}  // namespace qpgate::feed
