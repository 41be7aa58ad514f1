// Soft RoCEv2 RC SEND benchmark: two processes (fork), each with its own
// SoftDevice (default 127.0.0.1 = client, 127.0.0.2 = server), one RC QP
// each, connected by exchanging QPN/PSN/GID through pipes. Both sides
// busy-poll the device themselves (SoftDevice::do_work + CQ poll, no engine,
// no wake-ups), pinned to --client-cpu / --server-cpu.
//
//   --mode pingpong  (default) the client SENDs --size bytes, the server
//                    answers each receive with a SEND of the same size; the
//                    client records the round trip (post_send → receive
//                    completion) in a LatencyHistogram after --warmup rounds.
//   --mode stream    the client keeps up to --depth SENDs outstanding for
//                    --seconds, posting --batch WRs per post_send call; the
//                    server reposts receives --batch per post_recv call.
//                    Reports messages/s.
//   --depth N        max_send_wr = max_recv_wr = N (receives posted up front)
//   --batch N        WRs per post_send/post_recv call
//   --max-seconds S  ping-pong: stop measuring after S seconds even if --iters are not done
//   --ack-requests per-message|window  both QPs' AckReq policy (verbs/types.h
//                    AckRequests; default per-message): window is what
//                    qpgate's sessions use between soft peers (the ACK hold)
//
// Prints one `RESULT {json}` line (bench_common.h).
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cinttypes>
#include <memory>
#include <vector>

#include "bench_common.h"
#include "bench_verbs.h"
#include "verbs/soft/qp_counters.h"
#include "verbs/soft/soft_device.h"
#include "verbs/soft/soft_qp.h"

using namespace qpgate;
using namespace qpgate::verbs;
using namespace qpgate::verbs::soft;
using bench::check;
using bench::die;
using bench::now_ns;
using bench::take;

namespace {

struct Config {
  std::string mode;
  std::uint32_t size;
  long iters;
  long warmup;
  double seconds;
  double max_seconds;
  std::uint32_t depth;
  std::uint32_t batch;
  int client_cpu;
  int server_cpu;
  std::string client_addr;
  std::string server_addr;
  AckRequests ack_requests;
};

struct PeerInfo {
  std::uint32_t qpn;
  std::uint32_t psn;
  Gid gid;
};

// One side: device, PD, CQ, MR and an RC QP in INIT with receives posted.
struct Side {
  Side(const std::string& address, const Config& c) : cfg(c) {
    SoftDeviceOptions o;
    o.address_or_name = address;
    o.net.probe_ipv4_id = false;
    device = take(open_soft_device(o), ("open_soft_device " + address).c_str());
    pd = take(device->alloc_pd(), "alloc_pd");
    cq = take(device->create_cq(std::max<std::uint32_t>(2 * c.depth + 64, 256), 0), "create_cq");
    slot = std::max<std::uint32_t>(c.size, 64);
    // Receive slots, then send slots.
    buffer.assign(static_cast<std::size_t>(slot) * c.depth * 2, 0x5a);
    mr = take(pd->reg_mr(buffer.data(), buffer.size(), Access::LOCAL_WRITE), "reg_mr");
    QpInitAttr init;
    init.qp_type = QpType::RC;
    init.send_cq = cq.get();
    init.recv_cq = cq.get();
    init.cap.max_send_wr = c.depth;
    init.cap.max_recv_wr = c.depth;
    init.cap.max_send_sge = 1;
    init.cap.max_recv_sge = 1;
    qp = take(pd->create_qp(init), "create_qp");
    QpAttr a;
    a.qp_state = QpState::INIT;
    a.pkey_index = 0;
    a.port_num = 1;
    a.qp_access_flags = Access::LOCAL_WRITE;
    check(qp->modify(a, QpAttrMask::STATE | QpAttrMask::PKEY_INDEX | QpAttrMask::PORT | QpAttrMask::ACCESS_FLAGS),
          "modify INIT");
    recv_sges.resize(c.depth);
    recv_wrs.resize(c.depth);
    for (std::uint32_t i = 0; i < c.depth; ++i) {
      recv_sges[i] = Sge{reinterpret_cast<std::uint64_t>(buffer.data() + std::size_t{i} * slot), slot, mr->lkey()};
      recv_wrs[i].wr_id = i;
      recv_wrs[i].sg_list = std::span<const Sge>(&recv_sges[i], 1);
    }
    post_recvs(0, c.depth);
    send_sges.resize(c.depth);
    send_wrs.resize(c.depth);
    for (std::uint32_t i = 0; i < c.depth; ++i) {
      send_sges[i] = Sge{reinterpret_cast<std::uint64_t>(buffer.data() + std::size_t{c.depth + i} * slot), c.size,
                         mr->lkey()};
      send_wrs[i].wr_id = (std::uint64_t{1} << 32) | i;
      send_wrs[i].opcode = WrOpcode::SEND;
      send_wrs[i].send_flags = SendFlag::SIGNALED;
      send_wrs[i].sg_list = std::span<const Sge>(&send_sges[i], 1);
    }
  }

  // Posts receive slots [first, first+n) (mod depth), --batch WRs per call.
  void post_recvs(std::uint32_t first, std::uint32_t n) {
    while (n > 0) {
      const std::uint32_t idx = first % cfg.depth;
      const std::uint32_t k = std::min({n, cfg.batch, cfg.depth - idx});
      PostRecvResult r = qp->post_recv(std::span<const RecvWr>(&recv_wrs[idx], k));
      if (!r.ok()) die("post_recv: " + r.error().message);
      first += k;
      n -= k;
    }
  }

  // Posts n SENDs from send slot `first` (mod depth), --batch WRs per call.
  void post_sends(std::uint32_t first, std::uint32_t n) {
    while (n > 0) {
      const std::uint32_t idx = first % cfg.depth;
      const std::uint32_t k = std::min({n, cfg.batch, cfg.depth - idx});
      PostSendResult r = qp->post_send(std::span<const SendWr>(&send_wrs[idx], k));
      if (!r.ok()) die("post_send: " + r.error().message);
      first += k;
      n -= k;
    }
  }

  void connect(const PeerInfo& peer) {
    QpAttr a;
    a.qp_state = QpState::RTR;
    a.path_mtu = Mtu::MTU_4096;
    a.dest_qp_num = peer.qpn;
    a.rq_psn = peer.psn;
    a.ah_attr.dgid = peer.gid;
    a.ah_attr.hop_limit = 64;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 1;
    check(qp->modify(a, QpAttrMask::STATE | QpAttrMask::AV | QpAttrMask::PATH_MTU | QpAttrMask::DEST_QPN |
                            QpAttrMask::RQ_PSN | QpAttrMask::MAX_DEST_RD_ATOMIC | QpAttrMask::MIN_RNR_TIMER),
          "modify RTR");
    a.qp_state = QpState::RTS;
    a.sq_psn = my_psn;
    a.timeout = 14;  // ~67 ms: nothing is lost on loopback unless a socket buffer overflows
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = 1;
    check(qp->modify(a, QpAttrMask::STATE | QpAttrMask::SQ_PSN | QpAttrMask::TIMEOUT | QpAttrMask::RETRY_CNT |
                            QpAttrMask::RNR_RETRY | QpAttrMask::MAX_QP_RD_ATOMIC),
          "modify RTS");
    check(qp->set_ack_requests(cfg.ack_requests), "set_ack_requests");
  }

  PeerInfo info() const { return PeerInfo{qp->qp_num(), my_psn, device->gid()}; }

  std::uint64_t counter(std::string_view name) const {
    std::uint64_t v = 0;
    if (const SoftQp* s = as_soft_qp(*qp)) {
      s->counters().for_each([&](std::string_view n, std::uint64_t x) {
        if (n == name) v = x;
      });
    }
    return v;
  }

  const Config& cfg;
  std::unique_ptr<SoftDevice> device;
  std::unique_ptr<ProtectionDomain> pd;
  std::unique_ptr<CompletionQueue> cq;
  std::unique_ptr<MemoryRegion> mr;
  std::unique_ptr<QueuePair> qp;
  std::vector<std::uint8_t> buffer;
  std::uint32_t slot = 0;
  std::uint32_t my_psn = 0x1234;
  std::vector<Sge> recv_sges;
  std::vector<RecvWr> recv_wrs;
  std::vector<Sge> send_sges;
  std::vector<SendWr> send_wrs;
};

bool stop_requested(int fd) {
  char c;
  return read(fd, &c, 1) == 1;  // fd is non-blocking
}

// ---------------------------------------------------------------- server
void run_server(const Config& c, int to_client, int from_client) {
  bench::pin_cpu(c.server_cpu);
  Side s(c.server_addr, c);
  const PeerInfo mine = s.info();
  bench::write_all(to_client, &mine, sizeof mine);
  PeerInfo peer{};
  if (!bench::read_all(from_client, &peer, sizeof peer)) die("server: no peer info");
  s.connect(peer);
  const char ready = 'r';
  bench::write_all(to_client, &ready, 1);
  fcntl(from_client, F_SETFL, O_NONBLOCK);

  Wc wc[32];
  std::uint32_t next_send = 0;
  std::uint32_t sends_out = 0;
  std::uint32_t recv_next_post = 0;  // next receive slot to repost
  std::uint32_t recv_pending = 0;    // consumed, not yet reposted
  std::uint64_t received = 0;
  std::uint64_t loops = 0;
  for (;;) {
    s.device->do_work(now_ns());
    auto got = s.cq->poll(std::span<Wc>(wc, 32));
    if (!got.ok()) die("server poll: " + got.error().message);
    std::uint32_t replies = 0;
    for (std::size_t i = 0; i < *got; ++i) {
      if (wc[i].status != WcStatus::IBV_WC_SUCCESS) die("server: completion status " + std::to_string(int(wc[i].status)));
      if (wc[i].opcode == WcOpcode::RECV) {
        ++received;
        ++recv_pending;
        if (c.mode == "pingpong") ++replies;
      } else {
        --sends_out;
      }
    }
    if (recv_pending >= c.batch || (c.mode == "pingpong" && recv_pending > 0)) {
      s.post_recvs(recv_next_post, recv_pending);
      recv_next_post = (recv_next_post + recv_pending) % c.depth;
      recv_pending = 0;
    }
    if (replies > 0) {
      if (sends_out + replies > c.depth) die("server: send queue overflow");
      s.post_sends(next_send, replies);
      next_send = (next_send + replies) % c.depth;
      sends_out += replies;
      s.device->do_work(now_ns());  // flush the reply now
    }
    if ((++loops & 1023) == 0 && stop_requested(from_client)) break;
  }
  std::fprintf(stderr, "server: received %" PRIu64 ", acks_sent %" PRIu64 ", rnr_naks_sent %" PRIu64 "\n", received,
               s.counter("acks_sent"), s.counter("rnr_naks_sent"));
  bench::write_all(to_client, &received, sizeof received);
  std::uint64_t rnr = s.counter("rnr_naks_sent");
  bench::write_all(to_client, &rnr, sizeof rnr);
}

// ---------------------------------------------------------------- client
int run_client(const Config& c, pid_t server, int from_server, int to_server) {
  bench::pin_cpu(c.client_cpu);
  Side s(c.client_addr, c);
  PeerInfo peer{};
  if (!bench::read_all(from_server, &peer, sizeof peer)) die("client: no peer info");
  const PeerInfo mine = s.info();
  bench::write_all(to_server, &mine, sizeof mine);
  s.connect(peer);
  char ready = 0;
  if (!bench::read_all(from_server, &ready, 1)) die("client: server not ready");

  Wc wc[32];
  std::string body;
  char line[512];
  if (c.mode == "pingpong") {
    auto hist = std::make_unique<metrics::LatencyHistogram>();
    std::uint32_t next_send = 0;
    std::uint32_t sends_out = 0;
    std::uint32_t recv_next_post = 0;
    std::uint32_t recv_pending = 0;
    double sum_ns = 0;
    const std::int64_t started = now_ns();
    const std::int64_t give_up = started + static_cast<std::int64_t>(c.max_seconds * 1e9);
    long it = 0;
    for (; it < c.warmup + c.iters; ++it) {
      if (it > c.warmup && (it & 255) == 0 && now_ns() > give_up) break;  // --max-seconds: a loaded machine
      while (sends_out >= c.depth) {  // wait for ACKs to free a send slot (rare: they come before the pong)
        s.device->do_work(now_ns());
        auto got = s.cq->poll(std::span<Wc>(wc, 32));
        for (std::size_t i = 0; got.ok() && i < *got; ++i) {
          if (wc[i].opcode != WcOpcode::RECV) --sends_out;
        }
      }
      const std::int64_t t0 = now_ns();
      s.post_sends(next_send, 1);
      next_send = (next_send + 1) % c.depth;
      ++sends_out;
      bool pong = false;
      for (std::uint32_t spins = 0; !pong; ++spins) {
        if ((spins & 0xfffff) == 0xfffff && now_ns() - t0 > 5'000'000'000) die("client: no answer in 5 s");
        s.device->do_work(now_ns());
        auto got = s.cq->poll(std::span<Wc>(wc, 32));
        if (!got.ok()) die("client poll: " + got.error().message);
        for (std::size_t i = 0; i < *got; ++i) {
          if (wc[i].status != WcStatus::IBV_WC_SUCCESS) {
            die("client: completion status " + std::to_string(int(wc[i].status)));
          }
          if (wc[i].opcode == WcOpcode::RECV) {
            pong = true;
            ++recv_pending;
          } else {
            --sends_out;
          }
        }
      }
      const std::int64_t rtt = now_ns() - t0;
      if (it >= c.warmup) {
        hist->record(static_cast<std::uint64_t>(rtt));
        sum_ns += static_cast<double>(rtt);
      }
      if (recv_pending >= c.batch) {
        s.post_recvs(recv_next_post, recv_pending);
        recv_next_post = (recv_next_post + recv_pending) % c.depth;
        recv_pending = 0;
      }
    }
    const double secs = static_cast<double>(now_ns() - started) / 1e9;
    std::snprintf(line, sizeof line, ",%s,\"rtt_per_s\":%.0f", bench::latency_json(*hist, sum_ns / 1000.0 / static_cast<double>(hist->total())).c_str(),
                  static_cast<double>(it) / secs);
    body = line;
  } else {
    // stream: keep up to depth SENDs outstanding for c.seconds.
    std::uint64_t posted = 0, completed = 0;
    std::uint32_t next_send = 0;
    const std::int64_t warm_end = now_ns() + static_cast<std::int64_t>(0.2 * 1e9 * std::min(1.0, c.seconds));
    std::int64_t t_start = 0;
    std::uint64_t completed_at_start = 0;
    std::int64_t end = 0;
    for (;;) {
      const std::int64_t t = now_ns();
      if (t_start == 0 && t >= warm_end) {
        t_start = t;
        completed_at_start = completed;
        end = t + static_cast<std::int64_t>(c.seconds * 1e9);
      }
      if (end != 0 && t >= end) break;
      const std::uint64_t out = posted - completed;
      std::uint32_t room = c.depth - static_cast<std::uint32_t>(out);
      room -= room % c.batch;  // whole batches only
      if (room > 0) {
        s.post_sends(next_send, room);
        next_send = (next_send + room) % c.depth;
        posted += room;
      }
      s.device->do_work(t);
      auto got = s.cq->poll(std::span<Wc>(wc, 32));
      if (!got.ok()) die("client poll: " + got.error().message);
      for (std::size_t i = 0; i < *got; ++i) {
        if (wc[i].status != WcStatus::IBV_WC_SUCCESS) die("client: completion status " + std::to_string(int(wc[i].status)));
        ++completed;
      }
    }
    const double secs = static_cast<double>(now_ns() - t_start) / 1e9;
    std::snprintf(line, sizeof line, ",\"msgs_per_s\":%.0f,\"retransmitted\":%" PRIu64 ",\"rnr_naks_rcvd\":%" PRIu64,
                  static_cast<double>(completed - completed_at_start) / secs, s.counter("retransmitted_pkts"),
                  s.counter("rcvd_rnr_err"));
    body = line;
  }
  const char stop = 's';
  bench::write_all(to_server, &stop, 1);
  std::uint64_t server_received = 0, server_rnr = 0;
  bench::read_all(from_server, &server_received, sizeof server_received);
  bench::read_all(from_server, &server_rnr, sizeof server_rnr);
  int status = 0;
  waitpid(server, &status, 0);
  std::printf(
      "RESULT {\"bench\":\"soft_rc_%s\",\"ack_requests\":\"%s\",\"size\":%u,\"depth\":%u,\"batch\":%u,\"client\":\"%s\",\"server\":\"%s\","
      "\"client_cpu\":%d,\"server_cpu\":%d,\"server_received\":%" PRIu64 ",\"server_rnr_naks\":%" PRIu64
      ",\"acks_rcvd\":%" PRIu64 "%s}\n",
      c.mode.c_str(), c.ack_requests == AckRequests::WINDOW ? "window" : "per-message", c.size, c.depth, c.batch, c.client_addr.c_str(), c.server_addr.c_str(), c.client_cpu,
      c.server_cpu, server_received, server_rnr, s.counter("rcvd_acks"), body.c_str());
  std::fflush(stdout);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  bench::program_name = "bench_soft_rc_pingpong";
  bench::Args a(argc, argv);
  Config c;
  c.mode = a.str("mode", "pingpong");
  c.size = static_cast<std::uint32_t>(a.num("size", 64));
  c.iters = a.num("iters", 100000);
  c.warmup = a.num("warmup", 10000);
  c.seconds = a.real("seconds", 2.0);
  c.max_seconds = a.real("max-seconds", 30.0);
  c.depth = static_cast<std::uint32_t>(a.num("depth", 32));
  c.batch = static_cast<std::uint32_t>(a.num("batch", 1));
  c.client_cpu = static_cast<int>(a.num("client-cpu", 1));
  c.server_cpu = static_cast<int>(a.num("server-cpu", 0));
  c.client_addr = a.str("client", "127.0.0.1");
  c.server_addr = a.str("server", "127.0.0.2");
  const std::string ack_requests = a.str("ack-requests", "per-message");
  if (ack_requests != "per-message" && ack_requests != "window") die("--ack-requests per-message|window");
  c.ack_requests = ack_requests == "window" ? AckRequests::WINDOW : AckRequests::PER_MESSAGE;
  if (c.mode != "pingpong" && c.mode != "stream") die("--mode pingpong|stream");
  if (c.depth == 0 || c.batch == 0 || c.batch > c.depth || c.depth % c.batch != 0) die("--batch must divide --depth");
  if (c.size == 0 || c.size > 65536) die("--size 1..65536");
  signal(SIGPIPE, SIG_IGN);
  return bench::run_forked_pair([&](int to_client, int from_client) { run_server(c, to_client, from_client); },
                                [&](pid_t server, int from_server, int to_server) {
                                  return run_client(c, server, from_server, to_server);
                                });
}
