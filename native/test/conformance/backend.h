// One verbs test suite, two backends (issue 7): every test in this folder is
// written once against verbs/device.h and runs on
//   soft — two soft RoCEv2 devices on loopback (127.64.x.y), driven by the
//          test's own loop (do_work), as the engine would drive them;
//   ibv  — two rxe devices on a veth pair in the rdma-vm guest (rxe_a,
//          rxe_b from test/rdma-vm/run --veth), driven by the kernel;
//   soft-rxe, rxe-soft — interop: our soft backend in network namespace
//          qpgate-peer (10.77.2.2, test/rdma-vm/run --netns) against the
//          kernel's rxe_v (10.77.2.1) across a veth, each side in turn the
//          requester and the responder (so each serves the other's RDMA
//          READ/WRITE and atomics, and each sends the multicast). The soft
//          side receives in the af-packet mode and must verify every rxe
//          ICRC (checked after each test).
// Without the rxe devices the ibv and interop cases skip, unless
// QPGATE_REQUIRE_IBV=1 (ctest conformance.in_vm sets it), when they fail.
// Only what needs no fault injector is here: the soft backend's fault tests
// stay in soft_device/.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "verbs/device.h"
#include "verbs/soft/soft_device.h"

namespace qpgate::verbs::conformance {

// One end: a device with a PD, a CQ and a registered buffer.
struct Side {
  std::unique_ptr<Device> device;
  std::unique_ptr<ProtectionDomain> pd;
  std::unique_ptr<CompletionQueue> cq;
  std::vector<std::uint8_t> buffer = std::vector<std::uint8_t>(256 * 1024);
  std::unique_ptr<MemoryRegion> mr;
  Gid gid;                         // the GID peers address
  std::uint8_t sgid_index = 0;
  std::function<void()> work;      // soft: one duty cycle of the device; ibv: nothing
  // Runs fn in the side's network namespace: calls that open sockets (a
  // multicast join) must be made there. Default: here.
  std::function<void(const std::function<void()>&)> in_netns = [](const std::function<void()>& fn) { fn(); };
  const soft::SoftDevice* soft = nullptr;  // the soft side of an interop pair

  Sge sge(std::size_t offset, std::uint32_t length) const {
    return Sge{reinterpret_cast<std::uintptr_t>(buffer.data()) + offset, length, mr->lkey()};
  }
  std::uint64_t addr(std::size_t offset) const { return mr->addr() + offset; }
  AhAttr ah_to(const Side& peer) const {
    AhAttr a;
    a.dgid = peer.gid;
    a.sgid_index = sgid_index;
    return a;
  }
};

// The fixture: side[0] and side[1] of the backend named by the parameter.
class Conformance : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override;
  void TearDown() override;

  // A QP of `type` on side s with both CQs on the side's CQ.
  std::unique_ptr<QueuePair> make_qp(int s, QpType type, std::uint32_t send_wr = 64, std::uint32_t recv_wr = 64);
  // RC: both QPs RESET → RTS towards each other (verbs::connect_rc).
  void connect(QueuePair& q0, QueuePair& q1, std::uint8_t min_rnr_timer = 1);
  // UD: RESET → RTS with `qkey`.
  static void ready_ud(QueuePair& q, std::uint32_t qkey);
  // Polls side s's CQ, driving both sides, until n completions or the timeout.
  std::vector<Wc> poll(int s, std::size_t n, std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // Drives both sides for a while (for "nothing arrives" checks).
  void idle(std::chrono::milliseconds how_long);

  Side side[2];
};

std::string wc_text(const Wc& wc);

}  // namespace qpgate::verbs::conformance
