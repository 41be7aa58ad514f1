// Feed frames: what the packer writes is what the parser reads, at the
// default (1024) and largest (4096) channel sizes; every malformed variant is
// rejected with its own error and counted under its own name.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>

#include "feed/frame.h"
#include "feed/sequencer.h"
#include "test_util.h"

namespace qpgate::feed {
namespace {

using test::body_of;

class PackParse : public ::testing::TestWithParam<std::size_t> {};

TEST_P(PackParse, WhatThePackerWritesTheParserReadsBackFieldForField) {
  const std::size_t size = GetParam();
  FramePacker p(size);
  p.start(513, 0xdeadbeef, flags::kRetransmission);
  std::vector<std::vector<std::uint8_t>> bodies;
  std::uint16_t n = 0;
  for (;; ++n) {
    bodies.push_back(body_of(17 + n % 40, static_cast<std::uint8_t>(n)));
    const MessageFields m{MessageType::kBookLevelUpdate, 1000u + n, book_key(n % 2 == 1, static_cast<std::uint8_t>(n)),
                          BookAction::kModify};
    if (p.append(m, bodies.back()) != AppendStatus::kOk) {
      bodies.pop_back();
      break;
    }
  }
  ASSERT_GT(n, 10);
  const auto bytes = p.finish(42, 123456789);
  EXPECT_LE(bytes.size(), size);
  EXPECT_LT(size - bytes.size(), kMessageHeaderBytes + 17 + 40);  // it really was full

  const auto r = parse_frame(bytes);
  ASSERT_TRUE(r.ok()) << frame_error_name(r.error());
  const FrameHeaderView h = r->header();
  EXPECT_EQ(h.version(), kFrameVersion);
  EXPECT_EQ(h.flags(), flags::kRetransmission);
  EXPECT_EQ(h.channel(), 513);
  EXPECT_EQ(h.session(), 0xdeadbeefu);
  EXPECT_EQ(h.first_seq(), 42u);
  EXPECT_EQ(h.send_time_ns(), 123456789u);
  EXPECT_EQ(h.message_count(), n);
  EXPECT_EQ(h.frame_length(), bytes.size());
  std::uint16_t i = 0;
  for (const Message& m : *r) {
    EXPECT_EQ(m.seq, 42u + i);
    EXPECT_EQ(m.type(), MessageType::kBookLevelUpdate);
    EXPECT_EQ(m.instrument_id(), 1000u + i);
    EXPECT_EQ(m.key(), book_key(i % 2 == 1, static_cast<std::uint8_t>(i)));
    EXPECT_EQ(m.action(), BookAction::kModify);
    ASSERT_EQ(m.body.size(), bodies[i].size());
    EXPECT_EQ(0, std::memcmp(m.body.data(), bodies[i].data(), m.body.size()));
    ++i;
  }
  EXPECT_EQ(i, n);
}

INSTANTIATE_TEST_SUITE_P(ChannelSizes, PackParse, ::testing::Values(std::size_t{1024}, std::size_t{4096}));

TEST(FramePacker, AMessageThatDoesNotFitIsRefusedAsFrameFullAndStartsTheNextFrame) {
  FramePacker p(1024);
  p.start(1, 9);
  const auto big = body_of(600, 1);
  ASSERT_EQ(p.append({MessageType::kQuote, 1}, big), AppendStatus::kOk);
  EXPECT_EQ(p.append({MessageType::kQuote, 2}, big), AppendStatus::kFrameFull);
  EXPECT_EQ(p.message_count(), 1);  // the refused message left no trace
  const auto first = p.finish(1, 0);
  EXPECT_EQ(first.size(), kFrameHeaderBytes + kMessageHeaderBytes + 600);
  ASSERT_TRUE(parse_frame(first).ok());

  p.start(1, 9);
  ASSERT_EQ(p.append({MessageType::kQuote, 2}, big), AppendStatus::kOk);
  const auto second = parse_frame(p.finish(2, 0));
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->header().first_seq(), 2u);
  EXPECT_EQ((*second->begin()).instrument_id(), 2u);
}

TEST(FramePacker, AMessageBiggerThanAWholeFrameIsRefusedAsTooLarge) {
  FramePacker p(1024);
  p.start(1, 9);
  EXPECT_EQ(p.max_body_bytes(), 1024 - kFrameHeaderBytes - kMessageHeaderBytes);
  EXPECT_EQ(p.append({MessageType::kQuote, 1}, body_of(p.max_body_bytes(), 0)), AppendStatus::kOk);
  p.start(1, 9);
  EXPECT_EQ(p.append({MessageType::kQuote, 1}, body_of(p.max_body_bytes() + 1, 0)), AppendStatus::kTooLarge);
  FramePacker big(4096);
  big.start(1, 9);
  EXPECT_EQ(big.append({MessageType::kQuote, 1}, body_of(4096, 0)), AppendStatus::kTooLarge);
  EXPECT_EQ(big.append({MessageType::kUnspecified, 1}, body_of(4, 0)), AppendStatus::kBadType);
}

TEST(FramePacker, ReserveHandsOutTheBodyInPlaceForAnEncoderToFill) {
  FramePacker p;
  p.start(3, 5);
  auto body = p.reserve({MessageType::kTrade, 77}, 5);
  ASSERT_TRUE(body.ok());
  std::memcpy(body.value().data(), "hello", 5);
  const auto f = parse_frame(p.finish(10, 0));
  ASSERT_TRUE(f.ok());
  const Message m = *f->begin();
  EXPECT_EQ(std::string(m.body.begin(), m.body.end()), "hello");
}

TEST(FramePacker, AnEmptyBodyIsAMessageOfJustItsHeader) {
  FramePacker p;
  p.start(3, 5);
  ASSERT_EQ(p.append({MessageType::kTradingStatus, 1}, {}), AppendStatus::kOk);
  const auto f = parse_frame(p.finish(1, 0));
  ASSERT_TRUE(f.ok());
  EXPECT_EQ((*f->begin()).bytes.size(), kMessageHeaderBytes);
  EXPECT_TRUE((*f->begin()).body.empty());
}

TEST(ControlFrame, AHeartbeatHasNoMessagesAndCarriesTheNextSequence) {
  std::uint8_t buf[64];
  const auto hb = encode_control_frame(buf, flags::kHeartbeat, 4, 77, 1001, 5);
  const auto r = parse_frame(hb);
  ASSERT_TRUE(r.ok()) << frame_error_name(r.error());
  EXPECT_TRUE(r->header().is_control());
  EXPECT_EQ(r->header().first_seq(), 1001u);
  EXPECT_EQ(r->message_count(), 0);
  EXPECT_EQ(r->begin(), r->end());
}

// --- malformed frames -------------------------------------------------------

std::vector<std::uint8_t> good_frame() { return test::data_frame(0x1234, 5, 3, 10); }

FrameError error_of(const std::vector<std::uint8_t>& bytes, ParseMode mode = ParseMode::kExact) {
  const auto r = parse_frame(bytes, mode);
  EXPECT_FALSE(r.ok());
  return r.ok() ? FrameError::kBadMessageType : r.error();
}

void set16(std::vector<std::uint8_t>& b, std::size_t off, std::uint16_t v) { store_le(b.data() + off, v); }
constexpr std::size_t kMsg0 = kFrameHeaderBytes;  // first message header

TEST(FrameParser, RejectsEveryMalformedFrameWithThePreciseError) {
  ASSERT_TRUE(parse_frame(good_frame()).ok());
  {
    auto b = good_frame();
    b.resize(31);
    EXPECT_EQ(error_of(b), FrameError::kTruncatedHeader);
    EXPECT_EQ(error_of({}), FrameError::kTruncatedHeader);
  }
  { auto b = good_frame(); b[0] = 2; EXPECT_EQ(error_of(b), FrameError::kBadVersion); }
  { auto b = good_frame(); b[0] = 0; EXPECT_EQ(error_of(b), FrameError::kBadVersion); }
  { auto b = good_frame(); b[1] = 0x10; EXPECT_EQ(error_of(b), FrameError::kUnknownFlags); }
  { auto b = good_frame(); b[30] = 1; EXPECT_EQ(error_of(b), FrameError::kReservedNotZero); }
  { auto b = good_frame(); b[kMsg0 + 11] = 1; EXPECT_EQ(error_of(b), FrameError::kReservedNotZero); }
  { auto b = good_frame(); set16(b, 26, 31); EXPECT_EQ(error_of(b), FrameError::kBadFrameLength); }
  { auto b = good_frame(); set16(b, 26, 4097); EXPECT_EQ(error_of(b), FrameError::kBadFrameLength); }
  {
    auto b = good_frame();  // lost its last byte on the way: frame_length says more
    b.pop_back();
    EXPECT_EQ(error_of(b), FrameError::kTruncatedFrame);
  }
  {
    auto b = good_frame();
    b.push_back(0);
    EXPECT_EQ(error_of(b), FrameError::kTrailingBytes);
    EXPECT_TRUE(parse_frame(b, ParseMode::kPrefix).ok());  // back to back, the next frame follows
  }
  { auto b = good_frame(); std::memset(b.data() + 4, 0, 4); EXPECT_EQ(error_of(b), FrameError::kZeroSession); }
  { auto b = good_frame(); std::memset(b.data() + 8, 0, 8); EXPECT_EQ(error_of(b), FrameError::kZeroSequence); }
  {
    auto b = good_frame();
    store_le<std::uint64_t>(b.data() + 8, UINT64_MAX - 1);  // + 3 messages overflows
    EXPECT_EQ(error_of(b), FrameError::kSequenceOverflow);
  }
  {
    auto b = test::heartbeat(9, 10);
    set16(b, 24, 1);
    EXPECT_EQ(error_of(b), FrameError::kBadControlFrame);  // heartbeat with a message count
    auto c = test::heartbeat(9, 10);
    c[1] = flags::kHeartbeat | flags::kEndOfSession;
    EXPECT_EQ(error_of(c), FrameError::kBadControlFrame);
    auto d = test::heartbeat(9, 10);
    d[1] = flags::kHeartbeat | flags::kSnapshot;
    EXPECT_EQ(error_of(d), FrameError::kBadControlFrame);
    auto e = good_frame();  // messages behind a heartbeat flag
    e[1] = flags::kHeartbeat;
    set16(e, 24, 0);
    EXPECT_EQ(error_of(e), FrameError::kBadControlFrame);
  }
  { auto b = test::heartbeat(9, 10); b[1] = 0; EXPECT_EQ(error_of(b), FrameError::kEmptyFrame); }
  {
    // count says 4, three messages then exactly the end.
    auto b = good_frame();
    set16(b, 24, 4);
    EXPECT_EQ(error_of(b), FrameError::kCountMismatch);
    // count says 2, a whole third message is left over.
    set16(b, 24, 2);
    EXPECT_EQ(error_of(b), FrameError::kCountMismatch);
  }
  {
    // count says 4, and 5 stray bytes where a 12-byte header is due.
    auto b = good_frame();
    b.insert(b.end(), 5, 0);
    set16(b, 26, static_cast<std::uint16_t>(b.size()));
    set16(b, 24, 4);
    EXPECT_EQ(error_of(b), FrameError::kTruncatedMessageHeader);
  }
  { auto b = good_frame(); set16(b, kMsg0, 0); EXPECT_EQ(error_of(b), FrameError::kZeroLengthMessage); }
  { auto b = good_frame(); set16(b, kMsg0, 11); EXPECT_EQ(error_of(b), FrameError::kMessageTooShort); }
  {
    auto b = good_frame();  // first message claims one byte past the frame
    set16(b, kMsg0, static_cast<std::uint16_t>(b.size() - kFrameHeaderBytes + 1));
    EXPECT_EQ(error_of(b), FrameError::kMessageOverrun);
    auto c = good_frame();  // a later message overruns
    set16(c, kMsg0 + 22 + 22, 23);
    EXPECT_EQ(error_of(c), FrameError::kMessageOverrun);
  }
  { auto b = good_frame(); set16(b, kMsg0 + 2, 0); EXPECT_EQ(error_of(b), FrameError::kBadMessageType); }
}

TEST(FrameParser, NeverReadsPastTheBufferOnAnyPrefixOfAValidFrame) {
  // Every truncation of a valid frame is rejected (ASan would catch a read past it).
  const auto b = good_frame();
  for (std::size_t n = 0; n < b.size(); ++n) {
    std::vector<std::uint8_t> cut(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(n));
    const auto r = parse_frame(cut);
    EXPECT_FALSE(r.ok()) << n;
  }
}

TEST(FrameCounters, EveryRejectIsCountedUnderItsOwnName) {
  FrameCounters c;
  c.count(parse_frame(good_frame()));
  c.count(parse_frame(test::heartbeat(1, 1)));
  c.count(parse_frame(std::vector<std::uint8_t>(3)));
  EXPECT_EQ(c.accepted.get(), 1u);
  EXPECT_EQ(c.heartbeats.get(), 1u);
  EXPECT_EQ(c.rejected_count(FrameError::kTruncatedHeader), 1u);
  std::set<std::string> names;
  c.for_each([&](std::string_view name, std::uint64_t) { names.emplace(name); });
  EXPECT_EQ(names.size(), kFrameErrorCount + 2);  // every name distinct
  EXPECT_FALSE(names.contains("unknown"));
}

TEST(Sequencer, SessionIdsAreRandomNonZeroAndNeverThePreviousOne) {
  std::set<std::uint32_t> seen;
  std::uint32_t prev = 0;
  for (int i = 0; i < 100; ++i) {
    const std::uint32_t s = new_session_id(prev);
    EXPECT_NE(s, 0u);
    EXPECT_NE(s, prev);
    seen.insert(s);
    prev = s;
  }
  EXPECT_GT(seen.size(), 95u);
}

TEST(Sequencer, SequencesCountMessagesFromOneAndFramesClaimConsecutiveRanges) {
  ChannelSequence seq(3, 77);
  EXPECT_EQ(seq.next(), 1u);
  EXPECT_EQ(seq.claim(5), 1u);
  EXPECT_EQ(seq.claim(2), 6u);
  EXPECT_EQ(seq.next(), 8u);  // what a heartbeat now carries
}

}  // namespace
}  // namespace qpgate::feed
