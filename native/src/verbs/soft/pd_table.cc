#include "verbs/soft/pd_table.h"

#include <string>

namespace qpgate::verbs::soft {

Result<std::uint32_t> PdTable::alloc() {
  if (refs_.size() >= max_pd_) {
    return Error{ENOMEM, "no PD left: " + std::to_string(max_pd_) + " allocated (max_pd)"};
  }
  while (next_ == 0 || refs_.count(next_) != 0) ++next_;
  const std::uint32_t pd = next_++;
  refs_.emplace(pd, 0);
  return pd;
}

Status PdTable::dealloc(std::uint32_t pd) {
  auto it = refs_.find(pd);
  if (it == refs_.end()) return Error{ENOENT, "PD " + std::to_string(pd) + " does not exist"};
  if (it->second != 0) {
    return Error{EBUSY, "PD " + std::to_string(pd) + " still has " + std::to_string(it->second) +
                            " objects (MRs, QPs, SRQs, AHs); destroy them first"};
  }
  refs_.erase(it);
  return {};
}

Status PdTable::add_ref(std::uint32_t pd) {
  auto it = refs_.find(pd);
  if (it == refs_.end()) return Error{ENOENT, "PD " + std::to_string(pd) + " does not exist"};
  ++it->second;
  return {};
}

void PdTable::release(std::uint32_t pd) {
  auto it = refs_.find(pd);
  if (it != refs_.end() && it->second > 0) --it->second;
}

std::uint32_t PdTable::refs(std::uint32_t pd) const {
  auto it = refs_.find(pd);
  return it == refs_.end() ? 0 : it->second;
}

}  // namespace qpgate::verbs::soft
