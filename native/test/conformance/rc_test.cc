// RC on both backends: SEND both ways in order (with immediate data), a
// message of many MTUs, RDMA WRITE and READ, FETCH_ADD and CMP_SWAP, a bad
// rkey, and an RNR wait that ends when the receive is posted.
#include <algorithm>
#include <cstring>

#include "backend.h"

namespace qpgate::verbs::conformance {
namespace {

SendWr send_wr(std::uint64_t id, const Sge& sge, WrOpcode op = WrOpcode::SEND) {
  SendWr w;
  w.wr_id = id;
  w.sg_list = std::span<const Sge>(&sge, 1);
  w.opcode = op;
  w.send_flags = SendFlag::SIGNALED;
  return w;
}

void expect_all_success(const std::vector<Wc>& wcs, std::size_t n) {
  ASSERT_EQ(wcs.size(), n);
  for (const Wc& wc : wcs) EXPECT_EQ(wc.status, WcStatus::IBV_WC_SUCCESS) << wc_text(wc);
}

TEST_P(Conformance, RcSendsArriveInOrderBothWaysWithImmediateDataInHostOrder) {
  auto q0 = make_qp(0, QpType::RC);
  auto q1 = make_qp(1, QpType::RC);
  ASSERT_TRUE(q0 && q1);
  connect(*q0, *q1);
  constexpr int kEach = 16;
  for (int s = 0; s < 2; ++s) {
    for (int i = 0; i < kEach; ++i) {
      const Sge sge = side[s].sge(4096 + static_cast<std::size_t>(i) * 256, 256);
      ASSERT_TRUE((s == 0 ? q0 : q1)->post_recv(RecvWr{static_cast<std::uint64_t>(i), nullptr, std::span(&sge, 1)}).ok());
    }
  }
  for (int s = 0; s < 2; ++s) {
    QueuePair& q = s == 0 ? *q0 : *q1;
    for (int i = 0; i < kEach; ++i) {
      const std::size_t at = static_cast<std::size_t>(i) * 64;
      std::snprintf(reinterpret_cast<char*>(side[s].buffer.data() + at), 64, "side %d message %02d", s, i);
      const Sge sge = side[s].sge(at, 32);
      SendWr w = send_wr(static_cast<std::uint64_t>(100 + i), sge, i % 2 == 0 ? WrOpcode::SEND : WrOpcode::SEND_WITH_IMM);
      w.imm_data = 0xA0B0C000u + static_cast<std::uint32_t>(i);
      auto r = q.post_send(w);
      ASSERT_TRUE(r.ok()) << r.error().message;
    }
  }
  for (int s = 0; s < 2; ++s) {
    // Each side sees its kEach send completions and kEach receives.
    const auto wcs = poll(s, 2 * kEach);
    ASSERT_EQ(wcs.size(), 2u * kEach);
    int next_recv = 0;
    for (const Wc& wc : wcs) {
      ASSERT_EQ(wc.status, WcStatus::IBV_WC_SUCCESS) << wc_text(wc);
      if (wc.opcode != WcOpcode::RECV) continue;
      ASSERT_EQ(wc.wr_id, static_cast<std::uint64_t>(next_recv)) << "receives complete in posting order";
      char want[64];
      std::snprintf(want, sizeof want, "side %d message %02d", 1 - s, next_recv);
      EXPECT_STREQ(reinterpret_cast<const char*>(side[s].buffer.data() + 4096 + wc.wr_id * 256), want);
      EXPECT_EQ(wc.byte_len, 32u);
      const bool with_imm = next_recv % 2 == 1;
      EXPECT_EQ(wc.wc_flags.has(WcFlag::WITH_IMM), with_imm);
      if (with_imm) EXPECT_EQ(wc.imm_data, 0xA0B0C000u + static_cast<std::uint32_t>(next_recv));
      ++next_recv;
    }
    EXPECT_EQ(next_recv, kEach);
  }
}

TEST_P(Conformance, RcAMessageOfManyMtusArrivesByteForByte) {
  auto q0 = make_qp(0, QpType::RC);
  auto q1 = make_qp(1, QpType::RC);
  ASSERT_TRUE(q0 && q1);
  connect(*q0, *q1);
  constexpr std::uint32_t kBytes = 64 * 1024;  // 64 packets at MTU 1024
  for (std::uint32_t i = 0; i < kBytes; ++i) side[0].buffer[i] = static_cast<std::uint8_t>(i * 7 + 3);
  const Sge rs = side[1].sge(0, kBytes);
  ASSERT_TRUE(q1->post_recv(RecvWr{1, nullptr, std::span(&rs, 1)}).ok());
  const Sge ss = side[0].sge(0, kBytes);
  ASSERT_TRUE(q0->post_send(send_wr(2, ss)).ok());
  expect_all_success(poll(0, 1), 1);
  const auto got = poll(1, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].byte_len, kBytes);
  EXPECT_EQ(std::memcmp(side[0].buffer.data(), side[1].buffer.data(), kBytes), 0);
}

TEST_P(Conformance, RcRdmaWriteThenReadBringsTheSameBytesBack) {
  auto q0 = make_qp(0, QpType::RC);
  auto q1 = make_qp(1, QpType::RC);
  ASSERT_TRUE(q0 && q1);
  connect(*q0, *q1);
  constexpr std::uint32_t kBytes = 5000;  // not a multiple of the MTU
  for (std::uint32_t i = 0; i < kBytes; ++i) side[0].buffer[i] = static_cast<std::uint8_t>(i ^ 0x5a);
  const Sge out = side[0].sge(0, kBytes);
  SendWr write = send_wr(1, out, WrOpcode::RDMA_WRITE);
  write.rdma = {side[1].addr(8192), side[1].mr->rkey()};
  ASSERT_TRUE(q0->post_send(write).ok());
  expect_all_success(poll(0, 1), 1);
  EXPECT_EQ(std::memcmp(side[1].buffer.data() + 8192, side[0].buffer.data(), kBytes), 0);

  const Sge back = side[0].sge(32768, kBytes);
  SendWr read = send_wr(2, back, WrOpcode::RDMA_READ);
  read.rdma = {side[1].addr(8192), side[1].mr->rkey()};
  ASSERT_TRUE(q0->post_send(read).ok());
  const auto wcs = poll(0, 1);
  expect_all_success(wcs, 1);
  EXPECT_EQ(wcs[0].opcode, WcOpcode::RDMA_READ);
  EXPECT_EQ(std::memcmp(side[0].buffer.data() + 32768, side[0].buffer.data(), kBytes), 0);
}

TEST_P(Conformance, RcAtomicsReturnTheOriginalAndUpdateTheTarget) {
  auto q0 = make_qp(0, QpType::RC);
  auto q1 = make_qp(1, QpType::RC);
  ASSERT_TRUE(q0 && q1);
  connect(*q0, *q1);
  std::uint64_t word = 1'000'000'000'000ULL;
  std::memcpy(side[1].buffer.data() + 1024, &word, 8);
  const Sge r0 = side[0].sge(0, 8), r1 = side[0].sge(8, 8), r2 = side[0].sge(16, 8);
  SendWr add = send_wr(1, r0, WrOpcode::ATOMIC_FETCH_AND_ADD);
  add.atomic = {side[1].addr(1024), 42, 0, side[1].mr->rkey()};
  SendWr swap_hit = send_wr(2, r1, WrOpcode::ATOMIC_CMP_AND_SWP);
  swap_hit.atomic = {side[1].addr(1024), 1'000'000'000'042ULL, 7, side[1].mr->rkey()};
  SendWr swap_miss = send_wr(3, r2, WrOpcode::ATOMIC_CMP_AND_SWP);
  swap_miss.atomic = {side[1].addr(1024), 1'000'000'000'042ULL, 9, side[1].mr->rkey()};
  const SendWr wrs[] = {add, swap_hit, swap_miss};
  ASSERT_TRUE(q0->post_send(std::span<const SendWr>(wrs)).ok());
  expect_all_success(poll(0, 3), 3);
  std::uint64_t got[3];
  std::memcpy(got, side[0].buffer.data(), sizeof got);
  EXPECT_EQ(got[0], 1'000'000'000'000ULL);  // FETCH_ADD: the value before
  EXPECT_EQ(got[1], 1'000'000'000'042ULL);  // CMP_SWAP hit: the value before, swapped
  EXPECT_EQ(got[2], 7u);                    // CMP_SWAP miss: the value it found, unchanged
  std::memcpy(&word, side[1].buffer.data() + 1024, 8);
  EXPECT_EQ(word, 7u);
}

TEST_P(Conformance, RcABadRkeyIsARemoteAccessErrorAndTheRequesterGoesToErr) {
  auto q0 = make_qp(0, QpType::RC);
  auto q1 = make_qp(1, QpType::RC);
  ASSERT_TRUE(q0 && q1);
  connect(*q0, *q1);
  std::memset(side[1].buffer.data(), 0xEE, 64);
  const Sge out = side[0].sge(0, 64);
  SendWr write = send_wr(1, out, WrOpcode::RDMA_WRITE);
  write.rdma = {side[1].addr(0), side[1].mr->rkey() ^ 0x00010000u};
  ASSERT_TRUE(q0->post_send(write).ok());
  const auto wcs = poll(0, 1);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, WcStatus::IBV_WC_REM_ACCESS_ERR) << wc_text(wcs[0]);
  EXPECT_EQ(q0->state(), QpState::ERR);
  for (int i = 0; i < 64; ++i) ASSERT_EQ(side[1].buffer[static_cast<std::size_t>(i)], 0xEE) << "nothing was written";
}

TEST_P(Conformance, RcASendWithoutAReceiveWaitsOnRnrAndCompletesOnceOneIsPosted) {
  auto q0 = make_qp(0, QpType::RC);
  auto q1 = make_qp(1, QpType::RC);
  ASSERT_TRUE(q0 && q1);
  connect(*q0, *q1, /*min_rnr_timer=*/1);  // rnr_retry 7: retry for ever
  std::memcpy(side[0].buffer.data(), "late receiver", 14);
  const Sge out = side[0].sge(0, 14);
  ASSERT_TRUE(q0->post_send(send_wr(1, out)).ok());
  EXPECT_TRUE(poll(0, 1, std::chrono::milliseconds(300)).empty()) << "no receive yet: the sender must be waiting";
  const Sge in = side[1].sge(4096, 64);
  ASSERT_TRUE(q1->post_recv(RecvWr{9, nullptr, std::span(&in, 1)}).ok());
  expect_all_success(poll(0, 1), 1);
  const auto got = poll(1, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_STREQ(reinterpret_cast<const char*>(side[1].buffer.data() + 4096), "late receiver");
}

INSTANTIATE_TEST_SUITE_P(Backends, Conformance, ::testing::Values("soft", "ibv", "soft-rxe", "rxe-soft"),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           std::string name = i.param;
                           std::replace(name.begin(), name.end(), '-', '_');  // gtest names: [A-Za-z0-9_]
                           return name;
                         });

}  // namespace
}  // namespace qpgate::verbs::conformance
