#include "declared_counters.h"

namespace qpgate::addon {

std::string js_name(std::string_view declared) {
  std::string out;
  out.reserve(declared.size());
  bool upper = false;
  for (const char c : declared) {
    if (c == '_') {
      upper = true;
      continue;
    }
    out.push_back(upper && c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c);
    upper = false;
  }
  return out;
}

}  // namespace qpgate::addon
