#include "wire/packet.h"

#include <cstring>

namespace qpgate::wire {

Result<Packet> decode(std::span<const std::uint8_t> roce) {
  if (roce.size() < kBthBytes) return DecodeError::kTruncated;
  const BthView bth(roce.data());
  const OpcodeInfo* op = opcode_info(bth.opcode());
  if (op == nullptr) return DecodeError::kUnknownOpcode;
  // IBA C9-1 (rxe hdr_check): only transport version 0 exists.
  if (bth.tver() != 0) return DecodeError::kBadTver;
  if (roce.size() < std::size_t{op->length} + kIcrcBytes) return DecodeError::kTruncated;
  // Reserved bits are sent as zero (IBA 9.2); a non-zero value means a
  // different or newer format we cannot interpret, so it is not accepted.
  if (bth.resv6() != 0 || bth.resv7() != 0) return DecodeError::kReservedNotZero;
  if (op->has(Header::kDeth) && DethView(roce.data() + op->offset_of(Header::kDeth)).resv8() != 0) {
    return DecodeError::kReservedNotZero;
  }
  // Every transport packet is padded to a 4-byte multiple (IBA 9.2.2 C9-2:
  // all headers are multiples of 4 and PadCnt rounds the payload up).
  if (roce.size() % 4 != 0) return DecodeError::kMisalignedLength;
  const std::size_t body = roce.size() - op->length - kIcrcBytes;  // payload + pad
  const std::uint8_t pad = bth.pad_count();
  if (!op->carries_payload()) {
    if (pad != 0) return DecodeError::kBadPadCount;
    if (body != 0) return DecodeError::kUnexpectedPayload;
  } else {
    // FIRST and MIDDLE packets carry exactly one PMTU (a multiple of 4), so
    // only the packet that ends a message may pad (IBA 9.7.6.1.3; rxe's
    // requester pads only the final packet).
    if (pad != 0 && !op->is_last()) return DecodeError::kBadPadCount;
    // rxe hdr_check: paylen < header + pad + ICRC is dropped.
    if (pad > body) return DecodeError::kBadPadCount;
  }
  Packet p;
  p.op = op;
  p.bytes = roce;
  p.pad = pad;
  p.payload = roce.subspan(op->length, body - pad);
  return p;
}

Result<Packet> decode_verified(const OuterView& outer) {
  Result<Packet> r = decode(outer.roce);
  if (!r.ok()) return r;
  if (!icrc_verify(outer)) return DecodeError::kIcrcMismatch;
  return r;
}

Result<Packet> decode_verified(std::span<const std::uint8_t> roce, const UdpFlow& flow) {
  Result<Packet> r = decode(roce);
  if (!r.ok()) return r;
  if (!icrc_verify(roce, flow)) return DecodeError::kIcrcMismatch;
  return r;
}

Result<Packet> decode_verified(std::span<const std::uint8_t> roce, std::span<const std::uint8_t> ip_udp) {
  Result<Packet> r = decode(roce);
  if (!r.ok()) return r;
  if (!icrc_verify(roce, ip_udp)) return DecodeError::kIcrcMismatch;
  return r;
}

PacketFields fields_of(const Packet& p) {
  PacketFields f;
  const BthView b = p.bth();
  f.bth = BthFields{b.opcode(), b.solicited(), b.mig_req(), b.pkey(), b.fecn(), b.becn(),
                    b.dest_qpn(), b.ack_req(), b.psn()};
  if (auto h = p.deth()) f.deth = DethFields{h->qkey(), h->src_qpn()};
  if (auto h = p.reth()) f.reth = RethFields{h->va(), h->rkey(), h->dma_len()};
  if (auto h = p.atomic_eth()) {
    f.atomic_eth = AtomicEthFields{h->va(), h->rkey(), h->swap_add(), h->compare()};
  }
  if (auto h = p.aeth()) f.aeth = AethFields{h->syndrome(), h->msn()};
  if (auto h = p.atomic_ack_eth()) f.orig_remote_data = h->orig_remote_data();
  if (auto h = p.imm_dt()) f.imm = h->imm();
  return f;
}

std::string_view encode_error_name(EncodeError e) {
  switch (e) {
    case EncodeError::kUnknownOpcode: return "unknown_opcode";
    case EncodeError::kPayloadNotAllowed: return "payload_not_allowed";
    case EncodeError::kBufferTooSmall: return "buffer_too_small";
  }
  return "unknown";
}

namespace {
std::uint8_t pad_for(std::size_t payload_len) {
  return static_cast<std::uint8_t>((4 - payload_len % 4) % 4);
}
}  // namespace

std::size_t encoded_size(std::uint8_t opcode, std::size_t payload_len) {
  const OpcodeInfo* op = opcode_info(opcode);
  if (op == nullptr) return 0;
  return op->length + payload_len + pad_for(payload_len) + kIcrcBytes;
}

Result<std::size_t, EncodeError> encode(const PacketFields& f,
                                        std::span<const std::uint8_t> payload,
                                        std::span<std::uint8_t> out) {
  const OpcodeInfo* op = opcode_info(f.bth.opcode);
  if (op == nullptr) return EncodeError::kUnknownOpcode;
  if (!payload.empty() && !op->carries_payload()) return EncodeError::kPayloadNotAllowed;
  const std::size_t size = encoded_size(f.bth.opcode, payload.size());
  if (out.size() < size) return EncodeError::kBufferTooSmall;
  std::uint8_t* base = out.data();
  // Zero the headers first: reserved bits and the CNP's 16 reserved bytes
  // must go out as zero (IBA 9.2), and a Ref only writes its own fields.
  std::memset(base, 0, op->length);
  const std::uint8_t pad = pad_for(payload.size());
  const BthRef bth(base);
  bth.set_opcode(f.bth.opcode);
  bth.set_flags(f.bth.solicited, f.bth.mig_req, pad, 0);
  bth.set_pkey(f.bth.pkey);
  bth.set_dest_qpn(f.bth.dest_qpn, f.bth.fecn, f.bth.becn);
  bth.set_psn(f.bth.psn, f.bth.ack_req);
  auto at = [&](Header h) { return base + op->offset_of(h); };
  if (op->has(Header::kDeth)) DethRef(at(Header::kDeth)).set(f.deth.qkey, f.deth.src_qpn);
  if (op->has(Header::kReth)) {
    RethRef(at(Header::kReth)).set(f.reth.va, f.reth.rkey, f.reth.dma_len);
  }
  if (op->has(Header::kAtomicEth)) {
    AtomicEthRef(at(Header::kAtomicEth))
        .set(f.atomic_eth.va, f.atomic_eth.rkey, f.atomic_eth.swap_add, f.atomic_eth.compare);
  }
  if (op->has(Header::kAeth)) AethRef(at(Header::kAeth)).set(f.aeth.syndrome, f.aeth.msn);
  if (op->has(Header::kAtomicAckEth)) AtomicAckEthRef(at(Header::kAtomicAckEth)).set(f.orig_remote_data);
  if (op->has(Header::kImmDt)) ImmDtRef(at(Header::kImmDt)).set(f.imm);
  std::uint8_t* tail = base + op->length;
  if (!payload.empty()) std::memcpy(tail, payload.data(), payload.size());
  std::memset(tail + payload.size(), 0, pad + kIcrcBytes);
  return size;
}

Result<std::size_t, EncodeError> encode(const PacketFields& fields,
                                        std::span<const std::uint8_t> payload,
                                        const UdpFlow& flow, std::span<std::uint8_t> out) {
  Result<std::size_t, EncodeError> r = encode(fields, payload, out);
  if (r.ok()) icrc_store(out.first(*r), flow);
  return r;
}

}  // namespace qpgate::wire
