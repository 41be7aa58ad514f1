// A value or an error (DecodeError unless said otherwise). C++20 has no std::expected; this is the part of
// it the codec needs, and it never throws.
#pragma once

#include <cassert>
#include <optional>
#include <utility>

#include "wire/errors.h"

namespace qpgate::wire {

template <class T, class E = DecodeError>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}          // NOLINT(google-explicit-constructor)
  Result(E error) : error_(error) {}           // NOLINT(google-explicit-constructor)

  bool ok() const { return value_.has_value(); }
  explicit operator bool() const { return ok(); }

  // Only on ok(): the value.
  const T& value() const& { assert(ok()); return *value_; }
  T& value() & { assert(ok()); return *value_; }
  const T& operator*() const& { return value(); }
  const T* operator->() const { return &value(); }

  // Only on !ok(): why.
  E error() const { assert(!ok()); return error_; }

 private:
  std::optional<T> value_;
  E error_{};
};

}  // namespace qpgate::wire
