#include "feed/recovery_codec.h"

#include <protozero/buffer_fixed.hpp>
#include <protozero/exception.hpp>
#include <protozero/pbf_reader.hpp>
#include <protozero/pbf_writer.hpp>

#include <iterator>
#include <stdexcept>

namespace qpgate::feed::recovery {
namespace {

using Writer = protozero::basic_pbf_writer<protozero::fixed_size_buffer_adaptor>;
using protozero::pbf_wire_type;

// Envelope field numbers (RecoveryRequest / RecoveryReply).
constexpr protozero::pbf_tag_type kRetransmit = 1;
constexpr protozero::pbf_tag_type kSnapshot = 2;
constexpr protozero::pbf_tag_type kError = 3;
constexpr protozero::pbf_tag_type kReport = 3;  // RecoveryRequest.report

bool want(protozero::pbf_reader& r, pbf_wire_type t, const char** error, const char* message) {
  if (r.wire_type() == t) return true;
  *error = message;
  return false;
}

// Reads a varint field into `dst` (proto3 scalars), or names the field whose wire type is wrong.
template <class T>
bool varint(protozero::pbf_reader& r, T& dst, const char** error, const char* wrong_type) {
  if (!want(r, pbf_wire_type::varint, error, wrong_type)) return false;
  dst = static_cast<T>(r.get_uint64());
  return true;
}

bool decode_retransmit(protozero::data_view v, RetransmitRequest& out, const char** error) {
  protozero::pbf_reader r{v};
  while (r.next()) {
    bool ok = true;
    switch (r.tag()) {
      case 1: ok = varint(r, out.channel, error, "RetransmitRequest.channel: wrong wire type"); break;
      case 2: ok = varint(r, out.session, error, "RetransmitRequest.session: wrong wire type"); break;
      case 3: ok = varint(r, out.from_sequence, error, "RetransmitRequest.from_sequence: wrong wire type"); break;
      case 4: ok = varint(r, out.count, error, "RetransmitRequest.count: wrong wire type"); break;
      case 5: ok = varint(r, out.request_id, error, "RetransmitRequest.request_id: wrong wire type"); break;
      default: r.skip();  // proto3: unknown fields are ignored
    }
    if (!ok) return false;
  }
  return true;
}

bool decode_snapshot(protozero::data_view v, SnapshotRequest& out, const char** error) {
  protozero::pbf_reader r{v};
  while (r.next()) {
    bool ok = true;
    std::uint32_t ignored = 0;
    switch (r.tag()) {
      case 1: ok = varint(r, out.channel, error, "SnapshotRequest.channel: wrong wire type"); break;
      case 2: ok = varint(r, out.request_id, error, "SnapshotRequest.request_id: wrong wire type"); break;
      case 3:
        if (r.wire_type() == pbf_wire_type::length_delimited) {
          auto ids = r.get_packed_uint32();
          for (auto it = ids.begin(); it != ids.end(); ++it) ++out.instrument_filters;
        } else {
          ok = varint(r, ignored, error, "SnapshotRequest.instrument_ids: wrong wire type");
          ++out.instrument_filters;
        }
        break;
      default: r.skip();
    }
    if (!ok) return false;
  }
  return true;
}

bool decode_report(protozero::data_view v, SubscriberReport& out, const char** error) {
  protozero::pbf_reader r{v};
  std::uint64_t* fields[] = {&out.queued,        &out.dropped,         &out.conflated,           &out.gaps,
                             &out.unrecoverable, &out.ring_full_drops, &out.other_session_frames};
  while (r.next()) {
    if (r.tag() >= 1 && r.tag() <= std::size(fields)) {
      if (!varint(r, *fields[r.tag() - 1], error, "SubscriberReport: wrong wire type")) return false;
    } else {
      r.skip();
    }
  }
  return true;
}

template <class Fn>
std::size_t write(std::span<std::uint8_t> out, Fn&& fn) {
  protozero::fixed_size_buffer_adaptor buf{reinterpret_cast<char*>(out.data()), out.size()};
  try {
    Writer w{buf};
    fn(w);
  } catch (const std::length_error&) {
    return 0;
  }
  return buf.size();
}

Status status_of(std::uint32_t v) { return v < kStatusCount ? static_cast<Status>(v) : Status::kUnspecified; }

}  // namespace

bool decode_request(std::span<const std::uint8_t> bytes, Request& out, const char** error) {
  out = Request{};
  *error = nullptr;
  if (bytes.empty()) {
    *error = "empty request";
    return false;
  }
  try {
    protozero::pbf_reader r{reinterpret_cast<const char*>(bytes.data()), bytes.size()};
    while (r.next()) {
      if (r.tag() == kRetransmit || r.tag() == kSnapshot || r.tag() == kReport) {
        if (!want(r, pbf_wire_type::length_delimited, error, "RecoveryRequest.body: wrong wire type")) return false;
        if (out.kind != RequestKind::kNone) {
          *error = "RecoveryRequest has two bodies";
          return false;
        }
        const protozero::data_view v = r.get_view();
        if (r.tag() == kRetransmit) {
          out.kind = RequestKind::kRetransmit;
          if (!decode_retransmit(v, out.retransmit, error)) return false;
        } else if (r.tag() == kReport) {
          out.kind = RequestKind::kReport;
          if (!decode_report(v, out.report, error)) return false;
        } else {
          out.kind = RequestKind::kSnapshot;
          if (!decode_snapshot(v, out.snapshot, error)) return false;
        }
      } else {
        r.skip();
      }
    }
  } catch (const protozero::end_of_buffer_exception&) {
    *error = "truncated protobuf";
    return false;
  } catch (const protozero::exception&) {
    *error = "invalid protobuf";
    return false;
  }
  if (out.kind == RequestKind::kNone) {
    *error = "RecoveryRequest has no body (retransmit, snapshot or report)";
    return false;
  }
  return true;
}

std::size_t encode_request(const RetransmitRequest& q, std::span<std::uint8_t> out) {
  return write(out, [&](Writer& w) {
    Writer m{w, kRetransmit};
    m.add_uint32(1, q.channel);  // always: an empty body would drop the submessage (channel 0 is a channel)
    if (q.session != 0) m.add_uint32(2, q.session);
    if (q.from_sequence != 0) m.add_uint64(3, q.from_sequence);
    if (q.count != 0) m.add_uint32(4, q.count);
    if (q.request_id != 0) m.add_uint64(5, q.request_id);
  });
}

std::size_t encode_request(const SnapshotRequest& q, std::span<std::uint8_t> out) {
  return write(out, [&](Writer& w) {
    Writer m{w, kSnapshot};
    m.add_uint32(1, q.channel);  // always, as above
    if (q.request_id != 0) m.add_uint64(2, q.request_id);
  });
}

std::size_t encode_request(const SubscriberReport& q, std::span<std::uint8_t> out) {
  return write(out, [&](Writer& w) {
    Writer m{w, kReport};
    const std::uint64_t fields[] = {q.queued,        q.dropped,         q.conflated,          q.gaps,
                                    q.unrecoverable, q.ring_full_drops, q.other_session_frames};
    for (std::uint32_t i = 0; i < std::size(fields); ++i) {
      if (fields[i] != 0 || i == 0) m.add_uint64(i + 1, fields[i]);  // queued always: never an empty body
    }
  });
}

std::size_t encode_retransmit_reply(const RetransmitReplyHead& h, std::span<const std::span<const std::uint8_t>> frames,
                                    std::uint8_t frame_flag, std::span<std::uint8_t> out) {
  const std::size_t n = write(out, [&](Writer& w) {
    Writer m{w, kRetransmit};
    if (h.request_id != 0) m.add_uint64(1, h.request_id);
    m.add_enum(2, static_cast<std::int32_t>(h.status));
    if (h.channel != 0) m.add_uint32(3, h.channel);
    if (h.session != 0) m.add_uint32(4, h.session);
    for (const auto& f : frames) m.add_bytes(5, reinterpret_cast<const char*>(f.data()), f.size());
    if (h.oldest_sequence != 0) m.add_uint64(6, h.oldest_sequence);
    if (h.next_sequence != 0) m.add_uint64(7, h.next_sequence);
    if (h.retry_after_ns != 0) m.add_uint64(8, h.retry_after_ns);
  });
  if (n == 0 || frame_flag == 0 || frames.empty()) return n;
  // Flag the copies where they now lie in `out` (byte 1 of each frame).
  protozero::pbf_reader env{reinterpret_cast<const char*>(out.data()), n};
  while (env.next(kRetransmit)) {
    protozero::pbf_reader m = env.get_message();
    while (m.next(5)) {
      const protozero::data_view v = m.get_view();
      if (v.size() > 1) out[static_cast<std::size_t>(reinterpret_cast<const std::uint8_t*>(v.data()) - out.data()) + 1] |= frame_flag;
    }
  }
  return n;
}

std::size_t encode_snapshot_reply(const SnapshotReplyHead& h, std::span<const std::span<const std::uint8_t>> frames,
                                  std::span<std::uint8_t> out) {
  return write(out, [&](Writer& w) {
    Writer m{w, kSnapshot};
    if (h.request_id != 0) m.add_uint64(1, h.request_id);
    m.add_enum(2, static_cast<std::int32_t>(h.status));
    if (h.channel != 0) m.add_uint32(3, h.channel);
    if (h.session != 0) m.add_uint32(4, h.session);
    if (h.last_sequence != 0) m.add_uint64(5, h.last_sequence);
    for (const auto& f : frames) m.add_bytes(6, reinterpret_cast<const char*>(f.data()), f.size());
    if (h.part != 0) m.add_uint32(10, h.part);
    if (h.last) m.add_bool(11, true);
    if (h.retry_after_ns != 0) m.add_uint64(12, h.retry_after_ns);
  });
}

std::size_t encode_error_reply(Status status, std::string_view message, std::span<std::uint8_t> out) {
  return write(out, [&](Writer& w) {
    Writer m{w, kError};
    m.add_enum(1, static_cast<std::int32_t>(status));
    m.add_string(2, message.data(), message.size());
  });
}

namespace {

// A reply's scalar or bytes field, with its wire type checked (a reply comes
// from the network too: a wrong type is an error, never a misread).
bool scalar(protozero::pbf_reader& m, std::uint64_t& dst, const char** error) {
  return varint(m, dst, error, "RecoveryReply: a scalar field with the wrong wire type");
}
bool bytes(protozero::pbf_reader& m, protozero::data_view& dst, const char** error) {
  if (!want(m, pbf_wire_type::length_delimited, error, "RecoveryReply: a bytes field with the wrong wire type")) return false;
  dst = m.get_view();
  return true;
}
template <class T>
bool narrow(protozero::pbf_reader& m, T& dst, const char** error) {
  std::uint64_t v = 0;
  if (!scalar(m, v, error)) return false;
  dst = static_cast<T>(v);
  return true;
}
bool status(protozero::pbf_reader& m, Status& dst, const char** error) {
  std::uint64_t v = 0;
  if (!scalar(m, v, error)) return false;
  dst = status_of(v < kStatusCount ? static_cast<std::uint32_t>(v) : 0);
  return true;
}

}  // namespace

// long because: one field table per reply kind, in the order of
// proto/qpgate/recovery/v1/recovery.proto, read side by side with it.
bool decode_reply(std::span<const std::uint8_t> bytes_in, Reply& out, const char** error) {
  out.kind = ReplyKind::kNone;
  out.frame_count = 0;
  out.retransmit = {};
  out.snapshot = {};
  out.error_status = Status::kUnspecified;
  out.error_message = {};
  *error = nullptr;
  auto add_frame = [&](protozero::pbf_reader& m) {
    protozero::data_view v;
    if (!bytes(m, v, error)) return false;
    if (out.frame_count == Reply::kMaxFrames) {
      *error = "reply has too many frames";
      return false;
    }
    out.frames[out.frame_count++] = {reinterpret_cast<const std::uint8_t*>(v.data()), v.size()};
    return true;
  };
  try {
    protozero::pbf_reader env{reinterpret_cast<const char*>(bytes_in.data()), bytes_in.size()};
    while (env.next()) {
      if (env.wire_type() != pbf_wire_type::length_delimited || out.kind != ReplyKind::kNone) {
        env.skip();
        continue;
      }
      bool ok = true;
      if (env.tag() == kRetransmit) {
        out.kind = ReplyKind::kRetransmit;
        protozero::pbf_reader m = env.get_message();
        RetransmitReplyHead& h = out.retransmit;
        while (ok && m.next()) {
          switch (m.tag()) {
            case 1: ok = scalar(m, h.request_id, error); break;
            case 2: ok = status(m, h.status, error); break;
            case 3: ok = narrow(m, h.channel, error); break;
            case 4: ok = narrow(m, h.session, error); break;
            case 5: ok = add_frame(m); break;
            case 6: ok = scalar(m, h.oldest_sequence, error); break;
            case 7: ok = scalar(m, h.next_sequence, error); break;
            case 8: ok = scalar(m, h.retry_after_ns, error); break;
            default: m.skip();
          }
        }
      } else if (env.tag() == kSnapshot) {
        out.kind = ReplyKind::kSnapshot;
        protozero::pbf_reader m = env.get_message();
        SnapshotReplyHead& h = out.snapshot;
        while (ok && m.next()) {
          switch (m.tag()) {
            case 1: ok = scalar(m, h.request_id, error); break;
            case 2: ok = status(m, h.status, error); break;
            case 3: ok = narrow(m, h.channel, error); break;
            case 4: ok = narrow(m, h.session, error); break;
            case 5: ok = scalar(m, h.last_sequence, error); break;
            case 6: ok = add_frame(m); break;
            case 10: ok = narrow(m, h.part, error); break;
            case 11: ok = narrow(m, h.last, error); break;
            case 12: ok = scalar(m, h.retry_after_ns, error); break;
            default: m.skip();
          }
        }
      } else if (env.tag() == kError) {
        out.kind = ReplyKind::kError;
        protozero::pbf_reader m = env.get_message();
        while (ok && m.next()) {
          protozero::data_view v;
          switch (m.tag()) {
            case 1: ok = status(m, out.error_status, error); break;
            case 2:
              ok = bytes(m, v, error);
              if (ok) out.error_message = std::string_view(v.data(), v.size());
              break;
            default: m.skip();
          }
        }
      } else {
        env.skip();
      }
      if (!ok) return false;
    }
  } catch (const protozero::exception&) {
    *error = "invalid protobuf";
    return false;
  }
  if (out.kind == ReplyKind::kNone) {
    *error = "RecoveryReply has no body";
    return false;
  }
  return true;
}

}  // namespace qpgate::feed::recovery
