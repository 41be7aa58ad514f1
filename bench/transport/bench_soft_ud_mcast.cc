// Soft RoCEv2 UD multicast throughput: one sender process (its own
// SoftDevice, --sender 127.0.0.1) and --subs subscriber processes (fork),
// each with its own SoftDevice on a distinct 127.0.0.x (--sub-base, +1 per
// subscriber) and one UD QP attached to --group. The sender posts SENDs of
// --size bytes (a sequence number in the first 8) to the group's AH as fast
// as its send queue (--depth) allows, --batch WRs per post_send, for
// --seconds, busy-polling its device. Subscribers busy-poll their device
// for a while and then wait in poll(2) on its receive sockets, as the
// engine's parker does (a spinning subscriber per process would starve the
// sender on 2 vCPUs); they repost receives --batch per call and count
// datagrams and sequence gaps.
//
// Datagram size on the wire (UDP payload) = size + 12 (BTH) + 8 (DETH) + 4 (ICRC).
// Prints one `RESULT {json}` line (bench_common.h).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cinttypes>
#include <memory>
#include <vector>

#include "bench_common.h"
#include "bench_verbs.h"
#include "verbs/soft/soft_device.h"

using namespace qpgate;
using namespace qpgate::verbs;
using namespace qpgate::verbs::soft;
using bench::check;
using bench::die;
using bench::now_ns;
using bench::take;

namespace {

constexpr std::uint32_t kQkey = 0x11111111;
constexpr std::uint32_t kGrh = 40;

struct Config {
  std::uint32_t size;
  double seconds;
  std::uint32_t depth;
  std::uint32_t batch;
  int subs;
  int sender_cpu;
  int sub_cpu;
  std::string sender_addr;
  std::string sub_base;
  std::string group;
};

struct SubReport {
  std::uint64_t received;
  std::uint64_t gaps;  // datagrams missing between received sequence numbers
  std::uint64_t max_seq;
  std::int64_t first_ns;
  std::int64_t last_ns;
};

struct Dev {
  Dev(const std::string& address, std::uint32_t depth, std::size_t bytes) {
    SoftDeviceOptions o;
    o.address_or_name = address;
    o.net.probe_ipv4_id = false;
    device = take(open_soft_device(o), "open_soft_device " + address);
    pd = take(device->alloc_pd(), "alloc_pd");
    cq = take(device->create_cq(std::max<std::uint32_t>(2 * depth, 256), 0), "create_cq");
    buffer.assign(bytes, 0);
    mr = take(pd->reg_mr(buffer.data(), buffer.size(), Access::LOCAL_WRITE), "reg_mr");
    QpInitAttr init;
    init.qp_type = QpType::UD;
    init.send_cq = cq.get();
    init.recv_cq = cq.get();
    init.cap.max_send_wr = depth;
    init.cap.max_recv_wr = depth;
    qp = take(pd->create_qp(init), "create_qp");
    QpAttr a;
    a.qp_state = QpState::INIT;
    a.pkey_index = 0;
    a.port_num = 1;
    a.qkey = kQkey;
    Status s = qp->modify(a, QpAttrMask::STATE | QpAttrMask::PKEY_INDEX | QpAttrMask::PORT | QpAttrMask::QKEY);
    if (s.ok()) {
      a.qp_state = QpState::RTR;
      s = qp->modify(a, QpAttrMask::STATE);
    }
    if (s.ok()) {
      a.qp_state = QpState::RTS;
      a.sq_psn = 0;
      s = qp->modify(a, QpAttrMask::STATE | QpAttrMask::SQ_PSN);
    }
    if (!s.ok()) die("modify UD QP: " + std::string(s.message()));
  }
  std::unique_ptr<SoftDevice> device;
  std::unique_ptr<ProtectionDomain> pd;
  std::unique_ptr<CompletionQueue> cq;
  std::unique_ptr<MemoryRegion> mr;
  std::unique_ptr<QueuePair> qp;
  std::vector<std::uint8_t> buffer;
};

std::string sub_address(const Config& c, int i) {
  const auto dot = c.sub_base.rfind('.');
  const int last = std::atoi(c.sub_base.c_str() + dot + 1);
  return c.sub_base.substr(0, dot + 1) + std::to_string(last + i);
}

// ---------------------------------------------------------------- subscriber
void run_sub(const Config& c, int index, int ready_fd, int stop_fd, int result_fd) {
  bench::pin_cpu(c.sub_cpu);
  const std::uint32_t slot = kGrh + c.size;
  Dev d(sub_address(c, index), c.depth, std::size_t{slot} * c.depth);
  Status s = d.qp->attach_mcast(*Gid::parse(c.group));
  if (!s.ok()) die("attach_mcast: " + std::string(s.message()));
  std::vector<Sge> sges(c.depth);
  std::vector<RecvWr> wrs(c.depth);
  for (std::uint32_t i = 0; i < c.depth; ++i) {
    sges[i] = Sge{reinterpret_cast<std::uint64_t>(d.buffer.data() + std::size_t{i} * slot), slot, d.mr->lkey()};
    wrs[i].wr_id = i;
    wrs[i].sg_list = std::span<const Sge>(&sges[i], 1);
  }
  auto post = [&](std::uint32_t first, std::uint32_t n) {
    while (n > 0) {
      const std::uint32_t idx = first % c.depth;
      const std::uint32_t k = std::min({n, c.batch, c.depth - idx});
      PostRecvResult r = d.qp->post_recv(std::span<const RecvWr>(&wrs[idx], k));
      if (!r.ok()) die("post_recv: " + r.error().message);
      first += k;
      n -= k;
    }
  };
  post(0, c.depth);
  const char ready = 'r';
  bench::write_all(ready_fd, &ready, 1);
  fcntl(stop_fd, F_SETFL, O_NONBLOCK);

  std::vector<pollfd> pfds;
  for (int fd : d.device->receive_fds()) pfds.push_back(pollfd{fd, POLLIN, 0});
  pfds.push_back(pollfd{stop_fd, POLLIN, 0});

  SubReport r{};
  std::uint64_t expect = 0;
  std::uint32_t next_post = 0, pending = 0;
  std::uint32_t idle = 0;
  Wc wc[32];
  for (;;) {
    int work = d.device->do_work(now_ns());
    auto got = d.cq->poll(std::span<Wc>(wc, 32));
    if (!got.ok()) die("poll: " + got.error().message);
    const std::int64_t t = *got > 0 ? now_ns() : 0;
    for (std::size_t i = 0; i < *got; ++i) {
      if (wc[i].status != WcStatus::IBV_WC_SUCCESS) die("subscriber: completion status " + std::to_string(int(wc[i].status)));
      std::uint64_t seq;
      std::memcpy(&seq, d.buffer.data() + std::size_t{slot} * static_cast<std::uint32_t>(wc[i].wr_id) + kGrh, 8);
      if (r.received == 0) r.first_ns = t;
      r.last_ns = t;
      ++r.received;
      if (seq > expect) r.gaps += seq - expect;
      if (seq + 1 > expect) expect = seq + 1;
      r.max_seq = std::max(r.max_seq, seq);
      ++pending;
    }
    if (pending >= c.batch) {
      const std::uint32_t n = pending - pending % c.batch;
      post(next_post, n);
      next_post = (next_post + n) % c.depth;
      pending -= n;
    }
    work += static_cast<int>(*got);
    if (work > 0) {
      idle = 0;
      continue;
    }
    if (++idle < 2000) continue;
    idle = 0;
    ::poll(pfds.data(), pfds.size(), 10);
    if (pfds.back().revents & POLLIN) break;
  }
  bench::write_all(result_fd, &r, sizeof r);
}

}  // namespace

int main(int argc, char** argv) {
  bench::program_name = "bench_soft_ud_mcast";
  bench::Args a(argc, argv);
  Config c;
  c.size = static_cast<std::uint32_t>(a.num("size", 64));
  c.seconds = a.real("seconds", 2.0);
  c.depth = static_cast<std::uint32_t>(a.num("depth", 128));
  c.batch = static_cast<std::uint32_t>(a.num("batch", 8));
  c.subs = static_cast<int>(a.num("subs", 1));
  c.sender_cpu = static_cast<int>(a.num("sender-cpu", 1));
  c.sub_cpu = static_cast<int>(a.num("sub-cpu", 0));
  c.sender_addr = a.str("sender", "127.0.0.1");
  c.sub_base = a.str("sub-base", "127.0.0.11");
  c.group = a.str("group", "239.77.0.1");
  if (c.size < 8 || c.size > 4096) die("--size 8..4096");
  if (c.depth == 0 || c.batch == 0 || c.depth % c.batch != 0) die("--batch must divide --depth");
  if (c.subs < 1 || c.subs > 16) die("--subs 1..16");
  signal(SIGPIPE, SIG_IGN);

  int ready[2], results[2];
  if (pipe(ready) != 0 || pipe(results) != 0) die("pipe");
  std::vector<int> stops;
  std::vector<pid_t> kids;
  for (int i = 0; i < c.subs; ++i) {
    int stop[2];
    if (pipe(stop) != 0) die("pipe");
    const pid_t pid = fork();
    if (pid < 0) die("fork");
    if (pid == 0) {
      close(ready[0]);
      close(results[0]);
      close(stop[1]);
      run_sub(c, i, ready[1], stop[0], results[1]);
      std::_Exit(0);
    }
    close(stop[0]);
    stops.push_back(stop[1]);
    kids.push_back(pid);
  }
  close(ready[1]);
  close(results[1]);
  for (int i = 0; i < c.subs; ++i) {
    char r;
    if (!bench::read_all(ready[0], &r, 1)) die("a subscriber did not start");
  }

  bench::pin_cpu(c.sender_cpu);
  Dev d(c.sender_addr, c.depth, std::size_t{c.size} * c.depth);
  AhAttr ah_attr;
  ah_attr.dgid = *Gid::parse(c.group);
  auto ah = take(d.pd->create_ah(ah_attr), "create_ah");
  std::vector<Sge> sges(c.depth);
  std::vector<SendWr> wrs(c.depth);
  for (std::uint32_t i = 0; i < c.depth; ++i) {
    sges[i] = Sge{reinterpret_cast<std::uint64_t>(d.buffer.data() + std::size_t{i} * c.size), c.size, d.mr->lkey()};
    wrs[i].wr_id = i;
    wrs[i].sg_list = std::span<const Sge>(&sges[i], 1);
    wrs[i].send_flags = SendFlag::SIGNALED;
    wrs[i].ud.ah = ah.get();
    wrs[i].ud.remote_qpn = kMulticastQpn;
    wrs[i].ud.remote_qkey = kQkey;
  }
  std::uint64_t seq = 0, completed = 0;
  std::uint32_t next = 0;
  Wc wc[64];
  const std::int64_t t0 = now_ns();
  const std::int64_t end = t0 + static_cast<std::int64_t>(c.seconds * 1e9);
  for (;;) {
    const std::int64_t t = now_ns();
    if (t >= end) break;
    std::uint32_t room = c.depth - static_cast<std::uint32_t>(seq - completed);
    room -= room % c.batch;
    while (room > 0) {
      const std::uint32_t k = std::min({room, c.batch, c.depth - next});
      for (std::uint32_t j = 0; j < k; ++j) {
        std::memcpy(d.buffer.data() + std::size_t{next + j} * c.size, &seq, 8);
        ++seq;
      }
      PostSendResult r = d.qp->post_send(std::span<const SendWr>(&wrs[next], k));
      if (!r.ok()) die("post_send: " + r.error().message);
      next = (next + k) % c.depth;
      room -= k;
    }
    d.device->do_work(t);
    for (;;) {
      auto got = d.cq->poll(std::span<Wc>(wc, 64));
      if (!got.ok()) die("sender poll: " + got.error().message);
      for (std::size_t i = 0; i < *got; ++i) {
        if (wc[i].status != WcStatus::IBV_WC_SUCCESS) die("sender: completion status " + std::to_string(int(wc[i].status)));
      }
      completed += *got;
      if (*got < 64) break;
    }
  }
  // Flush what is still queued.
  for (int i = 0; i < 100 && completed < seq; ++i) {
    d.device->do_work(now_ns());
    auto got = d.cq->poll(std::span<Wc>(wc, 64));
    if (got.ok()) completed += *got;
  }
  const double secs = static_cast<double>(now_ns() - t0) / 1e9;
  const std::uint64_t sent_pkts = d.device->net_counters().tx_packets.get();
  const std::uint64_t tx_errors = d.device->net_counters().tx_errors.get();
  const std::uint64_t tx_syscalls = d.device->net_counters().tx_syscalls.get();
  usleep(200'000);  // let subscribers drain their sockets
  for (int fd : stops) {
    const char s = 's';
    bench::write_all(fd, &s, 1);
  }
  double recv_rate_sum = 0, worst_loss = 0, loss_sum = 0;
  std::uint64_t recv_total = 0;
  for (int i = 0; i < c.subs; ++i) {
    SubReport r{};
    if (!bench::read_all(results[0], &r, sizeof r)) die("a subscriber did not report");
    recv_total += r.received;
    const double window = static_cast<double>(r.last_ns - r.first_ns) / 1e9;
    recv_rate_sum += window > 0 ? static_cast<double>(r.received) / window : 0;
    const double loss = sent_pkts > 0 ? 1.0 - static_cast<double>(r.received) / static_cast<double>(sent_pkts) : 1.0;
    worst_loss = std::max(worst_loss, loss);
    loss_sum += loss;
  }
  int bad = 0;
  for (pid_t k : kids) {
    int st = 0;
    waitpid(k, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) ++bad;
  }
  std::printf(
      "RESULT {\"bench\":\"soft_ud_mcast\",\"size\":%u,\"datagram\":%u,\"subs\":%d,\"depth\":%u,\"batch\":%u,"
      "\"sent\":%" PRIu64 ",\"sent_per_s\":%.0f,\"recv_per_s_per_sub\":%.0f,\"received_total\":%" PRIu64
      ",\"loss_mean\":%.5f,\"loss_max\":%.5f,\"tx_errors\":%" PRIu64 ",\"pkts_per_sendmmsg\":%.1f,\"seconds\":%.3f}\n",
      c.size, c.size + 24, c.subs, c.depth, c.batch, sent_pkts, static_cast<double>(sent_pkts) / secs,
      recv_rate_sum / c.subs, recv_total, loss_sum / c.subs, worst_loss, tx_errors,
      tx_syscalls > 0 ? static_cast<double>(sent_pkts) / static_cast<double>(tx_syscalls) : 0.0, secs);
  std::fflush(stdout);
  return bad == 0 ? 0 : 1;
}
