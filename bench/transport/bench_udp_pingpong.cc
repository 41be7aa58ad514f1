// The plain-UDP anchor for bench_soft_rc_pingpong: a C-style ping-pong over
// two sockets on loopback (client 127.0.0.1, echo server 127.0.0.2, forked),
// --size bytes each way, RTT recorded with the same LatencyHistogram.
//   --wait spin   recvfrom(MSG_DONTWAIT) in a loop (busy-poll) on both sides
//   --wait block  blocking recvfrom on both sides
// Pinned to --client-cpu / --server-cpu. Prints one `RESULT {json}` line.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <memory>

#include "bench_common.h"

using qpgate::bench::now_ns;

namespace {

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "bench_udp_pingpong[%d]: %s: %s\n", getpid(), what, std::strerror(errno));
  std::_Exit(1);
}

sockaddr_in addr_of(const std::string& ip, int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  if (inet_pton(AF_INET, ip.c_str(), &a.sin_addr) != 1) die("address");
  return a;
}

int bound_socket(const sockaddr_in& a) {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) die("socket");
  if (bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) die("bind");
  return fd;
}

ssize_t receive(int fd, char* buf, std::size_t n, bool spin) {
  for (;;) {
    const ssize_t r = recv(fd, buf, n, spin ? MSG_DONTWAIT : 0);
    if (r >= 0) return r;
    if (errno != EAGAIN && errno != EINTR) die("recv");
  }
}

}  // namespace

int main(int argc, char** argv) {
  qpgate::bench::Args a(argc, argv);
  const int size = static_cast<int>(a.num("size", 64));
  const long iters = a.num("iters", 100000);
  const long warmup = a.num("warmup", 10000);
  const bool spin = a.str("wait", "spin") == "spin";
  const int client_cpu = static_cast<int>(a.num("client-cpu", 1));
  const int server_cpu = static_cast<int>(a.num("server-cpu", 0));
  const int port = static_cast<int>(a.num("port", 0));
  const sockaddr_in server_addr = addr_of(a.str("server", "127.0.0.2"), port);
  const sockaddr_in client_addr = addr_of(a.str("client", "127.0.0.1"), 0);
  signal(SIGPIPE, SIG_IGN);

  // The server socket exists before the fork, so its port is known to both.
  const int sfd = bound_socket(server_addr);
  sockaddr_in bound{};
  socklen_t len = sizeof bound;
  getsockname(sfd, reinterpret_cast<sockaddr*>(&bound), &len);
  const pid_t child = fork();
  if (child < 0) die("fork");
  std::vector<char> buf(static_cast<std::size_t>(size) + 64, 'x');
  if (child == 0) {
    qpgate::bench::pin_cpu(server_cpu);
    for (;;) {
      sockaddr_in from{};
      socklen_t fl = sizeof from;
      ssize_t r;
      for (;;) {
        r = recvfrom(sfd, buf.data(), buf.size(), spin ? MSG_DONTWAIT : 0, reinterpret_cast<sockaddr*>(&from), &fl);
        if (r >= 0) break;
        if (errno != EAGAIN && errno != EINTR) die("recvfrom");
      }
      if (r == 1 && buf[0] == 'Q') std::_Exit(0);
      if (sendto(sfd, buf.data(), static_cast<std::size_t>(r), 0, reinterpret_cast<sockaddr*>(&from), fl) < 0) die("sendto");
    }
  }
  close(sfd);
  qpgate::bench::pin_cpu(client_cpu);
  const int cfd = bound_socket(client_addr);
  if (connect(cfd, reinterpret_cast<const sockaddr*>(&bound), sizeof bound) != 0) die("connect");
  auto hist = std::make_unique<qpgate::metrics::LatencyHistogram>();
  double sum = 0;
  const std::int64_t started = now_ns();
  const std::int64_t give_up = started + static_cast<std::int64_t>(a.real("max-seconds", 30.0) * 1e9);
  long i = 0;
  for (; i < warmup + iters; ++i) {
    if (i > warmup && (i & 255) == 0 && now_ns() > give_up) break;  // --max-seconds: a loaded machine
    const std::int64_t t0 = now_ns();
    if (send(cfd, buf.data(), static_cast<std::size_t>(size), 0) != size) die("send");
    if (receive(cfd, buf.data(), buf.size(), spin) != size) die("short echo");
    const std::int64_t rtt = now_ns() - t0;
    if (i >= warmup) {
      hist->record(static_cast<std::uint64_t>(rtt));
      sum += static_cast<double>(rtt);
    }
  }
  const double secs = static_cast<double>(now_ns() - started) / 1e9;
  const char q = 'Q';
  (void)send(cfd, &q, 1, 0);
  int st = 0;
  waitpid(child, &st, 0);
  std::printf("RESULT {\"bench\":\"udp_pingpong\",\"wait\":\"%s\",\"size\":%d,%s,\"rtt_per_s\":%.0f}\n",
              spin ? "spin" : "block", size, qpgate::bench::latency_json(*hist, sum / 1000.0 / static_cast<double>(hist->total())).c_str(),
              static_cast<double>(i) / secs);
  return 0;
}
