// Errors of the verbs interface: an errno value (what ibverbs returns) and
// a sentence saying what was wrong, what was expected and the value given.
//
// Status is "ok or an Error"; Result<T> is "a T or an Error". C++20 has no
// std::expected; these are the part of it the interface needs. Nothing in
// qpgate::verbs throws.
#pragma once

#include <cassert>
#include <cerrno>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace qpgate::verbs {

struct Error {
  int code = EINVAL;    // errno value: EINVAL, ENOMEM, EPERM, EBUSY, ENOENT, EEXIST, EOPNOTSUPP, ...
  std::string message;  // "INIT→RTR for RC requires IBV_QP_DEST_QPN"
};

// A short name for an errno value used here ("EINVAL"), for logs and tests.
std::string_view errno_name(int code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // ok
  Status(Error e) : error_(std::move(e)) {}  // NOLINT(google-explicit-constructor)
  static Status ok_status() { return {}; }

  bool ok() const { return !error_.has_value(); }
  explicit operator bool() const { return ok(); }
  // Only on !ok().
  const Error& error() const { assert(!ok()); return *error_; }
  int code() const { return ok() ? 0 : error_->code; }
  std::string_view message() const { return ok() ? std::string_view{} : std::string_view{error_->message}; }

 private:
  std::optional<Error> error_;
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Error e) : error_(std::move(e)) {}      // NOLINT(google-explicit-constructor)
  // From a failed Status (an ok Status here is a bug: it becomes EINVAL, never UB).
  Result(Status s)  // NOLINT(google-explicit-constructor)
      : error_(s.ok() ? Error{EINVAL, "internal: Result made from an ok Status"} : s.error()) {}

  bool ok() const { return value_.has_value(); }
  explicit operator bool() const { return ok(); }

  // Only on ok().
  const T& value() const& { assert(ok()); return *value_; }
  T& value() & { assert(ok()); return *value_; }
  T&& value() && { assert(ok()); return std::move(*value_); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

  // Only on !ok().
  const Error& error() const { assert(!ok()); return error_; }
  int code() const { return ok() ? 0 : error_.code; }
  std::string_view message() const { return ok() ? std::string_view{} : std::string_view{error_.message}; }
  Status status() const { return ok() ? Status{} : Status{error_}; }

 private:
  std::optional<T> value_;
  Error error_;
};

inline Error make_error(int code, std::string message) { return Error{code, std::move(message)}; }

}  // namespace qpgate::verbs
