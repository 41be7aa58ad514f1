// Send and receive queue storage: depth, SGE and inline limits, what each QP
// type may post, and ibverbs' bad_wr reporting.
#include "verbs/soft/work_queue.h"

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <string>
#include <vector>

namespace qpgate::verbs::soft {
namespace {

class FakeAh final : public AddressHandle {
 public:
  const AhAttr& attr() const override { return attr_; }
  AhAttr attr_;
};

SendQueueConfig config(QpType type, std::uint32_t depth) {
  SendQueueConfig c;
  c.qp_type = type;
  c.cap.max_send_wr = depth;
  c.cap.max_send_sge = 2;
  c.cap.max_inline_data = 64;
  c.qp_num = 0x11;
  c.ud_max_payload = 1024;
  return c;
}

TEST(SendQueue, PostingBeyondMaxSendWrFailsAndReportsTheFirstWrNotPosted) {
  SendQueue sq(config(QpType::RC, 3));
  std::array<Sge, 1> sge{{{0x1000, 8, 0xabc}}};
  std::array<SendWr, 5> wrs{};
  for (std::size_t i = 0; i < wrs.size(); ++i) {
    wrs[i].wr_id = 100 + i;
    wrs[i].sg_list = sge;
    if (i + 1 < wrs.size()) wrs[i].next = &wrs[i + 1];
  }
  const PostSendResult r = sq.post(wrs[0]);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ENOMEM);
  EXPECT_EQ(r.posted(), 3u);
  EXPECT_EQ(r.bad_wr(), &wrs[3]);
  EXPECT_EQ(r.error().message,
            "post_send to QP 17: WR 3 (wr_id 0x67) does not fit; the send queue holds 3 WRs (max_send_wr) and is full");
  ASSERT_EQ(sq.size(), 3u);
  for (std::uint32_t i = 0; i < 3; ++i) EXPECT_EQ(sq.at(i)->wr_id, 100u + i) << "the WRs before it stay posted";

  sq.pop();
  const PostSendResult again = sq.post(std::span<const SendWr>(wrs).subspan(3));
  EXPECT_FALSE(again.ok()) << "one slot is free, two WRs are offered";
  EXPECT_EQ(again.posted(), 1u);
  EXPECT_EQ(again.bad_wr(), &wrs[4]);
}

TEST(SendQueue, TheSpanOverloadIgnoresNextAndPostsEveryElement) {
  SendQueue sq(config(QpType::RC, 8));
  std::array<SendWr, 3> wrs{};
  SendWr stray;
  wrs[0].next = &stray;  // ignored
  const PostSendResult r = sq.post(wrs);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.posted(), 3u);
  EXPECT_EQ(r.bad_wr(), nullptr);
}

TEST(SendQueue, TooManySgesIsEinvalAndStopsAtThatWr) {
  SendQueue sq(config(QpType::RC, 8));
  std::array<Sge, 3> sges{};
  SendWr ok;
  SendWr bad;
  bad.wr_id = 9;
  bad.sg_list = sges;
  ok.next = &bad;
  const PostSendResult r = sq.post(ok);
  EXPECT_EQ(r.error().code, EINVAL);
  EXPECT_EQ(r.posted(), 1u);
  EXPECT_EQ(r.bad_wr(), &bad);
  EXPECT_EQ(r.error().message, "post_send to QP 17: WR 1 (wr_id 0x9) has 3 SGEs; max_send_sge is 2");
}

TEST(SendQueue, InlineDataIsCopiedAtPostTimeAndLimitedByMaxInlineData) {
  SendQueue sq(config(QpType::RC, 4));
  char a[5] = "abcd";
  char b[4] = "xyz";
  std::array<Sge, 2> sges{{{reinterpret_cast<std::uintptr_t>(a), 4, 0}, {reinterpret_cast<std::uintptr_t>(b), 3, 0}}};
  SendWr wr;
  wr.sg_list = sges;
  wr.send_flags = SendFlag::INLINE;
  ASSERT_TRUE(sq.post(wr).ok());
  std::memcpy(a, "ZZZZ", 4);  // the caller may reuse its buffer at once
  const SendWqe* w = sq.front();
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->num_sge, 0u);
  EXPECT_EQ(w->length, 7u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(w->inline_bytes().data()), w->inline_len), "abcdxyz");

  std::vector<char> big(65, 'q');
  std::array<Sge, 1> bs{{{reinterpret_cast<std::uintptr_t>(big.data()), 65, 0}}};
  wr.sg_list = bs;
  const PostSendResult r = sq.post(wr);
  EXPECT_EQ(r.error().code, EINVAL);
  EXPECT_NE(r.error().message.find("65 bytes inline; max_inline_data is 64"), std::string::npos);
}

TEST(SendQueue, InlineIsRefusedForReadsAndAtomics) {
  SendQueue sq(config(QpType::RC, 4));
  std::uint64_t word = 0;
  std::array<Sge, 1> s{{{reinterpret_cast<std::uintptr_t>(&word), 8, 1}}};
  SendWr wr;
  wr.sg_list = s;
  wr.opcode = WrOpcode::RDMA_READ;
  wr.send_flags = SendFlag::INLINE;
  EXPECT_EQ(sq.post(wr).error().message, "post_send to QP 17: WR 0 (wr_id 0x0): IBV_SEND_INLINE is not valid with IBV_WR_RDMA_READ");
}

TEST(SendQueue, EachQpTypeAcceptsOnlyItsOpcodes) {
  const std::array<WrOpcode, 7> all = {WrOpcode::SEND,          WrOpcode::SEND_WITH_IMM,
                                       WrOpcode::RDMA_WRITE,    WrOpcode::RDMA_WRITE_WITH_IMM,
                                       WrOpcode::RDMA_READ,     WrOpcode::ATOMIC_CMP_AND_SWP,
                                       WrOpcode::ATOMIC_FETCH_AND_ADD};
  for (WrOpcode op : all) {
    EXPECT_TRUE(opcode_valid_for(QpType::RC, op)) << wr_opcode_name(op);
    const bool uc = op != WrOpcode::RDMA_READ && op != WrOpcode::ATOMIC_CMP_AND_SWP && op != WrOpcode::ATOMIC_FETCH_AND_ADD;
    EXPECT_EQ(opcode_valid_for(QpType::UC, op), uc) << wr_opcode_name(op);
    EXPECT_EQ(opcode_valid_for(QpType::UD, op), op == WrOpcode::SEND || op == WrOpcode::SEND_WITH_IMM)
        << wr_opcode_name(op);
  }
  SendQueue ud(config(QpType::UD, 4));
  FakeAh ah;
  SendWr wr;
  wr.opcode = WrOpcode::RDMA_WRITE;
  wr.ud.ah = &ah;
  EXPECT_EQ(ud.post(wr).error().message, "post_send to QP 17: WR 0 (wr_id 0x0): IBV_WR_RDMA_WRITE is not valid on a UD QP");
}

TEST(SendQueue, AnAtomicNeedsExactlyEightBytesOfLocalBuffer) {
  SendQueue sq(config(QpType::RC, 4));
  std::uint32_t small = 0;
  std::array<Sge, 1> s{{{reinterpret_cast<std::uintptr_t>(&small), 4, 1}}};
  SendWr wr;
  wr.opcode = WrOpcode::ATOMIC_FETCH_AND_ADD;
  wr.sg_list = s;
  const PostSendResult r = sq.post(wr);
  EXPECT_EQ(r.error().code, EINVAL);
  EXPECT_NE(r.error().message.find("needs exactly 8 bytes"), std::string::npos);
  s[0].length = 8;
  EXPECT_TRUE(sq.post(wr).ok());
}

TEST(SendQueue, AUdSendNeedsAnAddressHandleAndFitsOnePacket) {
  SendQueue sq(config(QpType::UD, 4));
  SendWr wr;
  EXPECT_EQ(sq.post(wr).error().message, "post_send to QP 17: WR 0 (wr_id 0x0): a UD send needs wr.ud.ah");
  FakeAh ah;
  wr.ud.ah = &ah;
  wr.ud.remote_qpn = kMulticastQpn;
  std::array<Sge, 1> s{{{0x1000, 1025, 1}}};
  wr.sg_list = s;
  const PostSendResult r = sq.post(wr);
  EXPECT_EQ(r.error().code, EINVAL);
  EXPECT_NE(r.error().message.find("at most the path MTU, 1024"), std::string::npos);
  s[0].length = 1024;
  EXPECT_TRUE(sq.post(wr).ok());
}

TEST(SendQueue, SqSigAllMakesEveryWrSignaled) {
  SendQueueConfig c = config(QpType::RC, 2);
  c.sq_sig_all = true;
  SendQueue sq(c);
  SendWr wr;
  ASSERT_TRUE(sq.post(wr).ok());
  const SendWqe* w = sq.front();
  ASSERT_NE(w, nullptr);
  EXPECT_TRUE(w->signaled());
  SendQueue plain(config(QpType::RC, 2));
  ASSERT_TRUE(plain.post(wr).ok());
  const SendWqe* p = plain.front();
  ASSERT_NE(p, nullptr);
  EXPECT_FALSE(p->signaled());
}

TEST(SendQueue, AMessageLargerThanMaxMsgSzIsRefused) {
  SendQueue sq(config(QpType::RC, 2));
  std::array<Sge, 2> s{{{0x1000, 0x800000, 1}, {0x2000, 1, 1}}};
  SendWr wr;
  wr.sg_list = s;
  EXPECT_NE(sq.post(wr).error().message.find("is 8388609 bytes; the largest message is 8388608"), std::string::npos);
}

TEST(SendQueue, AQueueOfDepthZeroRefusesEveryPost) {
  SendQueue sq(config(QpType::RC, 0));
  SendWr wr;
  EXPECT_EQ(sq.post(wr).error().code, ENOMEM);
  EXPECT_EQ(sq.front(), nullptr);
}

TEST(ReceiveRing, PostingBeyondMaxRecvWrFailsAndReportsTheFirstWrNotPosted) {
  ReceiveRing rq(2, 1, "RQ of QP 0x11");
  std::array<RecvWr, 3> wrs{};
  for (std::size_t i = 0; i < 3; ++i) wrs[i].wr_id = i;
  const PostRecvResult r = rq.post(wrs);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ENOMEM);
  EXPECT_EQ(r.posted(), 2u);
  EXPECT_EQ(r.bad_wr(), &wrs[2]);
  EXPECT_EQ(r.error().message,
            "post_recv to RQ of QP 0x11: WR 2 (wr_id 0x2) does not fit; the queue holds 2 WRs (max_recv_wr) and is full");
}

TEST(ReceiveRing, TooManySgesIsEinvalAndTakeCopiesTheWqe) {
  ReceiveRing rq(4, 2, "RQ");
  std::array<Sge, 3> three{};
  RecvWr wr;
  wr.sg_list = three;
  EXPECT_EQ(rq.post(wr).error().code, EINVAL);
  std::array<Sge, 2> two{{{0x1000, 100, 7}, {0x2000, 28, 7}}};
  wr.sg_list = two;
  wr.wr_id = 5;
  ASSERT_TRUE(rq.post(wr).ok());
  auto w = rq.take();
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->wr_id, 5u);
  EXPECT_EQ(w->length, 128u);
  ASSERT_EQ(w->sg_list().size(), 2u);
  EXPECT_EQ(w->sg_list()[1].addr, 0x2000u);
  EXPECT_TRUE(rq.empty());
  EXPECT_FALSE(rq.take().has_value());
}

TEST(WorkQueueState, SendsAreAcceptedFromRtsOnAndReceivesFromInitOn) {
  EXPECT_EQ(check_post_send_state(QpState::RESET).code(), EINVAL);
  EXPECT_EQ(check_post_send_state(QpState::INIT).code(), EINVAL);
  EXPECT_EQ(check_post_send_state(QpState::RTR).message(),
            "post_send: the QP is in RTR; send WRs are accepted from RTS on");
  EXPECT_TRUE(check_post_send_state(QpState::RTS).ok());
  EXPECT_TRUE(check_post_send_state(QpState::SQD).ok());
  EXPECT_TRUE(check_post_send_state(QpState::ERR).ok()) << "and flushed";
  EXPECT_EQ(check_post_recv_state(QpState::RESET).code(), EINVAL);
  EXPECT_TRUE(check_post_recv_state(QpState::INIT).ok());
  EXPECT_TRUE(check_post_recv_state(QpState::ERR).ok());
}

TEST(WorkQueueCaps, CapsBeyondTheSoftDeviceAreRefusedByName) {
  QpCap cap;
  cap.max_send_wr = kMaxQpWr + 1;
  EXPECT_EQ(check_qp_cap(cap, false).message(), "create_qp: cap.max_send_wr 16385 exceeds the device's 16384");
  cap.max_send_wr = 16;
  cap.max_inline_data = 401;
  EXPECT_EQ(check_qp_cap(cap, false).code(), EINVAL);
  cap.max_inline_data = 0;
  cap.max_recv_sge = 33;
  EXPECT_EQ(check_qp_cap(cap, false).code(), EINVAL);
  EXPECT_TRUE(check_qp_cap(cap, true).ok()) << "receive caps are the SRQ's";
}

}  // namespace
}  // namespace qpgate::verbs::soft
