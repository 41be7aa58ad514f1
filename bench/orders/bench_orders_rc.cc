// Order -> Ack round trip over RoCEv2 RC on loopback (issue 5): two
// processes (fork).
//
//   gateway  (--server-cpu, default 0) the product's order path: an Engine
//            with its SoftDeviceAgent and OrderAgent, spin idle strategy,
//            one OrderService (journal with --sync, default 'none' = the
//            product default: write(2) per duty cycle, no fdatasync) on a
//            SoftDevice at --server (engine_gateway.h).
//   client   (--client-cpu, default 1) ONE native client with --sessions RC
//            sessions on its own SoftDevice at --client, busy-polling
//            (rc_order_client.h). QPN/PSN/GID go through pipes; the gateway
//            opens a session for each (what POST /v1/sessions does), then
//            every session says Hello and gets its Welcome.
//
//   --mode pingpong    one order in flight, round robin over the sessions:
//                      NewOrder posted -> its Ack's receive completion, in a
//                      LatencyHistogram after --warmup orders (--iters, capped
//                      by --max-seconds on a loaded machine).
//   --mode throughput  up to --window orders in flight across the sessions
//                      for --seconds after a 0.2 s warm-up: Acks/s, and each
//                      order's post -> Ack time under that load.
//
// Orders alternate buy/sell at one price, so every second order trades
// (an Ack and two Fills) and the book stays small. Prints one
// `RESULT {json}` line (bench_common.h) with the gateway's own figures:
// its ack latency (receive completion seen -> answer posted), journal
// records/syncs and the engine's duty cycles.
#include <signal.h>
#include <sys/wait.h>

#include <cinttypes>
#include <filesystem>
#include <vector>

#include "bench_common.h"
#include "bench_verbs.h"
#include "engine_gateway.h"
#include "rc_order_client.h"

using namespace qpgate;
using bench::die;
using bench::now_ns;

namespace {

struct Config {
  std::string mode;
  std::uint32_t sessions;
  long iters;
  long warmup;
  double max_seconds;
  double seconds;
  std::uint32_t window;
  std::string sync;
  std::string journal_dir;
  int client_cpu;
  int server_cpu;
  std::string client_addr;
  std::string server_addr;
};

orders::SyncPolicy sync_policy(const std::string& name) {
  if (name == "none") return orders::SyncPolicy::kNoSync;
  if (name == "interval") return orders::SyncPolicy::kGroupCommit;
  if (name == "every") return orders::SyncPolicy::kEveryRecord;
  die("--sync none|interval|every");
}

// ---------------------------------------------------------------- gateway
void run_gateway(const Config& c, int to_client, int from_client) {
  bench::pin_cpu(c.server_cpu);
  bench::GatewayOptions o;
  o.address = c.server_addr;
  o.cpu = c.server_cpu;
  o.sessions = c.sessions;
  o.journal_path = c.journal_dir + "/bench-orders-rc-" + std::to_string(getpid()) + ".journal";
  o.sync = sync_policy(c.sync);
  std::filesystem::remove(o.journal_path);
  {
    bench::EngineGateway gw(o);
    std::vector<bench::PeerWire> clients(c.sessions);
    if (!bench::read_all(from_client, clients.data(), clients.size() * sizeof(bench::PeerWire))) die("gateway: no client QPs");
    const std::vector<bench::PeerWire> answers = gw.open_sessions(clients);
    bench::write_all(to_client, answers.data(), answers.size() * sizeof(bench::PeerWire));
    char stop = 0;
    bench::read_all(from_client, &stop, 1);  // blocks: the engine thread does the work
    const bench::EngineGateway::Figures f = gw.figures();
    bench::write_all(to_client, &f, sizeof f);
  }
  std::filesystem::remove(o.journal_path);
}

// ---------------------------------------------------------------- client
struct Measured {
  metrics::LatencyHistogram hist;
  double sum_ns = 0;
  std::uint64_t orders = 0;  // acknowledged in the measured window
  double seconds = 0;
  void record(std::int64_t ns) {
    hist.record(static_cast<std::uint64_t>(ns));
    sum_ns += static_cast<double>(ns);
  }
  double mean_us() const { return hist.total() ? sum_ns / 1000.0 / static_cast<double>(hist.total()) : 0; }
};

void pingpong(const Config& c, bench::RcOrderClient& client, Measured& m) {
  const std::int64_t started = now_ns();
  const std::int64_t give_up = started + static_cast<std::int64_t>(c.max_seconds * 1e9);
  std::int64_t measured_from = started;
  for (long it = 0; it < c.warmup + c.iters; ++it) {
    if (it == c.warmup) measured_from = now_ns();
    if (it > c.warmup && (it & 255) == 0 && now_ns() > give_up) break;  // a loaded machine: what fitted
    const auto session = static_cast<std::uint32_t>(it % c.sessions);
    while (!client.can_send(session)) client.poll(now_ns(), [](std::uint32_t, std::uint64_t, std::int64_t) {});
    const std::int64_t t0 = now_ns();
    const std::uint64_t clid = client.send_order(session);
    std::int64_t acked = 0;
    while (acked == 0) {
      const std::int64_t t = now_ns();
      if (t - t0 > 5'000'000'000) die("no Ack within 5 s");
      client.poll(t, [&](std::uint32_t s, std::uint64_t id, std::int64_t seen) {
        if (s == session && id == clid) acked = seen;
      });
    }
    if (it >= c.warmup) {
      m.record(acked - t0);
      ++m.orders;
    }
  }
  m.seconds = static_cast<double>(now_ns() - measured_from) / 1e9;
}

void throughput(const Config& c, bench::RcOrderClient& client, Measured& m) {
  constexpr std::uint32_t kRing = 1024;  // > orders in flight per session
  std::vector<std::int64_t> sent_at(std::size_t{c.sessions} * kRing, 0);
  std::vector<std::uint32_t> in_flight(c.sessions, 0);
  const std::uint32_t per_session = std::max<std::uint32_t>(1, c.window / c.sessions);
  std::uint32_t total = 0;
  const std::int64_t warm_end = now_ns() + 200'000'000;
  const std::int64_t end = warm_end + static_cast<std::int64_t>(c.seconds * 1e9);
  std::uint32_t next = 0;
  for (;;) {
    const std::int64_t t = now_ns();
    if (t >= end) break;
    for (std::uint32_t k = 0; k < c.sessions && total < c.window; ++k) {
      const std::uint32_t s = (next + k) % c.sessions;
      if (in_flight[s] >= per_session || !client.can_send(s)) continue;
      const std::uint64_t clid = client.send_order(s);
      sent_at[std::size_t{s} * kRing + clid % kRing] = now_ns();
      ++in_flight[s];
      ++total;
    }
    next = (next + 1) % c.sessions;
    client.poll(t, [&](std::uint32_t s, std::uint64_t id, std::int64_t seen) {
      --in_flight[s];
      --total;
      if (seen >= warm_end && seen < end) {
        m.record(seen - sent_at[std::size_t{s} * kRing + id % kRing]);
        ++m.orders;
      }
    });
  }
  m.seconds = c.seconds;
}

int run_client(const Config& c, pid_t gateway, int from_gateway, int to_gateway) {
  bench::pin_cpu(c.client_cpu);
  bench::RcOrderClient client(c.client_addr, c.sessions);
  const std::vector<bench::PeerWire> mine = client.peers();
  bench::write_all(to_gateway, mine.data(), mine.size() * sizeof(bench::PeerWire));
  std::vector<bench::PeerWire> answers(c.sessions);
  if (!bench::read_all(from_gateway, answers.data(), answers.size() * sizeof(bench::PeerWire))) die("client: no gateway answers");
  client.connect(answers);

  auto m = std::make_unique<Measured>();
  if (c.mode == "pingpong") {
    pingpong(c, client, *m);
  } else {
    throughput(c, client, *m);
  }
  const char stop = 's';
  bench::write_all(to_gateway, &stop, 1);
  bench::EngineGateway::Figures f{};
  if (!bench::read_all(from_gateway, &f, sizeof f)) die("client: no gateway figures");
  int status = 0;
  waitpid(gateway, &status, 0);
  if (m->hist.total() == 0) die("no order measured");
  std::printf(
      "RESULT {\"bench\":\"orders_rc_%s\",\"sessions\":%u,\"window\":%u,\"sync\":\"%s\",\"client\":\"%s\","
      "\"server\":\"%s\",\"client_cpu\":%d,\"server_cpu\":%d,%s,\"orders_per_s\":%.0f,\"fills\":%" PRIu64
      ",\"gw_ack_p50\":%.3f,\"gw_ack_p99\":%.3f,\"gw_ack_p999\":%.3f,\"gw_acks\":%" PRIu64 ",\"journal_records\":%" PRIu64
      ",\"journal_syncs\":%" PRIu64 ",\"duty_cycles\":%" PRIu64 ",\"idle_cycles\":%" PRIu64
      ",\"client_retransmitted\":%" PRIu64 ",\"client_timeouts\":%" PRIu64 ",\"client_rnr_naks\":%" PRIu64
      ",\"client_window_waits\":%" PRIu64 ",\"client_sent_pkts\":%" PRIu64 ",\"client_rcvd_pkts\":%" PRIu64 "}\n",
      c.mode.c_str(), c.sessions, c.mode == "pingpong" ? 1 : c.window, c.sync.c_str(), c.client_addr.c_str(),
      c.server_addr.c_str(), c.client_cpu, c.server_cpu, bench::latency_json(m->hist, m->mean_us()).c_str(),
      static_cast<double>(m->orders) / m->seconds, client.fills(), f.ack_p50_us, f.ack_p99_us, f.ack_p999_us, f.acks,
      f.journal_records, f.journal_syncs, f.duty_cycles, f.idle_cycles, client.counter("retransmitted_pkts"),
      client.counter("timeouts"), client.counter("rcvd_rnr_err"), client.counter("window_waits"),
      client.counter("sent_pkts"), client.counter("rcvd_pkts"));
  std::fflush(stdout);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  bench::program_name = "bench_orders_rc";
  bench::Args a(argc, argv);
  Config c;
  c.mode = a.str("mode", "pingpong");
  c.sessions = static_cast<std::uint32_t>(a.num("sessions", 1));
  c.iters = a.num("iters", 100000);
  c.warmup = a.num("warmup", 10000);
  c.max_seconds = a.real("max-seconds", 30.0);
  c.seconds = a.real("seconds", 2.0);
  c.window = static_cast<std::uint32_t>(a.num("window", 64));
  c.sync = a.str("sync", "none");
  c.journal_dir = a.str("journal-dir", std::filesystem::temp_directory_path().c_str());
  c.client_cpu = static_cast<int>(a.num("client-cpu", 1));
  c.server_cpu = static_cast<int>(a.num("server-cpu", 0));
  c.client_addr = a.str("client", "127.0.5.1");
  c.server_addr = a.str("server", "127.0.5.2");
  if (c.mode != "pingpong" && c.mode != "throughput") die("--mode pingpong|throughput");
  if (c.sessions == 0 || c.sessions > 64) die("--sessions 1..64");
  if (c.window == 0 || c.window > c.sessions * bench::RcOrderClient::kSendSlots) die("--window 1..sessions x 128");
  sync_policy(c.sync);
  signal(SIGPIPE, SIG_IGN);
  return bench::run_forked_pair([&](int to_client, int from_client) { run_gateway(c, to_client, from_client); },
                                [&](pid_t gateway, int from_gateway, int to_gateway) {
                                  return run_client(c, gateway, from_gateway, to_gateway);
                                });
}
