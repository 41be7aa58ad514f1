// The recovery messages (protozero) and the pieces of the recovery service
// that need no transport: snapshot frames and the token bucket.
#include <gtest/gtest.h>

#include <vector>

#include "feed/recovery_codec.h"
#include "feed/snapshot_frames.h"
#include "feed/token_bucket.h"

namespace qpgate::feed {
namespace {

using recovery::Status;

TEST(RecoveryCodec, RequestsRoundTrip) {
  std::vector<std::uint8_t> buf(256);
  recovery::RetransmitRequest q{7, 0xdeadbeef, 1ull << 40, 300, 99};
  const std::size_t n = recovery::encode_request(q, buf);
  ASSERT_GT(n, 0u);
  recovery::Request out;
  const char* error = nullptr;
  ASSERT_TRUE(recovery::decode_request(std::span(buf.data(), n), out, &error)) << error;
  ASSERT_EQ(out.kind, recovery::RequestKind::kRetransmit);
  EXPECT_EQ(out.retransmit.channel, 7u);
  EXPECT_EQ(out.retransmit.session, 0xdeadbeefu);
  EXPECT_EQ(out.retransmit.from_sequence, 1ull << 40);
  EXPECT_EQ(out.retransmit.count, 300u);
  EXPECT_EQ(out.retransmit.request_id, 99u);

  recovery::SnapshotRequest s;
  s.channel = 3;
  s.request_id = 5;
  const std::size_t m = recovery::encode_request(s, buf);
  ASSERT_TRUE(recovery::decode_request(std::span(buf.data(), m), out, &error)) << error;
  ASSERT_EQ(out.kind, recovery::RequestKind::kSnapshot);
  EXPECT_EQ(out.snapshot.channel, 3u);
  EXPECT_EQ(out.snapshot.request_id, 5u);
  EXPECT_EQ(recovery::encode_request(q, std::span(buf.data(), 4)), 0u);  // too small: 0, no overrun

  // All-default requests (channel 0 is a channel) still carry their body.
  const std::size_t z = recovery::encode_request(recovery::SnapshotRequest{}, buf);
  ASSERT_TRUE(recovery::decode_request(std::span(buf.data(), z), out, &error)) << error;
  EXPECT_EQ(out.kind, recovery::RequestKind::kSnapshot);
  const std::size_t r = recovery::encode_request(recovery::SubscriberReport{}, buf);
  ASSERT_TRUE(recovery::decode_request(std::span(buf.data(), r), out, &error)) << error;
  EXPECT_EQ(out.kind, recovery::RequestKind::kReport);
}

TEST(RecoveryCodec, BadRequestsAreNamed) {
  recovery::Request out;
  const char* error = nullptr;
  auto decode = [&](std::vector<std::uint8_t> bytes) { return recovery::decode_request(bytes, out, &error); };
  EXPECT_FALSE(decode({}));
  EXPECT_STREQ(error, "empty request");
  EXPECT_FALSE(decode({0x0a, 0x05, 0x08}));  // body length beyond the end
  EXPECT_STREQ(error, "truncated protobuf");
  EXPECT_FALSE(decode({0x08, 0x01}));  // field 1 as a varint: not a message
  EXPECT_STREQ(error, "RecoveryRequest.body: wrong wire type");
  EXPECT_FALSE(decode({0x0a, 0x02, 0x0a, 0x00}));  // channel as bytes
  EXPECT_STREQ(error, "RetransmitRequest.channel: wrong wire type");
  EXPECT_FALSE(decode({0x0a, 0x00, 0x12, 0x00}));  // retransmit and snapshot
  EXPECT_STREQ(error, "RecoveryRequest has two bodies");
  EXPECT_FALSE(decode({0x78, 0x01}));
  EXPECT_STREQ(error, "RecoveryRequest has no body (retransmit, snapshot or report)");
  EXPECT_FALSE(decode({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}));
  EXPECT_STREQ(error, "invalid protobuf");
}

std::vector<std::uint8_t> data_frame(std::uint64_t first_seq, std::uint16_t count) {
  FramePacker p(512);
  p.start(1, 42);
  const std::uint8_t body[4] = {1, 2, 3, 4};
  for (std::uint16_t i = 0; i < count; ++i) {
    MessageFields f;
    f.type = MessageType::kQuote;
    f.instrument_id = 10u + i;
    EXPECT_EQ(p.append(f, body), AppendStatus::kOk);
  }
  const auto f = p.finish(first_seq, 1234);
  return {f.begin(), f.end()};
}

TEST(RecoveryCodec, RetransmitReplyCarriesFlaggedCopiesAndLeavesTheRingAlone) {
  const auto a = data_frame(1, 3);
  const auto b = data_frame(4, 2);
  const std::span<const std::uint8_t> frames[] = {a, b};
  recovery::RetransmitReplyHead h;
  h.request_id = 8;
  h.status = Status::kOk;
  h.channel = 1;
  h.session = 42;
  h.oldest_sequence = 1;
  h.next_sequence = 6;
  std::vector<std::uint8_t> out(1024);
  const std::size_t n = recovery::encode_retransmit_reply(h, frames, flags::kRetransmission, out);
  ASSERT_GT(n, 0u);
  EXPECT_EQ(a[1], 0);  // the originals are untouched
  auto reply = std::make_unique<recovery::Reply>();
  const char* error = nullptr;
  ASSERT_TRUE(recovery::decode_reply(std::span(out.data(), n), *reply, &error)) << error;
  ASSERT_EQ(reply->kind, recovery::ReplyKind::kRetransmit);
  EXPECT_EQ(reply->retransmit.status, Status::kOk);
  EXPECT_EQ(reply->retransmit.request_id, 8u);
  EXPECT_EQ(reply->retransmit.next_sequence, 6u);
  ASSERT_EQ(reply->frame_count, 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    const auto parsed = parse_frame(reply->frames[i]);
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(parsed->header().flags(), flags::kRetransmission);
    EXPECT_EQ(parsed->bytes().size(), frames[i].size());
    EXPECT_TRUE(std::equal(parsed->bytes().begin() + 2, parsed->bytes().end(), frames[i].begin() + 2));
  }
  // A reply that does not fit is refused whole.
  EXPECT_EQ(recovery::encode_retransmit_reply(h, frames, flags::kRetransmission, std::span(out.data(), 40)), 0u);
}

TEST(RecoveryCodec, ErrorAndSnapshotRepliesRoundTrip) {
  std::vector<std::uint8_t> out(256);
  auto reply = std::make_unique<recovery::Reply>();
  const char* error = nullptr;
  std::size_t n = recovery::encode_error_reply(Status::kMalformed, "truncated protobuf", out);
  ASSERT_TRUE(recovery::decode_reply(std::span(out.data(), n), *reply, &error)) << error;
  EXPECT_EQ(reply->kind, recovery::ReplyKind::kError);
  EXPECT_EQ(reply->error_status, Status::kMalformed);
  EXPECT_EQ(reply->error_message, "truncated protobuf");
  recovery::SnapshotReplyHead h;
  h.request_id = 3;
  h.status = Status::kThrottled;
  h.channel = 2;
  h.retry_after_ns = 12345;
  h.part = 4;
  h.last = true;
  n = recovery::encode_snapshot_reply(h, {}, out);
  ASSERT_TRUE(recovery::decode_reply(std::span(out.data(), n), *reply, &error)) << error;
  EXPECT_EQ(reply->kind, recovery::ReplyKind::kSnapshot);
  EXPECT_EQ(reply->snapshot.status, Status::kThrottled);
  EXPECT_EQ(reply->snapshot.retry_after_ns, 12345u);
  EXPECT_EQ(reply->snapshot.part, 4u);
  EXPECT_TRUE(reply->snapshot.last);
  const std::uint8_t nothing[] = {0x78, 0x01};
  EXPECT_FALSE(recovery::decode_reply(nothing, *reply, &error));
  EXPECT_STREQ(error, "RecoveryReply has no body");
}

TEST(SnapshotFrames, BeginDefinitionsFirstStateEnd) {
  SnapshotStore store(5, 77, SnapshotConfig{256, 64});
  // Quotes for instruments 1..20 at sequences 1..20, then their definitions at 21..40.
  std::vector<std::uint8_t> frame;
  auto apply = [&](MessageType type, std::uint32_t instrument, std::uint64_t seq) {
    FramePacker p(256);
    p.start(5, 77);
    MessageFields f;
    f.type = type;
    f.instrument_id = instrument;
    const std::uint8_t body[8] = {};
    EXPECT_EQ(p.append(f, body), AppendStatus::kOk);
    const auto bytes = p.finish(seq, 0);
    store.apply_frame(ParsedFrame(bytes));
  };
  for (std::uint32_t i = 1; i <= 20; ++i) apply(MessageType::kQuote, i, i);
  for (std::uint32_t i = 1; i <= 20; ++i) apply(MessageType::kInstrumentDefinition, i, 20 + i);
  SnapshotFrames out;
  build_snapshot_frames(store, 5, 77, 256, out);  // small frames: several of them
  EXPECT_EQ(out.last_sequence, 40u);
  EXPECT_EQ(out.entries, 40u);
  ASSERT_GT(out.frame_count(), 1u);
  std::vector<MessageType> types;
  for (std::size_t i = 0; i < out.frame_count(); ++i) {
    const auto parsed = parse_frame(out.frame(i));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(parsed->header().flags(), flags::kSnapshot);
    EXPECT_EQ(parsed->header().first_seq(), 41u);
    EXPECT_EQ(parsed->header().session(), 77u);
    for (const Message& m : *parsed) types.push_back(m.type());
  }
  ASSERT_EQ(types.size(), 42u);
  EXPECT_EQ(types.front(), MessageType::kSnapshotBegin);
  EXPECT_EQ(types.back(), MessageType::kSnapshotEnd);
  for (std::size_t i = 1; i <= 20; ++i) EXPECT_EQ(types[i], MessageType::kInstrumentDefinition) << i;
  for (std::size_t i = 21; i <= 40; ++i) EXPECT_EQ(types[i], MessageType::kQuote) << i;
}

TEST(TokenBucket, ThrottlesBeyondTheBurstAndSaysHowLongToWait) {
  TokenBucket b(1000, 100, 0);  // 1000 messages/s, burst 100
  EXPECT_EQ(b.take(60, 0), 0u);
  EXPECT_EQ(b.take(40, 0), 0u);
  const std::uint64_t wait = b.take(10, 0);
  EXPECT_EQ(wait, 10'000'000u);  // 10 messages at 1000/s
  EXPECT_EQ(b.take(10, 10'000'000), 0u);
  EXPECT_EQ(b.take(5000, 10'000'000 + 100'000'000), 0u);  // capped at the burst: a full bucket passes any request
  EXPECT_GT(b.take(1, 10'000'000 + 100'000'000), 0u);
}

}  // namespace
}  // namespace qpgate::feed
