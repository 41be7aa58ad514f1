// The golden frames of test/feed/golden/frames.txt, shared with the TS tests:
// native parses each into exactly the listed fields, packs the listed fields
// into exactly the listed bytes, and rejects each bad vector with the listed
// error. The TS test checks the same file, so TS and native agree byte for byte.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "feed/frame.h"

namespace qpgate::feed {
namespace {

std::vector<std::uint8_t> unhex(const std::string& s) {
  std::vector<std::uint8_t> out;
  if (s == "-") return out;
  for (std::size_t i = 0; i + 1 < s.size(); i += 2) out.push_back(static_cast<std::uint8_t>(std::stoul(s.substr(i, 2), nullptr, 16)));
  return out;
}

struct GoldenMessage {
  std::uint16_t type, key;
  std::uint32_t instrument;
  std::uint8_t action;
  std::vector<std::uint8_t> body;
};
struct GoldenFrame {
  std::string name;
  unsigned flags, channel, count;
  std::uint32_t session;
  std::uint64_t first_seq, send_time;
  std::vector<std::uint8_t> bytes;
  std::vector<GoldenMessage> messages;
};
struct GoldenBad {
  std::string error;
  std::vector<std::uint8_t> bytes;
};

void load(std::vector<GoldenFrame>& frames, std::vector<GoldenBad>& bad) {
  std::ifstream in(QPGATE_FEED_GOLDEN);
  ASSERT_TRUE(in) << "cannot open " << QPGATE_FEED_GOLDEN;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string kind;
    ls >> kind;
    if (kind == "frame") {
      GoldenFrame f;
      std::string hex;
      ls >> f.name >> f.flags >> f.channel >> f.session >> f.first_seq >> f.send_time >> f.count >> hex;
      f.bytes = unhex(hex);
      frames.push_back(std::move(f));
    } else if (kind == "msg") {
      GoldenMessage m;
      unsigned type, key, action;
      std::string hex;
      ls >> type >> m.instrument >> key >> action >> hex;
      m.type = static_cast<std::uint16_t>(type);
      m.key = static_cast<std::uint16_t>(key);
      m.action = static_cast<std::uint8_t>(action);
      m.body = unhex(hex);
      frames.back().messages.push_back(std::move(m));
    } else if (kind == "bad") {
      GoldenBad b;
      std::string hex;
      ls >> b.error >> hex;
      b.bytes = unhex(hex);
      bad.push_back(std::move(b));
    }
  }
}

TEST(GoldenFrames, NativeParsesEachIntoTheListedFieldsAndPacksTheFieldsIntoTheListedBytes) {
  std::vector<GoldenFrame> frames;
  std::vector<GoldenBad> bad;
  load(frames, bad);
  ASSERT_GE(frames.size(), 5u);
  for (const GoldenFrame& g : frames) {
    SCOPED_TRACE(g.name);
    const auto r = parse_frame(g.bytes);
    ASSERT_TRUE(r.ok()) << frame_error_name(r.error());
    const FrameHeaderView h = r->header();
    EXPECT_EQ(h.flags(), g.flags);
    EXPECT_EQ(h.channel(), g.channel);
    EXPECT_EQ(h.session(), g.session);
    EXPECT_EQ(h.first_seq(), g.first_seq);
    EXPECT_EQ(h.send_time_ns(), g.send_time);
    EXPECT_EQ(h.message_count(), g.count);
    ASSERT_EQ(g.messages.size(), g.count);
    std::size_t i = 0;
    for (const Message& m : *r) {
      const GoldenMessage& e = g.messages[i++];
      EXPECT_EQ(m.header.type(), e.type);
      EXPECT_EQ(m.instrument_id(), e.instrument);
      EXPECT_EQ(m.key(), e.key);
      EXPECT_EQ(m.header.action(), e.action);
      EXPECT_EQ(std::vector<std::uint8_t>(m.body.begin(), m.body.end()), e.body);
    }

    std::vector<std::uint8_t> packed;
    if ((g.flags & flags::kControl) != 0) {
      packed.resize(kFrameHeaderBytes);
      encode_control_frame(packed, static_cast<std::uint8_t>(g.flags), static_cast<std::uint16_t>(g.channel), g.session,
                           g.first_seq, g.send_time);
    } else {
      FramePacker p(kMaxFrameBytes);
      p.start(static_cast<std::uint16_t>(g.channel), g.session, static_cast<std::uint8_t>(g.flags));
      for (const GoldenMessage& m : g.messages) {
        ASSERT_EQ(p.append({static_cast<MessageType>(m.type), m.instrument, m.key, static_cast<BookAction>(m.action)}, m.body),
                  AppendStatus::kOk);
      }
      const auto f = p.finish(g.first_seq, g.send_time);
      packed.assign(f.begin(), f.end());
    }
    EXPECT_EQ(packed, g.bytes);
  }
}

TEST(GoldenFrames, NativeRejectsEachBadVectorWithTheListedError) {
  std::vector<GoldenFrame> frames;
  std::vector<GoldenBad> bad;
  load(frames, bad);
  ASSERT_GE(bad.size(), 10u);
  for (const GoldenBad& b : bad) {
    const auto r = parse_frame(b.bytes);
    ASSERT_FALSE(r.ok()) << b.error;
    EXPECT_EQ(frame_error_name(r.error()), b.error);
  }
}

TEST(GoldenFrames, TheMessageTypeCodesAreTheProtoEnumNumbers) {
  // proto/qpgate/marketdata/v1/marketdata.proto MessageType; the golden live
  // frame was encoded by the TS side from the generated enum.
  EXPECT_EQ(static_cast<int>(MessageType::kInstrumentDefinition), 2);
  EXPECT_EQ(static_cast<int>(MessageType::kQuote), 3);
  EXPECT_EQ(static_cast<int>(MessageType::kTrade), 4);
  EXPECT_EQ(static_cast<int>(MessageType::kBookLevelUpdate), 5);
  EXPECT_EQ(static_cast<int>(MessageType::kTradingStatus), 6);
  EXPECT_EQ(static_cast<int>(MessageType::kSnapshotBegin), 7);
  EXPECT_EQ(static_cast<int>(MessageType::kSnapshotEnd), 8);
  std::vector<GoldenFrame> frames;
  std::vector<GoldenBad> bad;
  load(frames, bad);
  ASSERT_FALSE(frames.empty());
  std::vector<std::uint16_t> types;
  for (const auto& m : frames[0].messages) types.push_back(m.type);
  EXPECT_EQ(types, (std::vector<std::uint16_t>{2, 3, 4, 5, 6}));
}

}  // namespace
}  // namespace qpgate::feed
