// The packet I/O of a soft device with an alternate address (soft_device.h,
// SoftDeviceOptions::alternate_address): two UdpNets, one per local
// address, seen by the QPs and the duty cycle as one PacketIo. A packet
// leaves from the UdpNet that owns its flow's source address (the GID its
// path's sgid_index names), so the primary and the alternate path of an RC
// QP (IBV_QP_ALT_PATH) are different UDP 4-tuples and, on a host with two
// links, different links. Receives read both; each packet's RxMeta says the
// local address it came to (net_rx.cc), which is how a QP tells the path.
//
// Multicast groups are joined on both addresses when they are on different
// interfaces, so a feed's line A and line B can each come on its own link
// (the publisher sends line B from the alternate GID: feed/publisher.cc).
// The group sockets take only the groups they joined, on the interface they
// joined them on (IP_MULTICAST_ALL = 0, net.h), so no packet is read twice;
// on one interface a second join would read every packet twice, and is not made.
#pragma once

#include "verbs/soft/net.h"
#include "verbs/soft/packet_io.h"

namespace qpgate::verbs::soft {

class PathNets final : public PacketIo, public MulticastMembership {
 public:
  PathNets(UdpNet& primary, UdpNet& alternate) : primary_(primary), alternate_(alternate) {}
  PathNets(const PathNets&) = delete;
  PathNets& operator=(const PathNets&) = delete;

  Enqueued enqueue(const TxPacket& packet) override { return net_for(packet.flow.src).enqueue(packet); }
  int flush() override { return primary_.flush() + alternate_.flush(); }
  std::size_t queued() const override { return primary_.queued() + alternate_.queued(); }
  std::size_t capacity() const override { return primary_.capacity(); }
  int receive(const RxHandler& fn) override { return primary_.receive(fn) + alternate_.receive(fn); }

  // MulticastMembership: all or nothing.
  Status join(const wire::IpAddress& group) override {
    if (Status s = primary_.join(group); !s.ok()) return s;
    if (!two_interfaces()) return {};
    if (Status s = alternate_.join(group); !s.ok()) {
      (void)primary_.leave(group);
      return s;
    }
    return {};
  }
  Status leave(const wire::IpAddress& group) override {
    Status first = primary_.leave(group);
    Status second = two_interfaces() ? alternate_.leave(group) : Status{};
    return first.ok() ? second : first;
  }
  bool two_interfaces() const { return primary_.interface_name() != alternate_.interface_name(); }

 private:
  UdpNet& net_for(const wire::IpAddress& source) {
    return source == alternate_.address() ? alternate_ : primary_;
  }

  UdpNet& primary_;
  UdpNet& alternate_;
};

}  // namespace qpgate::verbs::soft
