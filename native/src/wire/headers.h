// Typed views of the IBA transport headers (IBA 9.2-9.3, rxe_hdr.h).
//
// A view wraps a pointer to the first byte of its header and knows the field
// layout; it neither owns nor bounds-checks (the decoder proved the header is
// inside the buffer before handing a view out). `XView` reads; `XRef` also
// writes and is what the encoder uses. These are the only places in qpgate
// that know a field's byte offset.
#pragma once

#include <cstdint>
#include <type_traits>

#include "wire/byte_order.h"
#include "wire/psn.h"

namespace qpgate::wire {

inline constexpr std::uint32_t kQpnMask = 0x00ffffff;
// IB_MULTICAST_QPN: a UD packet to a multicast group (rxe_recv.c).
inline constexpr std::uint32_t kMulticastQpn = 0x00ffffff;
inline constexpr std::uint16_t kDefaultPkey = 0xffff;

template <class Byte>
class HeaderBase {
 public:
  explicit HeaderBase(Byte* p) : p_(p) {}
  Byte* data() const { return p_; }

 protected:
  Byte* p_;
};

// Base Transport Header, 12 bytes.
//   0 opcode | 1 SE MigReq PadCnt(2) TVer(4) | 2-3 P_Key
//   4 FECN BECN resv6 | 5-7 DestQP | 8 AckReq resv7 | 9-11 PSN
template <class Byte>
class BthT : public HeaderBase<Byte> {
  using HeaderBase<Byte>::p_;

 public:
  using HeaderBase<Byte>::HeaderBase;
  static constexpr bool kWritable = !std::is_const_v<Byte>;
  static constexpr std::uint8_t kSe = 0x80, kMigReq = 0x40, kPadMask = 0x30, kTverMask = 0x0f;
  static constexpr std::uint8_t kFecn = 0x80, kBecn = 0x40, kResv6Mask = 0x3f;
  static constexpr std::uint8_t kAckReq = 0x80, kResv7Mask = 0x7f;

  std::uint8_t opcode() const { return p_[0]; }
  bool solicited() const { return (p_[1] & kSe) != 0; }
  bool mig_req() const { return (p_[1] & kMigReq) != 0; }
  std::uint8_t pad_count() const { return static_cast<std::uint8_t>((p_[1] & kPadMask) >> 4); }
  std::uint8_t tver() const { return static_cast<std::uint8_t>(p_[1] & kTverMask); }
  std::uint16_t pkey() const { return load_be16(p_ + 2); }
  bool fecn() const { return (p_[4] & kFecn) != 0; }
  bool becn() const { return (p_[4] & kBecn) != 0; }
  std::uint8_t resv6() const { return static_cast<std::uint8_t>(p_[4] & kResv6Mask); }
  std::uint32_t dest_qpn() const { return load_be24(p_ + 5); }
  bool ack_req() const { return (p_[8] & kAckReq) != 0; }
  std::uint8_t resv7() const { return static_cast<std::uint8_t>(p_[8] & kResv7Mask); }
  std::uint32_t psn() const { return load_be24(p_ + 9); }

  void set_opcode(std::uint8_t v) const requires kWritable { p_[0] = v; }
  void set_flags(bool se, bool mig_req, std::uint8_t pad, std::uint8_t tver) const requires kWritable {
    p_[1] = static_cast<std::uint8_t>((se ? kSe : 0) | (mig_req ? kMigReq : 0) | ((pad & 3) << 4) |
                                      (tver & kTverMask));
  }
  void set_pkey(std::uint16_t v) const requires kWritable { store_be16(p_ + 2, v); }
  void set_dest_qpn(std::uint32_t qpn, bool fecn = false, bool becn = false) const requires kWritable {
    p_[4] = static_cast<std::uint8_t>((fecn ? kFecn : 0) | (becn ? kBecn : 0));
    store_be24(p_ + 5, qpn & kQpnMask);
  }
  void set_psn(std::uint32_t psn, bool ack_req) const requires kWritable {
    p_[8] = ack_req ? kAckReq : 0;
    store_be24(p_ + 9, psn & kPsnMask);
  }
};

// Datagram Extended Transport Header, 8 bytes: Q_Key, resv8, SrcQP.
template <class Byte>
class DethT : public HeaderBase<Byte> {
  using HeaderBase<Byte>::p_;

 public:
  using HeaderBase<Byte>::HeaderBase;
  static constexpr bool kWritable = !std::is_const_v<Byte>;
  std::uint32_t qkey() const { return load_be32(p_); }
  std::uint8_t resv8() const { return p_[4]; }
  std::uint32_t src_qpn() const { return load_be24(p_ + 5); }
  void set(std::uint32_t qkey, std::uint32_t src_qpn) const requires kWritable {
    store_be32(p_, qkey);
    p_[4] = 0;
    store_be24(p_ + 5, src_qpn & kQpnMask);
  }
};

// RDMA Extended Transport Header, 16 bytes: VA, R_Key, DMA length.
template <class Byte>
class RethT : public HeaderBase<Byte> {
  using HeaderBase<Byte>::p_;

 public:
  using HeaderBase<Byte>::HeaderBase;
  static constexpr bool kWritable = !std::is_const_v<Byte>;
  std::uint64_t va() const { return load_be64(p_); }
  std::uint32_t rkey() const { return load_be32(p_ + 8); }
  std::uint32_t dma_len() const { return load_be32(p_ + 12); }
  void set(std::uint64_t va, std::uint32_t rkey, std::uint32_t dma_len) const requires kWritable {
    store_be64(p_, va);
    store_be32(p_ + 8, rkey);
    store_be32(p_ + 12, dma_len);
  }
};

// Atomic Extended Transport Header, 28 bytes, packed (not 8-aligned on the
// wire, which is why rxe marks struct rxe_atmeth __packed).
template <class Byte>
class AtomicEthT : public HeaderBase<Byte> {
  using HeaderBase<Byte>::p_;

 public:
  using HeaderBase<Byte>::HeaderBase;
  static constexpr bool kWritable = !std::is_const_v<Byte>;
  std::uint64_t va() const { return load_be64(p_); }
  std::uint32_t rkey() const { return load_be32(p_ + 8); }
  std::uint64_t swap_add() const { return load_be64(p_ + 12); }
  std::uint64_t compare() const { return load_be64(p_ + 20); }
  void set(std::uint64_t va, std::uint32_t rkey, std::uint64_t swap_add,
           std::uint64_t compare) const requires kWritable {
    store_be64(p_, va);
    store_be32(p_ + 8, rkey);
    store_be64(p_ + 12, swap_add);
    store_be64(p_ + 20, compare);
  }
};

// ACK Extended Transport Header, 4 bytes: syndrome, MSN.
template <class Byte>
class AethT : public HeaderBase<Byte> {
  using HeaderBase<Byte>::p_;

 public:
  using HeaderBase<Byte>::HeaderBase;
  static constexpr bool kWritable = !std::is_const_v<Byte>;
  std::uint8_t syndrome() const { return p_[0]; }
  std::uint32_t msn() const { return load_be24(p_ + 1); }
  void set(std::uint8_t syndrome, std::uint32_t msn) const requires kWritable {
    p_[0] = syndrome;
    store_be24(p_ + 1, msn & 0x00ffffff);
  }
};

// Atomic ACK Extended Transport Header, 8 bytes: the original remote value,
// big-endian on the wire (IBA 9.5.4; mlx5 hands it to the app unswapped).
template <class Byte>
class AtomicAckEthT : public HeaderBase<Byte> {
  using HeaderBase<Byte>::p_;

 public:
  using HeaderBase<Byte>::HeaderBase;
  static constexpr bool kWritable = !std::is_const_v<Byte>;
  std::uint64_t orig_remote_data() const { return load_be64(p_); }
  void set(std::uint64_t v) const requires kWritable { store_be64(p_, v); }
};

// Immediate data, 4 bytes. Verbs treats imm_data as an opaque __be32; we
// expose it as the big-endian number, i.e. what ntohl(wc.imm_data) gives.
template <class Byte>
class ImmDtT : public HeaderBase<Byte> {
  using HeaderBase<Byte>::p_;

 public:
  using HeaderBase<Byte>::HeaderBase;
  static constexpr bool kWritable = !std::is_const_v<Byte>;
  std::uint32_t imm() const { return load_be32(p_); }
  void set(std::uint32_t v) const requires kWritable { store_be32(p_, v); }
};

using BthView = BthT<const std::uint8_t>;
using BthRef = BthT<std::uint8_t>;
using DethView = DethT<const std::uint8_t>;
using DethRef = DethT<std::uint8_t>;
using RethView = RethT<const std::uint8_t>;
using RethRef = RethT<std::uint8_t>;
using AtomicEthView = AtomicEthT<const std::uint8_t>;
using AtomicEthRef = AtomicEthT<std::uint8_t>;
using AethView = AethT<const std::uint8_t>;
using AethRef = AethT<std::uint8_t>;
using AtomicAckEthView = AtomicAckEthT<const std::uint8_t>;
using AtomicAckEthRef = AtomicAckEthT<std::uint8_t>;
using ImmDtView = ImmDtT<const std::uint8_t>;
using ImmDtRef = ImmDtT<std::uint8_t>;

// AETH syndrome (IBA 9.7.5.2.3, rxe_hdr.h): top 3 bits select ACK / RNR NAK /
// NAK, low 5 bits are credits, RNR timer code or NAK code.
namespace aeth {
inline constexpr std::uint8_t kTypeMask = 0xe0;
inline constexpr std::uint8_t kAck = 0x00;
inline constexpr std::uint8_t kRnrNak = 0x20;
inline constexpr std::uint8_t kNak = 0x60;
inline constexpr std::uint8_t kValueMask = 0x1f;
inline constexpr std::uint8_t kCreditsInvalid = 0x1f;  // "unlimited credits" / no end-to-end flow control
inline constexpr std::uint8_t kNakPsnSeqError = 0x60;
inline constexpr std::uint8_t kNakInvalidRequest = 0x61;
inline constexpr std::uint8_t kNakRemoteAccessError = 0x62;
inline constexpr std::uint8_t kNakRemoteOperationalError = 0x63;
inline constexpr std::uint8_t kNakInvalidRdRequest = 0x64;
}  // namespace aeth

}  // namespace qpgate::wire
