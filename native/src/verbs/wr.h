// Work requests and work completions: ibv_sge, ibv_send_wr, ibv_recv_wr,
// ibv_wc, in C++ form. A WR's scatter/gather list is a std::span (no
// num_sge to disagree with it). WRs chain through `next` like ibverbs, or
// are posted as a std::span; see QueuePair::post_send.
//
// Byte order: imm_data is in HOST order here (ibverbs keeps it big-endian);
// the wire codec writes ImmDt big-endian and the ibv backend converts.
// Atomic results land in the local buffer in host order (some mlx5
// configurations write network order: verbs/ibv/ibv_device.h says what it sees).
#pragma once

#include <cstdint>
#include <span>

#include "verbs/types.h"

namespace qpgate::verbs {

class AddressHandle;

// ibv_sge: a piece of registered local memory.
struct Sge {
  std::uint64_t addr = 0;
  std::uint32_t length = 0;
  std::uint32_t lkey = 0;
};

struct SendWr {
  std::uint64_t wr_id = 0;
  const SendWr* next = nullptr;  // used by the chained post_send overload only
  std::span<const Sge> sg_list;
  WrOpcode opcode = WrOpcode::SEND;
  SendFlags send_flags;
  std::uint32_t imm_data = 0;  // *_WITH_IMM, host order

  struct Rdma {  // RDMA_WRITE*, RDMA_READ
    std::uint64_t remote_addr = 0;
    std::uint32_t rkey = 0;
  } rdma;
  struct Atomic {  // ATOMIC_*: 8 bytes at an 8-byte aligned remote_addr
    std::uint64_t remote_addr = 0;
    std::uint64_t compare_add = 0;  // CMP_AND_SWP: compare; FETCH_AND_ADD: add
    std::uint64_t swap = 0;
    std::uint32_t rkey = 0;
  } atomic;
  struct Ud {  // UD QPs
    const AddressHandle* ah = nullptr;
    std::uint32_t remote_qpn = 0;  // kMulticastQpn for a multicast AH
    std::uint32_t remote_qkey = 0;  // high bit set: the QP's own Q_Key is sent instead (the IBA controlled-Q_Key rule; unverified)
  } ud;
};

struct RecvWr {
  std::uint64_t wr_id = 0;
  const RecvWr* next = nullptr;  // used by the chained post_recv overload only
  std::span<const Sge> sg_list;
};

// ibv_wc.
struct Wc {
  std::uint64_t wr_id = 0;
  WcStatus status = WcStatus::IBV_WC_SUCCESS;
  WcOpcode opcode = WcOpcode::SEND;  // only meaningful when status is success (as in ibverbs)
  std::uint32_t vendor_err = 0;
  std::uint32_t byte_len = 0;   // receives: bytes placed (UD: including the 40-byte GRH area)
  std::uint32_t imm_data = 0;   // when wc_flags has WITH_IMM; host order
  std::uint32_t qp_num = 0;
  std::uint32_t src_qp = 0;     // UD receives: the sender's QPN
  WcFlags wc_flags;
  std::uint16_t pkey_index = 0;
  std::uint16_t slid = 0;
  std::uint8_t sl = 0;
  std::uint8_t dlid_path_bits = 0;
};

}  // namespace qpgate::verbs
