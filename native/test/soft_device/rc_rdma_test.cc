// Issue 3, "Done when": RDMA WRITE and READ move exact bytes; 10,000
// concurrent FETCH_ADDs from 4 QPs sum exactly; CMP_SWAP semantics hold; a
// retried atomic is answered from the responder's cache, not executed
// twice. Real UDP on loopback between two soft devices (127.62.1x.y).
#include <gtest/gtest.h>

#include <random>

#include "rc_pair.h"
#include "verbs/soft/fault.h"
#include "wire/opcode.h"

namespace qpgate::verbs::soft {
namespace {

using namespace std::chrono_literals;
using test::Endpoint;
using test::RcOptions;
using test::RcPair;

// `s` must outlive the post (the WR points at it).
SendWr rdma_wr(std::uint64_t id, WrOpcode op, const Sge& s, std::uint64_t remote_addr, std::uint32_t rkey) {
  SendWr wr;
  wr.wr_id = id;
  wr.opcode = op;
  wr.sg_list = std::span<const Sge>(&s, 1);
  wr.send_flags = SendFlag::SIGNALED;
  wr.rdma.remote_addr = remote_addr;
  wr.rdma.rkey = rkey;
  return wr;
}

SendWr atomic_wr(std::uint64_t id, WrOpcode op, const Sge& s, std::uint64_t remote_addr, std::uint32_t rkey,
                 std::uint64_t compare_add, std::uint64_t swap) {
  SendWr wr;
  wr.wr_id = id;
  wr.opcode = op;
  wr.sg_list = std::span<const Sge>(&s, 1);
  wr.send_flags = SendFlag::SIGNALED;
  wr.atomic.remote_addr = remote_addr;
  wr.atomic.rkey = rkey;
  wr.atomic.compare_add = compare_add;
  wr.atomic.swap = swap;
  return wr;
}

std::uint64_t word_at(Endpoint& e, std::size_t off) {
  std::uint64_t v = 0;
  std::memcpy(&v, e.at(off), 8);
  return v;
}

TEST(SoftRcRdma, WriteAndReadMoveExactBytesAcrossSegmentsAndNothingElse) {
  RcPair p("127.62.10.1", "127.62.10.2", 1 << 20);
  ASSERT_TRUE(p.ok());
  std::mt19937_64 rng(7);
  for (auto& b : p.a.buffer) b = static_cast<std::uint8_t>(rng());
  std::fill(p.b.buffer.begin(), p.b.buffer.end(), 0xEE);
  // Lengths around the 1024-byte MTU, odd offsets, up to 64 KiB + 3.
  const std::uint32_t lengths[] = {1, 7, 1023, 1024, 1025, 4096, 65536 + 3};
  std::size_t dst = 100;
  std::uint64_t id = 0;
  std::vector<std::pair<std::size_t, std::uint32_t>> written;
  for (std::uint32_t len : lengths) {
    ++id;
    const Sge sg = p.a.sge(3 + id, len);
    const SendWr wr = rdma_wr(id, WrOpcode::RDMA_WRITE, sg, p.b.addr(dst), p.b.mr->rkey());
    ASSERT_TRUE(p.qa->post_send(wr).ok());
    written.emplace_back(dst, len);
    dst += len + 13;
  }
  auto wcs = p.poll(p.a, std::size(lengths), 5000ms);
  ASSERT_EQ(wcs.size(), std::size(lengths));
  for (const Wc& wc : wcs) EXPECT_EQ(wc.status, WcStatus::IBV_WC_SUCCESS) << wc_status_name(wc.status);
  // Exactly the written ranges changed, byte for byte.
  std::vector<std::uint8_t> expect(p.b.buffer.size(), 0xEE);
  id = 0;
  for (auto [off, len] : written) {
    ++id;
    std::memcpy(expect.data() + off, p.a.at(3 + id), len);
  }
  EXPECT_TRUE(expect == p.b.buffer);

  // READ it all back into a zeroed area of A: the same bytes.
  const std::size_t back = 512 * 1024;
  std::fill(p.a.buffer.begin() + back, p.a.buffer.end(), 0);
  std::size_t into = back;
  id = 100;
  for (auto [off, len] : written) {
    const Sge sg = p.a.sge(into, len);
    const SendWr wr = rdma_wr(id++, WrOpcode::RDMA_READ, sg, p.b.addr(off), p.b.mr->rkey());
    ASSERT_TRUE(p.qa->post_send(wr).ok());
    into += len;
  }
  wcs = p.poll(p.a, written.size(), 5000ms);
  ASSERT_EQ(wcs.size(), written.size());
  for (const Wc& wc : wcs) {
    EXPECT_EQ(wc.status, WcStatus::IBV_WC_SUCCESS);
    EXPECT_EQ(wc.opcode, WcOpcode::RDMA_READ);
  }
  into = back;
  for (auto [off, len] : written) {
    EXPECT_EQ(std::memcmp(p.a.at(into), p.b.at(off), len), 0) << "READ of " << len << " bytes at " << off;
    into += len;
  }
  EXPECT_EQ(p.a.at(into)[0], 0);  // nothing past the last READ
}

TEST(SoftRcAtomics, TenThousandConcurrentFetchAddsFromFourQpsSumExactly) {
  constexpr int kQps = 4;
  constexpr int kPerQp = 2500;
  RcOptions o;
  o.max_send_wr = 64;
  Endpoint target("127.62.11.1", 4096);
  Endpoint client("127.62.11.2", 1 << 20, 4096);
  ASSERT_TRUE(target.ok() && client.ok());
  const std::uint64_t start = 1'000'000'000'000ULL;
  std::memcpy(target.at(64), &start, 8);
  std::vector<std::unique_ptr<QueuePair>> tq, cq;
  for (int q = 0; q < kQps; ++q) {
    tq.push_back(target.rc_qp(o));
    cq.push_back(client.rc_qp(o));
  }
  for (int q = 0; q < kQps; ++q) {
    Endpoint::connect(*tq[q], client.device->gid(), cq[q]->qp_num(), 0x10 * q, 0x20 * q, o);
    Endpoint::connect(*cq[q], target.device->gid(), tq[q]->qp_num(), 0x20 * q, 0x10 * q, o);
  }
  // Each FETCH_ADD adds its own distinct amount (q*kPerQp + i + 1), so the
  // returned values must be distinct and the sum is known exactly.
  std::uint64_t expected_sum = 0;
  std::vector<int> posted(kQps, 0), done(kQps, 0);
  std::vector<std::uint64_t> seen;
  seen.reserve(kQps * kPerQp);
  const auto t0 = std::chrono::steady_clock::now();
  int total_done = 0;
  while (total_done < kQps * kPerQp && test::ms_since(t0) < 60'000) {
    for (int q = 0; q < kQps; ++q) {
      while (posted[q] < kPerQp && posted[q] - done[q] < 32) {
        const int i = posted[q];
        const std::uint64_t add = static_cast<std::uint64_t>(q * kPerQp + i + 1);
        const std::size_t slot = (static_cast<std::size_t>(q) * kPerQp + static_cast<std::size_t>(i)) * 8;
        const Sge sg = client.sge(slot, 8);
        const SendWr wr = atomic_wr(static_cast<std::uint64_t>(q) << 32 | static_cast<std::uint64_t>(i),
                                    WrOpcode::ATOMIC_FETCH_AND_ADD, sg, target.addr(64),
                                    target.mr->rkey(), add, 0);
        ASSERT_TRUE(cq[q]->post_send(wr).ok());
        expected_sum += add;
        ++posted[q];
      }
    }
    target.work();
    client.work();
    Wc wc[64];
    auto got = client.cq->poll(wc);
    for (std::size_t k = 0; got.ok() && k < *got; ++k) {
      ASSERT_EQ(wc[k].status, WcStatus::IBV_WC_SUCCESS) << wc_status_name(wc[k].status);
      ++done[wc[k].wr_id >> 32];
      ++total_done;
    }
  }
  ASSERT_EQ(total_done, kQps * kPerQp) << "in " << test::ms_since(t0) << " ms";
  EXPECT_EQ(word_at(target, 64), start + expected_sum);
  // Every FETCH_ADD saw a distinct prior value: none was executed twice or lost.
  for (std::size_t i = 0; i < std::size_t{kQps} * kPerQp; ++i) seen.push_back(word_at(client, i * 8));
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(std::adjacent_find(seen.begin(), seen.end()), seen.end());
  EXPECT_EQ(seen.front(), start);
  std::uint64_t executed = 0;
  for (auto& q : tq) executed += target.soft(*q).counters().atomics_executed.get();
  EXPECT_EQ(executed, std::uint64_t{kQps} * kPerQp);
}

TEST(SoftRcAtomics, CompareAndSwapSwapsOnlyOnEqualAndAlwaysReturnsTheOriginal) {
  RcPair p("127.62.12.1", "127.62.12.2", 4096);
  ASSERT_TRUE(p.ok());
  const std::uint64_t v0 = 0x1111222233334444ULL;
  std::memcpy(p.b.at(8), &v0, 8);
  // Unequal compare: no swap, the original comes back.
  const Sge sg0 = p.a.sge(0, 8);
  ASSERT_TRUE(p.qa->post_send(atomic_wr(1, WrOpcode::ATOMIC_CMP_AND_SWP, sg0, p.b.addr(8), p.b.mr->rkey(),
                                        v0 + 1, 0xdead))
                  .ok());
  auto wcs = p.poll(p.a, 1, 2000ms);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, WcStatus::IBV_WC_SUCCESS);
  EXPECT_EQ(wcs[0].opcode, WcOpcode::COMP_SWAP);
  EXPECT_EQ(word_at(p.a, 0), v0);
  EXPECT_EQ(word_at(p.b, 8), v0);
  // Equal compare: swapped, the original comes back.
  const Sge sg16 = p.a.sge(16, 8);
  ASSERT_TRUE(p.qa->post_send(atomic_wr(2, WrOpcode::ATOMIC_CMP_AND_SWP, sg16, p.b.addr(8), p.b.mr->rkey(),
                                        v0, 0xfeedfacecafebeefULL))
                  .ok());
  wcs = p.poll(p.a, 1, 2000ms);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, WcStatus::IBV_WC_SUCCESS);
  EXPECT_EQ(word_at(p.a, 16), v0);
  EXPECT_EQ(word_at(p.b, 8), 0xfeedfacecafebeefULL);
  // The neighbours of the word are untouched.
  EXPECT_EQ(word_at(p.b, 0), 0u);
  EXPECT_EQ(word_at(p.b, 16), 0u);
}

TEST(SoftRcAtomics, ARetriedFetchAddIsAnsweredFromTheCacheNotExecutedTwice) {
  RcOptions o;
  o.timeout = 10;  // ≈ 4.2 ms
  RcPair p("127.62.13.1", "127.62.13.2", 4096, o);
  ASSERT_TRUE(p.ok());
  const std::uint64_t v0 = 500;
  std::memcpy(p.b.at(24), &v0, 8);
  // The responder's first ATOMIC ACKNOWLEDGE is lost on its way out.
  FaultPlan plan;
  plan.tx.drop = 1.0;
  plan.opcodes = {static_cast<std::uint8_t>(wire::Opcode::kRcAtomicAcknowledge)};
  plan.max_faults = 1;
  p.b.device->inject_faults(plan);
  const auto t0 = std::chrono::steady_clock::now();
  const Sge sg = p.a.sge(0, 8);
  ASSERT_TRUE(p.qa->post_send(atomic_wr(1, WrOpcode::ATOMIC_FETCH_AND_ADD, sg, p.b.addr(24),
                                        p.b.mr->rkey(), 7, 0))
                  .ok());
  auto wcs = p.poll(p.a, 1, 2000ms);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, WcStatus::IBV_WC_SUCCESS);
  EXPECT_LT(test::ms_since(t0), 500);  // one ACK timeout (≈ 4 ms), not a crawl
  EXPECT_EQ(p.b.device->fault_counters().tx.dropped.get(), 1u);
  EXPECT_EQ(word_at(p.b, 24), v0 + 7);  // added once
  EXPECT_EQ(word_at(p.a, 0), v0);       // the original value, from the cache
  const auto& resp = p.b.soft(*p.qb).counters();
  EXPECT_EQ(resp.atomics_executed.get(), 1u);
  // At least the one retry; a loaded machine can stretch the 4 ms ACK timer
  // past a second retry, which must be answered from the cache too.
  EXPECT_GE(resp.atomics_replayed.get(), 1u);
  EXPECT_GE(p.a.soft(*p.qa).counters().timeouts.get(), 1u);
}

}  // namespace
}  // namespace qpgate::verbs::soft
