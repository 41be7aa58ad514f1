// Shared by the benchmarks that drive a verbs device (bench_soft_rc_pingpong,
// bench_soft_ud_mcast, bench/rdma/bench_ibv_lat, bench/orders/bench_orders_rc):
// failure handling (a benchmark that cannot set up says why and exits 1,
// from either process of a forked pair) and the forked pair itself.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "verbs/error.h"

namespace qpgate::bench {

// Set by main: the program name in every message.
inline const char* program_name = "bench";

[[noreturn]] inline void die(const std::string& what) {
  std::fprintf(stderr, "%s[%d]: %s\n", program_name, getpid(), what.c_str());
  std::_Exit(1);
}

template <class T>
T take(verbs::Result<T> r, const std::string& what) {
  if (!r.ok()) die(what + ": " + r.error().message);
  return std::move(*r);
}

inline void check(const verbs::Status& s, const std::string& what) {
  if (!s.ok()) die(what + ": " + std::string(s.message()));
}

// A forked pair joined by two pipes: `server(to_client, from_client)` runs
// in the child, which then exits 0; `client(child, from_server, to_server)`
// runs here and its value is returned. Each side sees only its own ends, so
// either side's exit ends the other's blocking reads.
template <class Server, class Client>
int run_forked_pair(Server server, Client client) {
  int s2c[2], c2s[2];
  if (pipe(s2c) != 0 || pipe(c2s) != 0) die("pipe");
  const pid_t child = fork();
  if (child < 0) die("fork");
  if (child == 0) {
    close(s2c[0]);
    close(c2s[1]);
    server(s2c[1], c2s[0]);
    std::fflush(stderr);
    std::_Exit(0);
  }
  close(s2c[1]);
  close(c2s[0]);
  return client(child, s2c[0], c2s[1]);
}

}  // namespace qpgate::bench
