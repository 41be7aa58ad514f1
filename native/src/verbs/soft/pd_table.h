// Protection domains of the soft device. A PD is a number; what it protects
// is enforced by the tables that carry it (mr_table.h: a QP reaches only the
// regions registered in its own PD). Deallocating a PD that still has
// objects is EBUSY, as ibv_dealloc_pd.
#pragma once

#include <cstdint>
#include <unordered_map>

#include "verbs/error.h"

namespace qpgate::verbs::soft {

class PdTable {
 public:
  explicit PdTable(std::uint32_t max_pd = 0x7ff00) : max_pd_(max_pd) {}

  Result<std::uint32_t> alloc();                // handles start at 1; 0 is never a PD
  Status dealloc(std::uint32_t pd);             // ENOENT unknown, EBUSY while in use
  Status add_ref(std::uint32_t pd);             // an MR, QP, SRQ or AH was made in pd
  void release(std::uint32_t pd);               // ... and is gone
  bool contains(std::uint32_t pd) const { return refs_.count(pd) != 0; }
  std::uint32_t refs(std::uint32_t pd) const;
  std::size_t size() const { return refs_.size(); }

 private:
  std::uint32_t max_pd_;
  std::uint32_t next_ = 1;
  std::unordered_map<std::uint32_t, std::uint32_t> refs_;  // pd → objects in it
};

}  // namespace qpgate::verbs::soft
