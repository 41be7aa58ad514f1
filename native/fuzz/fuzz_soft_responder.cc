// libFuzzer: arbitrary (but decodable) RC packets against a SoftQp in RTS
// with one registered region. The region is its own heap allocation, so
// ASan reports any byte touched outside it; the QP must never crash,
// whatever the opcode sequence, PSNs, RETH/AtomicETH fields or payloads.
//
// Input: a sequence of records, each steering one packet:
//   [opcode idx][flags][psn delta][va mode + offset (4)][len (2)][rkey mode][imm/syndrome ...] payload...
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "verbs/soft/soft_qp.h"
#include "wire/opcode.h"
#include "wire/packet.h"
#include "wire/psn.h"

namespace {

using namespace qpgate;
using namespace qpgate::verbs;
using namespace qpgate::verbs::soft;

class NullTx final : public PacketTx {
 public:
  bool transmit(const TxPacket&) override { return (++n_ % 7) != 0; }  // some back-pressure

 private:
  std::uint64_t n_ = 0;
};

class NullMembership final : public MulticastMembership {
 public:
  Status join(const wire::IpAddress&) override { return {}; }
  Status leave(const wire::IpAddress&) override { return {}; }
};

struct Reader {
  const std::uint8_t* p;
  std::size_t n;
  std::uint8_t u8() { if (n == 0) return 0; --n; return *p++; }
  std::uint16_t u16() { return static_cast<std::uint16_t>(u8() | (u8() << 8)); }
  std::uint32_t u32() { return static_cast<std::uint32_t>(u16() | (std::uint32_t{u16()} << 16)); }
};

constexpr std::uint8_t kOpcodes[] = {0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a,
                                     0x0b, 0x0c, 0x0d, 0x0f, 0x10, 0x11, 0x12, 0x13, 0x14};
constexpr std::size_t kRegion = 8192;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  NullTx tx;
  NullMembership membership;
  MrTable mrs;
  AsyncEventQueue events;
  McastTable mcast;
  SoftCompletionQueue scq(64, 1, 0, &events), rcq(64, 2, 0, &events);
  auto region = std::make_unique<std::uint8_t[]>(kRegion);  // exactly the MR: ASan guards both ends
  const auto base = reinterpret_cast<std::uint64_t>(region.get());
  auto mr = mrs.register_mr(1, base, kRegion, kAllAccess);
  if (!mr.ok()) return 0;

  QpInitAttr init;
  init.qp_type = QpType::RC;
  init.cap.max_send_wr = 16;
  init.cap.max_recv_wr = 16;
  init.cap.max_send_sge = 2;
  init.cap.max_recv_sge = 2;
  init.send_cq = &scq;
  init.recv_cq = &rcq;
  const wire::IpAddress local = wire::IpAddress::v4(10, 0, 0, 1);
  SoftQpContext ctx{tx, mrs, events, mcast, membership, local, Gid::from_ipv4(0x0a000001), {local}, 1, &scq, &rcq, nullptr, 0x11, init};
  SoftQp qp(ctx);
  QpAttr a;
  a.qp_state = QpState::INIT;
  a.qp_access_flags = Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC;
  (void)qp.modify(a, QpAttrMask::STATE | QpAttrMask::PKEY_INDEX | QpAttrMask::PORT | QpAttrMask::ACCESS_FLAGS);
  a.qp_state = QpState::RTR;
  a.path_mtu = Mtu::MTU_256;  // small MTU: more packets per input
  a.dest_qp_num = 0x22;
  a.rq_psn = 100;
  a.ah_attr.dgid = Gid::from_ipv4(0x0a000002);
  a.max_dest_rd_atomic = 4;
  a.min_rnr_timer = 1;
  (void)qp.modify(a, QpAttrMask::STATE | QpAttrMask::AV | QpAttrMask::PATH_MTU | QpAttrMask::DEST_QPN |
                         QpAttrMask::RQ_PSN | QpAttrMask::MAX_DEST_RD_ATOMIC | QpAttrMask::MIN_RNR_TIMER);
  a.qp_state = QpState::RTS;
  a.sq_psn = 500;
  a.timeout = 1;
  a.retry_cnt = 2;
  a.rnr_retry = 2;
  a.max_rd_atomic = 2;
  (void)qp.modify(a, QpAttrMask::STATE | QpAttrMask::SQ_PSN | QpAttrMask::TIMEOUT | QpAttrMask::RETRY_CNT |
                         QpAttrMask::RNR_RETRY | QpAttrMask::MAX_QP_RD_ATOMIC);
  // Receives and a few requests of our own, so responses have something to match.
  const Sge rsge[2] = {{base, 300, mr->lkey}, {base + 4096, 200, mr->lkey}};
  for (int i = 0; i < 4; ++i) {
    RecvWr r;
    r.wr_id = static_cast<std::uint64_t>(i);
    r.sg_list = std::span<const Sge>(rsge, 2);
    (void)qp.post_recv(r);
  }
  const Sge lsge{base + 6000, 600, mr->lkey};
  const Sge asge{base + 7000, 8, mr->lkey};
  SendWr w;
  w.sg_list = {&lsge, 1};
  w.opcode = WrOpcode::RDMA_READ;
  w.rdma.remote_addr = 0x1000;
  (void)qp.post_send(w);
  w.opcode = WrOpcode::SEND;
  (void)qp.post_send(w);
  w.opcode = WrOpcode::ATOMIC_FETCH_AND_ADD;
  w.sg_list = {&asge, 1};
  (void)qp.post_send(w);
  std::int64_t now = 1'000'000;
  qp.do_work(now);

  Reader in{data, size};
  std::vector<std::uint8_t> buf(wire::kMaxTransportHeaderBytes + 512 + 8);
  std::vector<std::uint8_t> payload(256);
  for (int pkt = 0; pkt < 64 && in.n > 0; ++pkt) {
    wire::PacketFields f;
    f.bth.opcode = kOpcodes[in.u8() % sizeof kOpcodes];
    const std::uint8_t flags = in.u8();
    f.bth.ack_req = (flags & 1) != 0;
    f.bth.solicited = (flags & 2) != 0;
    f.bth.dest_qpn = 0x11;
    const auto delta = static_cast<std::int8_t>(in.u8());
    // Requests near the responder's PSNs, responses near the requester's.
    const std::uint32_t anchor = wire::opcode_info(f.bth.opcode)->is(wire::kOpResponse) ? 500u : 100u;
    f.bth.psn = wire::psn_add(anchor, static_cast<std::uint32_t>(static_cast<std::int32_t>(delta)));
    const std::uint8_t va_mode = in.u8();
    const std::uint32_t off = in.u32();
    std::uint64_t va = base + (off % (kRegion + 64));
    if ((va_mode & 3) == 1) va = base - (off % 64);
    if ((va_mode & 3) == 2) va = off;  // wild
    if ((va_mode & 4) != 0) va &= ~std::uint64_t{7};
    const std::uint32_t len = in.u16() % (kRegion + 512);
    const std::uint8_t key_mode = in.u8();
    const std::uint32_t rkey = (key_mode & 1) != 0 ? in.u32() : mr->rkey;
    f.reth = wire::RethFields{va, rkey, (key_mode & 2) != 0 ? in.u32() : len};
    f.atomic_eth = wire::AtomicEthFields{va, rkey, in.u32(), in.u32()};
    f.aeth = wire::AethFields{in.u8(), in.u32()};
    f.orig_remote_data = in.u32();
    f.imm = in.u32();
    std::size_t plen = 0;
    if (wire::opcode_info(f.bth.opcode)->carries_payload()) {
      plen = in.u16() % 300;
      for (std::size_t i = 0; i < plen && i < payload.size(); ++i) payload[i] = in.u8();
      if (plen > payload.size()) plen = payload.size();
    }
    wire::UdpFlow flow;
    flow.src = wire::IpAddress::v4(10, 0, 0, 2);
    flow.dst = wire::IpAddress::v4(10, 0, 0, 1);
    flow.src_port = 0xc000;
    auto n = wire::encode(f, std::span<const std::uint8_t>(payload.data(), plen), flow, buf);
    if (!n.ok()) continue;
    auto decoded = wire::decode(std::span<const std::uint8_t>(buf.data(), *n));
    if (!decoded.ok()) continue;
    RxMeta meta;
    meta.flow = flow;
    meta.rx_ns = now;
    qp.on_packet(*decoded, meta);
    now += (flags >> 2) * 5000;
    qp.do_work(now);
    if (qp.next_deadline_ns() <= now + 100'000) {
      now = qp.next_deadline_ns();
      qp.do_work(now);
    }
  }
  Wc wcs[64];
  (void)scq.poll(wcs);
  (void)rcq.poll(wcs);
  return 0;
}
