// The plain-UDP anchor for bench_soft_ud_mcast: a C-style multicast sender
// (sendmmsg, --batch datagrams per call) and --subs subscriber processes
// (fork; recvmmsg with MSG_WAITFORONE, blocking), on loopback with no
// system change: subscribers join --group on interface 127.0.0.1, the
// sender sets IP_MULTICAST_IF 127.0.0.1 and IP_MULTICAST_LOOP. Each
// datagram is --datagram bytes (pass the soft device's UDP payload size to
// compare like with like) and carries a sequence number in its first 8.
// Sender on --sender-cpu, subscribers on --sub-cpu. Prints one `RESULT {json}` line.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <algorithm>
#include <cinttypes>

#include "bench_common.h"

using qpgate::bench::now_ns;

namespace {

struct SubReport {
  std::uint64_t received;
  std::uint64_t gaps;
  std::int64_t first_ns;
  std::int64_t last_ns;
};

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "bench_udp_mcast[%d]: %s: %s\n", getpid(), what, std::strerror(errno));
  std::_Exit(1);
}

void setopt(int fd, int level, int name, int value, const char* what) {
  if (setsockopt(fd, level, name, &value, sizeof value) != 0) die(what);
}

constexpr int kMaxBatch = 64;

void run_sub(in_addr group, int port, int datagram, int ready_fd, int stop_fd, int result_fd) {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) die("socket");
  setopt(fd, SOL_SOCKET, SO_REUSEADDR, 1, "SO_REUSEADDR");
  setopt(fd, SOL_SOCKET, SO_RCVBUF, 4 << 20, "SO_RCVBUF");
  setopt(fd, IPPROTO_IP, IP_MULTICAST_ALL, 0, "IP_MULTICAST_ALL");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr = group;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) die("bind");
  ip_mreq m{};
  m.imr_multiaddr = group;
  inet_pton(AF_INET, "127.0.0.1", &m.imr_interface);
  if (setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &m, sizeof m) != 0) die("IP_ADD_MEMBERSHIP");
  timeval tv{0, 10'000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  fcntl(stop_fd, F_SETFL, O_NONBLOCK);
  const char ready = 'r';
  qpgate::bench::write_all(ready_fd, &ready, 1);

  std::vector<char> bufs(static_cast<std::size_t>(kMaxBatch) * static_cast<std::size_t>(datagram + 64));
  mmsghdr msgs[kMaxBatch];
  iovec iov[kMaxBatch];
  for (int i = 0; i < kMaxBatch; ++i) {
    iov[i] = iovec{bufs.data() + static_cast<std::size_t>(i) * static_cast<std::size_t>(datagram + 64),
                   static_cast<std::size_t>(datagram + 64)};
    msgs[i] = mmsghdr{};
    msgs[i].msg_hdr.msg_iov = &iov[i];
    msgs[i].msg_hdr.msg_iovlen = 1;
  }
  SubReport r{};
  std::uint64_t expect = 0;
  for (;;) {
    const int n = recvmmsg(fd, msgs, kMaxBatch, MSG_WAITFORONE, nullptr);
    if (n > 0) {
      const std::int64_t t = now_ns();
      if (r.received == 0) r.first_ns = t;
      r.last_ns = t;
      for (int i = 0; i < n; ++i) {
        std::uint64_t seq;
        std::memcpy(&seq, iov[i].iov_base, 8);
        ++r.received;
        if (seq > expect) r.gaps += seq - expect;
        if (seq + 1 > expect) expect = seq + 1;
      }
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EINTR) die("recvmmsg");
    char c;
    if (read(stop_fd, &c, 1) == 1) break;
  }
  qpgate::bench::write_all(result_fd, &r, sizeof r);
}

}  // namespace

int main(int argc, char** argv) {
  qpgate::bench::Args a(argc, argv);
  const int datagram = static_cast<int>(a.num("datagram", 88));
  const double seconds = a.real("seconds", 2.0);
  const int batch = std::clamp(static_cast<int>(a.num("batch", 32)), 1, kMaxBatch);
  const int subs = static_cast<int>(a.num("subs", 1));
  const int sender_cpu = static_cast<int>(a.num("sender-cpu", 1));
  const int sub_cpu = static_cast<int>(a.num("sub-cpu", 0));
  const int port = static_cast<int>(a.num("port", 14791));
  in_addr group{};
  if (inet_pton(AF_INET, a.str("group", "239.77.1.1").c_str(), &group) != 1) die("--group");
  if (datagram < 8) die("--datagram >= 8");
  signal(SIGPIPE, SIG_IGN);

  int ready[2], results[2];
  if (pipe(ready) != 0 || pipe(results) != 0) die("pipe");
  std::vector<int> stops;
  std::vector<pid_t> kids;
  for (int i = 0; i < subs; ++i) {
    int stop[2];
    if (pipe(stop) != 0) die("pipe");
    const pid_t pid = fork();
    if (pid < 0) die("fork");
    if (pid == 0) {
      close(ready[0]);
      close(results[0]);
      close(stop[1]);
      qpgate::bench::pin_cpu(sub_cpu);
      run_sub(group, port, datagram, ready[1], stop[0], results[1]);
      std::_Exit(0);
    }
    close(stop[0]);
    stops.push_back(stop[1]);
    kids.push_back(pid);
  }
  close(ready[1]);
  close(results[1]);
  for (int i = 0; i < subs; ++i) {
    char r;
    if (!qpgate::bench::read_all(ready[0], &r, 1)) die("a subscriber did not start");
  }

  qpgate::bench::pin_cpu(sender_cpu);
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) die("socket");
  in_addr lo{};
  inet_pton(AF_INET, "127.0.0.1", &lo);
  if (setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &lo, sizeof lo) != 0) die("IP_MULTICAST_IF");
  setopt(fd, IPPROTO_IP, IP_MULTICAST_LOOP, 1, "IP_MULTICAST_LOOP");
  setopt(fd, SOL_SOCKET, SO_SNDBUF, 4 << 20, "SO_SNDBUF");
  sockaddr_in dst{};
  dst.sin_family = AF_INET;
  dst.sin_port = htons(static_cast<std::uint16_t>(port));
  dst.sin_addr = group;
  if (connect(fd, reinterpret_cast<sockaddr*>(&dst), sizeof dst) != 0) die("connect");

  std::vector<char> bufs(static_cast<std::size_t>(kMaxBatch) * static_cast<std::size_t>(datagram), 'm');
  mmsghdr msgs[kMaxBatch];
  iovec iov[kMaxBatch];
  for (int i = 0; i < kMaxBatch; ++i) {
    iov[i] = iovec{bufs.data() + static_cast<std::size_t>(i) * static_cast<std::size_t>(datagram),
                   static_cast<std::size_t>(datagram)};
    msgs[i] = mmsghdr{};
    msgs[i].msg_hdr.msg_iov = &iov[i];
    msgs[i].msg_hdr.msg_iovlen = 1;
  }
  std::uint64_t seq = 0, calls = 0, errors = 0;
  const std::int64_t t0 = now_ns();
  const std::int64_t end = t0 + static_cast<std::int64_t>(seconds * 1e9);
  while (now_ns() < end) {
    for (int i = 0; i < batch; ++i) {
      const std::uint64_t s = seq + static_cast<std::uint64_t>(i);
      std::memcpy(iov[i].iov_base, &s, 8);
    }
    const int n = sendmmsg(fd, msgs, static_cast<unsigned>(batch), 0);
    ++calls;
    if (n > 0) {
      seq += static_cast<std::uint64_t>(n);
    } else if (errno != EAGAIN && errno != ENOBUFS && errno != EINTR) {
      die("sendmmsg");
    } else {
      ++errors;
    }
  }
  const double secs = static_cast<double>(now_ns() - t0) / 1e9;
  usleep(200'000);
  for (int s : stops) {
    const char c = 's';
    qpgate::bench::write_all(s, &c, 1);
  }
  double rate_sum = 0, loss_sum = 0, loss_max = 0;
  for (int i = 0; i < subs; ++i) {
    SubReport r{};
    if (!qpgate::bench::read_all(results[0], &r, sizeof r)) die("a subscriber did not report");
    const double w = static_cast<double>(r.last_ns - r.first_ns) / 1e9;
    rate_sum += w > 0 ? static_cast<double>(r.received) / w : 0;
    const double loss = seq > 0 ? 1.0 - static_cast<double>(r.received) / static_cast<double>(seq) : 1.0;
    loss_sum += loss;
    loss_max = std::max(loss_max, loss);
  }
  for (pid_t k : kids) waitpid(k, nullptr, 0);
  std::printf(
      "RESULT {\"bench\":\"udp_mcast\",\"datagram\":%d,\"subs\":%d,\"batch\":%d,\"sent\":%" PRIu64
      ",\"sent_per_s\":%.0f,\"recv_per_s_per_sub\":%.0f,\"loss_mean\":%.5f,\"loss_max\":%.5f,\"send_errors\":%" PRIu64
      ",\"seconds\":%.3f}\n",
      datagram, subs, batch, seq, static_cast<double>(seq) / secs, rate_sum / subs, loss_sum / subs, loss_max, errors,
      secs);
  return 0;
}
