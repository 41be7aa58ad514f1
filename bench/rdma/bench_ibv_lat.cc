// The ibv backend doing what perftest's ib_send_lat, ib_write_lat and
// ib_atomic_lat do, so the two are measured side by side on the same rxe
// devices in the same guest run (bench/rdma/guest.sh). Two processes
// (fork): the server on --server-dev, the client on --client-dev, each with
// one RC QP brought up by verbs::connect_rc after exchanging QPN, PSN and
// GID through pipes (perftest does the same over TCP). Both busy-poll.
//
//   --test send    ping-pong of --size byte SENDs; reports RTT/2 (perftest's
//                  convention for send_lat)
//   --test write   ping-pong of RDMA WRITEs: each side polls the last byte of
//                  its own buffer for the peer's iteration number, then writes
//                  back (perftest's write_lat); reports RTT/2
//   --test atomic  the client's FETCH_ADD on the server's word, one at a time
//                  (perftest's atomic_lat); reports the full round trip
//
// Prints one `RESULT {json}` line (bench/transport/bench_common.h).
#include <sys/wait.h>

#include <cstring>
#include <memory>
#include <string>

#include "../transport/bench_common.h"
#include "../transport/bench_verbs.h"
#include "verbs/ibv/ibv_device.h"
#include "verbs/rc_connect.h"

using namespace qpgate;
using namespace qpgate::verbs;
using bench::check;
using bench::die;
using bench::now_ns;
using bench::take;

namespace {

struct Config {
  std::string test;
  std::uint32_t size;
  long iters;
  long warmup;
};

struct PeerInfo {
  std::uint32_t qpn;
  std::uint32_t psn;
  Gid gid;
  std::uint64_t addr;
  std::uint32_t rkey;
};

struct Side {
  Side(const std::string& device, const Config& c) : cfg(c), buffer(4096 + c.size, 0) {
    ibv::IbvDeviceOptions o;
    o.device = device;
    dev = take(ibv::open_ibv_device(o), "open_ibv_device");
    pd = take(dev->alloc_pd(), "alloc_pd");
    cq = take(dev->create_cq(256, 0), "create_cq");
    mr = take(pd->reg_mr(buffer.data(), buffer.size(), kAllAccess), "reg_mr");
    QpInitAttr init;
    init.qp_type = QpType::RC;
    init.send_cq = cq.get();
    init.recv_cq = cq.get();
    init.cap = QpCap{64, 64, 1, 1, 64};
    qp = take(pd->create_qp(init), "create_qp");
    psn = random_psn();
  }
  PeerInfo info() const { return {qp->qp_num(), psn, dev->gid().gid, mr->addr(), mr->rkey()}; }
  void connect(const PeerInfo& peer) {
    RcParams p;
    p.psn = psn;
    p.access = kAllAccess;
    p.max_rd_atomic = 1;
    p.max_dest_rd_atomic = 1;
    p.sgid_index = static_cast<std::uint8_t>(dev->gid().index);
    check(connect_rc(*qp, p, RcPeer{peer.gid, peer.qpn, peer.psn, Mtu::MTU_1024, std::nullopt}), "connect_rc");
    remote = peer;
  }
  Sge sge(std::size_t off, std::uint32_t len) const {
    return Sge{reinterpret_cast<std::uintptr_t>(buffer.data()) + off, len, mr->lkey()};
  }
  void post_recv() {
    const Sge s = sge(2048, cfg.size);
    check(qp->post_recv(RecvWr{1, nullptr, std::span(&s, 1)}).status(), "post_recv");
  }
  void post(WrOpcode op, std::uint32_t length) {
    const Sge s = op == WrOpcode::ATOMIC_FETCH_AND_ADD ? sge(0, 8) : sge(0, length);
    SendWr w;
    w.wr_id = 2;
    w.sg_list = std::span(&s, 1);
    w.opcode = op;
    w.send_flags = SendFlag::SIGNALED;
    if (length <= 64 && op != WrOpcode::ATOMIC_FETCH_AND_ADD) w.send_flags = w.send_flags | SendFlag::INLINE;
    if (op == WrOpcode::RDMA_WRITE) w.rdma = {remote.addr + 1024, remote.rkey};
    if (op == WrOpcode::ATOMIC_FETCH_AND_ADD) w.atomic = {remote.addr + 4000, 1, 0, remote.rkey};
    check(qp->post_send(w).status(), "post_send");
  }
  // Busy-polls until a completion of `opcode`; others seen on the way are
  // kept for the next waits (a SEND and the reply's RECV may come together).
  void wait(WcOpcode opcode) {
    for (auto it = pending.begin(); it != pending.end(); ++it) {
      if (*it == opcode) {
        pending.erase(it);
        return;
      }
    }
    Wc wc[4];
    for (;;) {
      auto n = cq->poll(wc);
      if (!n.ok()) die("poll_cq");
      bool found = false;
      for (std::size_t i = 0; i < *n; ++i) {
        if (wc[i].status != WcStatus::IBV_WC_SUCCESS) die("completion " + std::string(wc_status_enum_name(wc[i].status)));
        if (!found && wc[i].opcode == opcode) {
          found = true;
        } else {
          pending.push_back(wc[i].opcode);
        }
      }
      if (found) return;
    }
  }
  // RDMA WRITE ping-pong: the peer's write lands at offset 1024; its last
  // byte carries the iteration number.
  void wait_written(std::uint8_t value) {
    volatile std::uint8_t* last = buffer.data() + 1024 + cfg.size - 1;
    while (*last != value) {
    }
  }

  Config cfg;
  std::vector<std::uint8_t> buffer;
  std::unique_ptr<ibv::IbvDevice> dev;
  std::unique_ptr<ProtectionDomain> pd;
  std::unique_ptr<CompletionQueue> cq;
  std::unique_ptr<MemoryRegion> mr;
  std::unique_ptr<QueuePair> qp;
  std::uint32_t psn = 0;
  PeerInfo remote{};
  std::vector<WcOpcode> pending;
};

void run_server(Side& s, const Config& c) {
  const long total = c.warmup + c.iters;
  if (c.test == "send") {
    for (long i = 0; i < total; ++i) {
      s.wait(WcOpcode::RECV);
      s.post_recv();
      s.post(WrOpcode::SEND, c.size);
      s.wait(WcOpcode::SEND);
    }
  } else if (c.test == "write") {
    for (long i = 0; i < total; ++i) {
      const auto v = static_cast<std::uint8_t>(i % 255 + 1);
      s.wait_written(v);
      s.buffer[c.size - 1] = v;
      s.post(WrOpcode::RDMA_WRITE, c.size);
      s.wait(WcOpcode::RDMA_WRITE);
    }
  }
  // atomic: the server's HCA answers; the process only waits to be told to go.
}

void run_client(Side& s, const Config& c, metrics::LatencyHistogram& h, double& mean_us) {
  const long total = c.warmup + c.iters;
  double sum = 0;
  for (long i = 0; i < total; ++i) {
    const std::int64_t t0 = now_ns();
    if (c.test == "send") {
      s.post(WrOpcode::SEND, c.size);
      s.wait(WcOpcode::SEND);
      s.wait(WcOpcode::RECV);
      s.post_recv();
    } else if (c.test == "write") {
      const auto v = static_cast<std::uint8_t>(i % 255 + 1);
      s.buffer[c.size - 1] = v;
      s.post(WrOpcode::RDMA_WRITE, c.size);
      s.wait(WcOpcode::RDMA_WRITE);
      s.wait_written(v);
    } else {
      s.post(WrOpcode::ATOMIC_FETCH_AND_ADD, 8);
      s.wait(WcOpcode::FETCH_ADD);
    }
    std::int64_t ns = now_ns() - t0;
    if (c.test != "atomic") ns /= 2;  // perftest reports half the round trip for send and write
    if (i >= c.warmup) {
      h.record(static_cast<std::uint64_t>(ns));
      sum += static_cast<double>(ns) / 1000.0;
    }
  }
  mean_us = sum / static_cast<double>(c.iters);
}

}  // namespace

int main(int argc, char** argv) {
  bench::program_name = "bench_ibv_lat";
  bench::Args args(argc, argv);
  Config c{args.str("test", "send"), static_cast<std::uint32_t>(args.num("size", 2)), args.num("iters", 1000),
           args.num("warmup", 100)};
  if (c.test != "send" && c.test != "write" && c.test != "atomic") die("--test must be send, write or atomic");
  if (c.size < 1 || c.size > 1024) die("--size must be 1..1024");
  if (c.test == "atomic") c.size = 8;
  const std::string server_dev = args.str("server-dev", "rxe_a");
  const std::string client_dev = args.str("client-dev", "rxe_b");

  int to_client[2], to_server[2];
  if (pipe(to_client) != 0 || pipe(to_server) != 0) die("pipe");
  const pid_t child = fork();
  if (child < 0) die("fork");
  if (child == 0) {  // server
    Side s(server_dev, c);
    const PeerInfo mine = s.info();
    PeerInfo peer{};
    if (!bench::write_all(to_client[1], &mine, sizeof mine) || !bench::read_all(to_server[0], &peer, sizeof peer)) die("exchange");
    s.connect(peer);
    for (int i = 0; i < 64; ++i) s.post_recv();
    const char ready = 'r';
    if (!bench::write_all(to_client[1], &ready, 1)) die("ready");
    run_server(s, c);
    char done = 0;
    bench::read_all(to_server[0], &done, 1);  // the client is finished with our memory
    std::_Exit(0);
  }
  Side s(client_dev, c);
  const PeerInfo mine = s.info();
  PeerInfo peer{};
  if (!bench::read_all(to_client[0], &peer, sizeof peer) || !bench::write_all(to_server[1], &mine, sizeof mine)) die("exchange");
  s.connect(peer);
  for (int i = 0; i < 64; ++i) s.post_recv();
  char ready = 0;
  if (!bench::read_all(to_client[0], &ready, 1)) die("the server did not get ready");
  double mean_us = 0;
  static metrics::LatencyHistogram h;  // large: not on the stack
  run_client(s, c, h, mean_us);
  const char done = 'd';
  bench::write_all(to_server[1], &done, 1);
  int status = 0;
  waitpid(child, &status, 0);
  std::printf("RESULT {\"bench\":\"ibv_lat\",\"test\":\"%s\",\"size\":%u,\"iters\":%ld,%s}\n", c.test.c_str(), c.size,
              c.iters, bench::latency_json(h, mean_us).c_str());
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
