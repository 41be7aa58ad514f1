#include "orders/journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace qpgate::orders {

namespace {

constexpr char kMagic[8] = {'Q', 'P', 'G', 'J', 'R', 'N', 'L', '1'};
constexpr std::uint32_t kVersion = 1;

static_assert(std::endian::native == std::endian::little, "the journal is little-endian and written as host structs");

std::uint32_t get_u32(const std::uint8_t* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
std::uint16_t get_u16(const std::uint8_t* p) {
  std::uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

std::uint32_t crc_of(const std::uint8_t* p, std::size_t n, std::uint32_t crc = 0) {
  return static_cast<std::uint32_t>(::crc32(crc, p, static_cast<uInt>(n)));
}

// CRC of a record at `p` (header + payload), skipping the CRC field itself.
std::uint32_t record_crc(const std::uint8_t* p, std::uint32_t payload_len) {
  std::uint32_t crc = crc_of(p, 4);
  return crc_of(p + 8, 4 + std::size_t{payload_len}, crc);
}

std::string errno_text(const char* what, const std::string& path) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "journal %s: %s: %s", path.c_str(), what, std::strerror(errno));
  return buf;
}

enum class RecordCheck { kValid, kTruncated, kBadLength, kBadCrc };

RecordCheck check_record(const std::vector<std::uint8_t>& file, std::size_t at, std::uint32_t& len,
                         std::uint32_t& stored, std::uint32_t& computed) {
  if (file.size() - at < kRecordHeaderBytes) return RecordCheck::kTruncated;
  len = get_u32(&file[at]);
  if (len > kMaxRecordPayload) return RecordCheck::kBadLength;
  if (file.size() - at - kRecordHeaderBytes < len) return RecordCheck::kTruncated;
  stored = get_u32(&file[at + 4]);
  computed = record_crc(&file[at], len);
  if (get_u16(&file[at + 10]) != 0) return RecordCheck::kBadCrc;  // reserved bits must be zero
  return stored == computed ? RecordCheck::kValid : RecordCheck::kBadCrc;
}

// Reads the first `limit` bytes of the file (all of it if shorter).
bool read_all(int fd, std::vector<std::uint8_t>& out, std::uint64_t limit = UINT64_MAX) {
  struct stat st{};
  if (::fstat(fd, &st) != 0) return false;
  out.resize(static_cast<std::size_t>(std::min<std::uint64_t>(static_cast<std::uint64_t>(st.st_size), limit)));
  std::size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

bool write_all(int fd, const std::uint8_t* p, std::size_t n, std::uint64_t at) {
  while (n > 0) {
    const ssize_t w = ::pwrite(fd, p, n, static_cast<off_t>(at));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<std::size_t>(w);
    at += static_cast<std::uint64_t>(w);
  }
  return true;
}

// A regular file readable by others (an older journal) is made 0600; anything else is left alone.
bool owner_only(int fd) {
  struct stat st{};
  if (::fstat(fd, &st) != 0) return false;
  if (!S_ISREG(st.st_mode) || (st.st_mode & 077) == 0) return true;
  return ::fchmod(fd, st.st_mode & 0700) == 0;
}

bool sync_parent_dir(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return false;
  const bool ok = ::fsync(dfd) == 0;
  ::close(dfd);
  return ok;
}

// Hands the records in [header, end) of `file` (checked valid) to the
// visitor; "" or the visitor's refusal with the record's offset.
std::string visit_records(const std::vector<std::uint8_t>& file, std::size_t end, const std::string& path,
                          const ReplayVisitor& visitor, std::uint64_t& visited) {
  for (std::size_t p = kJournalHeaderBytes; p < end;) {
    const std::uint32_t len = get_u32(&file[p]);
    const std::uint16_t type = get_u16(&file[p + 8]);
    std::string why;
    if (!visitor(type, std::span<const std::uint8_t>{&file[p + kRecordHeaderBytes], len}, p, why)) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "journal %s: record at offset %zu (type %u): ", path.c_str(), p, unsigned{type});
      return buf + why;
    }
    ++visited;
    p += kRecordHeaderBytes + len;
  }
  return "";
}

}  // namespace

bool Journal::replay_written(const std::string& path, std::uint64_t end, const ReplayVisitor& visitor,
                             std::string& error) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = errno_text("open", path);
    return false;
  }
  std::vector<std::uint8_t> file;
  const bool read = read_all(fd, file, end);
  ::close(fd);
  if (!read || file.size() != end || end < kJournalHeaderBytes) {
    error = "journal " + path + ": could not read the " + std::to_string(end) + " bytes written";
    return false;
  }
  // The live journal checked these records when it opened, or wrote them since: a bad one is a disk fault.
  for (std::size_t at = kJournalHeaderBytes; at < end;) {
    std::uint32_t len = 0, stored = 0, computed = 0;
    if (check_record(file, at, len, stored, computed) != RecordCheck::kValid) {
      error = "journal " + path + ": bad record at offset " + std::to_string(at) + " (it was valid when written)";
      return false;
    }
    at += kRecordHeaderBytes + len;
  }
  std::uint64_t visited = 0;
  error = visit_records(file, end, path, visitor, visited);
  return error.empty();
}

bool Journal::write_out() { return !failed_ && write_buffer(); }

// long because: open, header, pass 1 (the valid prefix) and pass 2 (replay)
// share the one descriptor each failure must close; the passes are commented.
std::unique_ptr<Journal> Journal::open(const JournalConfig& config, const ReplayVisitor& visitor, std::string& error) {
  // Orders and accounts are nobody else's business: owner-only, an older 0644 file included.
  const int fd = ::open(config.path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    error = errno_text("open", config.path);
    return nullptr;
  }
  auto fail = [&](std::string message) -> std::unique_ptr<Journal> {
    ::close(fd);
    error = std::move(message);
    return nullptr;
  };
  if (!owner_only(fd)) return fail(errno_text("chmod 0600", config.path));
  std::vector<std::uint8_t> file;
  if (!read_all(fd, file)) return fail(errno_text("read", config.path));

  JournalStats stats;
  // Header. Shorter than a header = torn at creation, before any record: start afresh.
  if (file.size() < kJournalHeaderBytes) {
    std::uint8_t header[kJournalHeaderBytes];
    std::memcpy(header, kMagic, 8);
    std::memcpy(header + 8, &kVersion, 4);
    const std::uint32_t crc = crc_of(header, 12);
    std::memcpy(header + 12, &crc, 4);
    if (::ftruncate(fd, 0) != 0 || !write_all(fd, header, sizeof header, 0) || ::fdatasync(fd) != 0) {
      return fail(errno_text("write header", config.path));
    }
    // A new file's name is durable only once its directory is.
    if (!sync_parent_dir(config.path)) return fail(errno_text("fsync directory of", config.path));
    stats.torn_tail_bytes = file.size();
    file.assign(header, header + sizeof header);
  } else {
    if (std::memcmp(file.data(), kMagic, 8) != 0) {
      return fail("journal " + config.path + ": not a qpgate order journal (bad magic at offset 0)");
    }
    const std::uint32_t version = get_u32(&file[8]);
    if (crc_of(file.data(), 12) != get_u32(&file[12])) {
      return fail("journal " + config.path + ": header CRC mismatch at offset 12: refusing to start");
    }
    if (version != kVersion) {
      return fail("journal " + config.path + ": version " + std::to_string(version) + ", expected " +
                  std::to_string(kVersion));
    }
  }

  // Pass 1: find the valid prefix; classify a bad record as torn tail or corruption.
  std::size_t at = kJournalHeaderBytes;
  while (at < file.size()) {
    std::uint32_t len = 0, stored = 0, computed = 0;
    const RecordCheck check = check_record(file, at, len, stored, computed);
    if (check == RecordCheck::kValid) {
      at += kRecordHeaderBytes + len;
      continue;
    }
    // Anything valid after it? Then it is not a torn tail.
    std::size_t valid_after = 0;
    for (std::size_t p = at + 1; p + kRecordHeaderBytes <= file.size(); ++p) {
      std::uint32_t l2 = 0, s2 = 0, c2 = 0;
      if (check_record(file, p, l2, s2, c2) == RecordCheck::kValid && l2 > 0) {
        valid_after = p;
        break;
      }
    }
    if (valid_after != 0) {
      char buf[400];
      const char* what = check == RecordCheck::kBadLength ? "length out of range"
                         : check == RecordCheck::kTruncated ? "length runs past the end of the file"
                                                            : "CRC mismatch";
      std::snprintf(buf, sizeof buf,
                    "journal %s: corrupt record at offset %zu (%s: length %u, stored CRC 0x%08x, computed 0x%08x) "
                    "followed by a valid record at offset %zu: corruption in the middle, refusing to start",
                    config.path.c_str(), at, what, len, stored, computed, valid_after);
      return fail(buf);
    }
    stats.torn_tail_offset = at;
    stats.torn_tail_bytes = file.size() - at;
    break;
  }
  const std::size_t end = at < file.size() ? at : file.size();
  if (stats.torn_tail_bytes != 0 && end < file.size()) {
    if (::ftruncate(fd, static_cast<off_t>(end)) != 0 || ::fdatasync(fd) != 0) {
      return fail(errno_text("truncate torn tail", config.path));
    }
  }

  // Pass 2: replay the valid prefix.
  if (std::string why = visit_records(file, end, config.path, visitor, stats.records_replayed); !why.empty()) {
    return fail(why);
  }

  std::unique_ptr<Journal> journal{new Journal(config, fd, end)};
  journal->stats_.records_replayed = stats.records_replayed;
  journal->stats_.torn_tail_bytes = stats.torn_tail_bytes;
  journal->stats_.torn_tail_offset = stats.torn_tail_offset;
  return journal;
}

Journal::Journal(const JournalConfig& config, int fd, std::uint64_t end)
    : config_(config), fd_(fd), written_(end), appended_(end), durable_(end) {
  buffer_.reserve(config_.buffer_bytes + kRecordHeaderBytes + kMaxRecordPayload);
  if (config_.sync_thread && config_.sync != SyncPolicy::kNoSync) {
    syncer_ = std::make_unique<JournalSyncer>(fd_, end, config_.path);
  }
}

Journal::~Journal() {
  sync();
  syncer_.reset();
  ::close(fd_);
}

std::uint64_t Journal::append(std::uint16_t type, std::span<const std::uint8_t> payload, std::uint64_t now_ns) {
  if (failed_ || payload.size() > kMaxRecordPayload) return 0;
  const auto len = static_cast<std::uint32_t>(payload.size());
  const std::size_t at = buffer_.size();
  buffer_.resize(at + kRecordHeaderBytes + len);  // within the reserve: no allocation
  std::uint8_t* p = &buffer_[at];
  const std::uint16_t reserved = 0;
  std::memcpy(p, &len, 4);
  std::memcpy(p + 8, &type, 2);
  std::memcpy(p + 10, &reserved, 2);
  if (len != 0) std::memcpy(p + kRecordHeaderBytes, payload.data(), len);
  const std::uint32_t crc = record_crc(p, len);
  std::memcpy(p + 4, &crc, 4);
  appended_ += kRecordHeaderBytes + len;
  ++stats_.records_appended;
  if (pending_records_++ == 0) oldest_pending_ns_ = now_ns;

  switch (config_.sync) {
    case SyncPolicy::kEveryRecord:
      if (!begin_sync()) return 0;
      break;
    case SyncPolicy::kGroupCommit:
      if (pending_records_ >= config_.group_max_records && !begin_sync()) return 0;
      break;
    case SyncPolicy::kNoSync:
      break;
  }
  if (buffer_.size() >= config_.buffer_bytes && !write_buffer()) return 0;
  return appended_;
}

bool Journal::write_buffer() {
  if (buffer_.empty()) return !failed_;
  if (!write_all(fd_, buffer_.data(), buffer_.size(), written_)) {
    failed_ = true;
    failure_ = errno_text("write", config_.path);
    return false;
  }
  written_ += buffer_.size();
  stats_.bytes_written += buffer_.size();
  buffer_.clear();
  if (config_.sync == SyncPolicy::kNoSync) {
    durable_ = written_;
    pending_records_ = 0;
  }
  return true;
}

bool Journal::begin_sync() {
  if (!syncer_) return sync();
  if (failed_ || !write_buffer()) return false;
  syncer_->request(written_);
  pending_records_ = 0;
  return true;
}

bool Journal::follow_syncer() {
  if (syncer_->failed() && !failed_) {
    failed_ = true;
    failure_ = syncer_->failure();
  }
  // The watermark first: the syncer counts a sync before it publishes its
  // offset (release), so the count read after acquiring the offset includes
  // the sync that made it durable. Read the other way round, a sync landing
  // between the two loads showed a durable record with no sync counted.
  const std::uint64_t d = syncer_->durable();
  stats_.syncs = syncer_->syncs();
  if (d <= durable_) return false;
  durable_ = d;
  return true;
}

bool Journal::sync() {
  if (failed_) return false;
  if (!write_buffer()) return false;
  if (syncer_) {
    const bool ok = syncer_->wait_for(written_);
    follow_syncer();
    pending_records_ = 0;
    return ok && !failed_;
  }
  if (durable_ == written_) {
    pending_records_ = 0;
    return true;
  }
  if (config_.sync != SyncPolicy::kNoSync) {
    if (::fdatasync(fd_) != 0) {
      failed_ = true;
      failure_ = errno_text("fdatasync", config_.path);
      return false;
    }
    ++stats_.syncs;
  }
  durable_ = written_;
  pending_records_ = 0;
  return true;
}

bool Journal::poll(std::uint64_t now_ns) {
  const std::uint64_t before = durable_;
  const bool waiting = config_.sync == SyncPolicy::kGroupCommit &&
                       now_ns - oldest_pending_ns_ < std::uint64_t{config_.group_max_delay_us} * 1000;
  if (pending_records_ != 0 && !waiting) begin_sync();
  if (syncer_) follow_syncer();
  return durable_ != before;
}

}  // namespace qpgate::orders
