#include "state_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "args.h"

namespace qpgate::addon {
namespace {

constexpr const char* kLockFile = "qpgate.lock";

std::string errno_message(const std::string& what, const std::string& path) {
  return "state.dir lock " + path + ": " + what + ": " + std::strerror(errno);
}

// The pid the holder wrote into the lock file, or "unknown".
std::string holder_pid(int fd) {
  char buf[32] = {};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  std::string pid = n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : "";
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
  return pid.empty() ? "unknown" : pid;
}

bool write_pid(int fd) {
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0) return false;
  return ::pwrite(fd, pid.data(), pid.size(), 0) == static_cast<ssize_t>(pid.size());
}

Napi::Error locked_error(Napi::Env env, const std::string& dir, const std::string& pid) {
  Napi::Error e = Napi::Error::New(env, "state.dir " + dir + " is in use by another qpgate (pid " + pid +
                                            "); stop it or give this one another state.dir");
  e.Set("code", Napi::String::New(env, "ELOCKED"));
  e.Set("pid", Napi::String::New(env, pid));
  return e;
}

// lockStateDir(dir) → fd: an exclusive flock on <dir>/qpgate.lock, held while
// the fd is open (the caller closes it at shutdown; the kernel releases it at
// exit, SIGKILL included). flock belongs to the open file, so a second lock in
// the same process is refused as well. The file carries the holder's pid for
// the message a second gateway prints. Throws code 'ELOCKED' when it is held.
Napi::Value LockStateDir(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const std::string dir = to_str(env, info[0], "lockStateDir: dir", "the state directory (a string)");
  const std::string path = dir + "/" + kLockFile;
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) throw Napi::Error::New(env, errno_message("open", path));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    const std::string pid = holder_pid(fd);
    ::close(fd);
    errno = err;
    if (err == EWOULDBLOCK) throw locked_error(env, dir, pid);
    throw Napi::Error::New(env, errno_message("flock", path));
  }
  if (!write_pid(fd)) {
    const std::string message = errno_message("write pid", path);
    ::close(fd);
    throw Napi::Error::New(env, message);
  }
  return Napi::Number::New(env, fd);
}

}  // namespace

void init_state_lock(Napi::Env env, Napi::Object exports) {
  exports.Set("lockStateDir", Napi::Function::New(env, LockStateDir, "lockStateDir"));
}

}  // namespace qpgate::addon
