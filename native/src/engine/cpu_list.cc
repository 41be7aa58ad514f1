#include "cpu_list.h"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <iterator>

namespace qpgate::engine {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

bool parse_cpu(std::string_view s, int& out) {
  s = trim(s);
  if (s.empty()) return false;
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, out);
  return ec == std::errc{} && ptr == end && out >= 0;
}

CpuList from_cpu_set(const cpu_set_t& set) {
  CpuList cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

}  // namespace

CpuListParse parse_cpu_list(std::string_view text) {
  CpuListParse result;
  std::string_view rest = trim(text);
  if (rest.empty()) return result;  // an empty cpulist (a memory-only node) is valid
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    const std::size_t dash = item.find('-');
    int first = 0;
    int last = 0;
    const bool ok = dash == std::string_view::npos
                        ? parse_cpu(item, first) && parse_cpu(item, last)
                        : parse_cpu(item.substr(0, dash), first) &&
                              parse_cpu(item.substr(dash + 1), last);
    if (!ok || first > last) {
      result.error = "bad CPU list item '" + std::string(trim(item)) + "' in '" +
                     std::string(trim(text)) + "' (expected e.g. \"0-3,8\")";
      result.cpus.clear();
      return result;
    }
    if (last >= CPU_SETSIZE) {
      result.error = "CPU " + std::to_string(last) + " in '" + std::string(trim(text)) +
                     "' is beyond CPU_SETSIZE (" + std::to_string(CPU_SETSIZE) + ")";
      result.cpus.clear();
      return result;
    }
    for (int cpu = first; cpu <= last; ++cpu) result.cpus.push_back(cpu);
  }
  std::sort(result.cpus.begin(), result.cpus.end());
  result.cpus.erase(std::unique(result.cpus.begin(), result.cpus.end()), result.cpus.end());
  return result;
}

std::string format_cpu_list(const CpuList& cpus) {
  std::string out;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(cpus[i]);
    if (j > i) out += '-' + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

CpuList intersect(const CpuList& a, const CpuList& b) {
  CpuList out;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

CpuList subtract(const CpuList& a, const CpuList& b) {
  CpuList out;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

CpuList process_allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(getpid(), sizeof(set), &set) != 0) return {};
  return from_cpu_set(set);
}

CpuList thread_allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (pthread_getaffinity_np(pthread_self(), sizeof(set), &set) != 0) return {};
  return from_cpu_set(set);
}

}  // namespace qpgate::engine
