#include "verbs_wrap.h"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "args.h"
#include "common/clock.h"
#include "verbs/soft/soft_device.h"  // as_soft_qp
#include "verbs/soft/soft_qp.h"
#include "verbs_convert.h"
#include "verbs_wrap_base.h"

namespace qpgate::addon {
namespace {

namespace soft = verbs::soft;

constexpr napi_type_tag kAhTag = {0x5b1f3e2a9c4d7e61ULL, 0x2e8a6c4b1d3f5a70ULL};

// ---------------------------------------------------------------- MR
class MrWrap : public VerbsWrap<MrWrap, verbs::MemoryRegion> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "MemoryRegion",
                       {InstanceAccessor<&MrWrap::Addr>("addr"), InstanceAccessor<&MrWrap::Length>("length"),
                        InstanceAccessor<&MrWrap::Lkey>("lkey"), InstanceAccessor<&MrWrap::Rkey>("rkey"),
                        InstanceAccessor<&MrWrap::AccessFlags>("access"), InstanceMethod<&MrWrap::Dereg>("dereg")});
  }
  using VerbsWrap::VerbsWrap;
  ~MrWrap() override { release(); }
  void hold(Napi::Object memory) { memory_ = Napi::Persistent(memory); }

 private:
  Napi::Value Addr(const Napi::CallbackInfo& info) { return u64_to_js(info.Env(), obj(info.Env(), "memory region").addr()); }
  Napi::Value Length(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), static_cast<double>(obj(info.Env(), "memory region").length()));
  }
  Napi::Value Lkey(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), obj(info.Env(), "memory region").lkey()); }
  Napi::Value Rkey(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), obj(info.Env(), "memory region").rkey()); }
  Napi::Value AccessFlags(const Napi::CallbackInfo& info) { return access_to_js(info.Env(), obj(info.Env(), "memory region").access()); }
  Napi::Value Dereg(const Napi::CallbackInfo& info) {
    release();                         // no access reaches the memory after this
    if (!memory_.IsEmpty()) memory_.Reset();  // then JS may free it
    return info.Env().Undefined();
  }

  Napi::ObjectReference memory_;  // the registered buffer, kept alive while registered
};

// ---------------------------------------------------------------- AH
// Shared ownership: a QP that posted with an AH keeps it until the QP goes,
// because the send queue holds the AH pointer until the packet is sent.
class AhWrap : public Napi::ObjectWrap<AhWrap> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "AddressHandle",
                       {InstanceAccessor<&AhWrap::Attr>("attr"), InstanceMethod<&AhWrap::Destroy>("destroy")});
  }
  explicit AhWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<AhWrap>(info) {
    info.This().As<Napi::Object>().TypeTag(&kAhTag);
  }
  ~AhWrap() override { release(); }
  void init(EnginePtr e, Napi::Object engine_js, std::shared_ptr<verbs::AddressHandle> ah) {
    engine_ = std::move(e);
    engine_js_ = Napi::Persistent(engine_js);
    ah_ = std::move(ah);
  }
  const std::shared_ptr<verbs::AddressHandle>& ah() const { return ah_; }

  static AhWrap* FromValue(Napi::Value v) {
    if (!v.IsObject() || !v.As<Napi::Object>().CheckTypeTag(&kAhTag)) return nullptr;
    return Unwrap(v.As<Napi::Object>());
  }

 private:
  void release() {
    if (!ah_) return;
    on_engine(engine_, [this] { ah_.reset(); });
  }
  Napi::Value Attr(const Napi::CallbackInfo& info) {
    if (!ah_) throw Napi::Error::New(info.Env(), "qpgate: this address handle was destroyed");
    return ah_attr_to_js(info.Env(), ah_->attr());
  }
  Napi::Value Destroy(const Napi::CallbackInfo& info) {
    release();
    return info.Env().Undefined();
  }
  EnginePtr engine_;
  Napi::ObjectReference engine_js_;
  std::shared_ptr<verbs::AddressHandle> ah_;
};

const verbs::AddressHandle* resolve_ah(Napi::Env env, Napi::Value v, const std::string& where) {
  AhWrap* w = AhWrap::FromValue(v);
  if (w == nullptr || !w->ah()) {
    type_error(env, where, "a live AddressHandle from pd.createAh()", v);
  }
  return w->ah().get();
}

// ---------------------------------------------------------------- CQ
class CqWrap : public VerbsWrap<CqWrap, verbs::CompletionQueue> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "CompletionQueue",
                       {InstanceMethod<&CqWrap::Poll>("poll"), InstanceMethod<&CqWrap::PollInto>("pollInto"),
                        InstanceMethod<&CqWrap::BusyPollInto>("busyPollInto"),
                        InstanceAccessor<&CqWrap::Cqe>("cqe"),
                        InstanceAccessor<&CqWrap::Handle>("handle"), InstanceMethod<&CqWrap::Destroy>("destroy")});
  }
  using VerbsWrap::VerbsWrap;
  ~CqWrap() override { release(); }

 private:
  Napi::Value Poll(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const std::uint32_t max = info.Length() > 0 && !info[0].IsUndefined() ? to_u32(env, info[0], "cq.poll: max", 4096) : 16;
    verbs::CompletionQueue& cq = obj(env, "completion queue");
    scratch_.resize(max);
    verbs::Result<std::size_t> r = verbs::Error{};
    run([&] { r = cq.poll(scratch_); });
    const std::size_t n = unwrap_result(env, r);
    Napi::Array out = Napi::Array::New(env, n);
    for (std::size_t i = 0; i < n; ++i) out.Set(static_cast<std::uint32_t>(i), wc_to_js(env, scratch_[i]));
    return out;
  }
  // The allocation-free poll of the JS clients' hot path: completions as
  // kWcWords u32 words each into a Uint32Array the caller keeps (layout in
  // verbs_convert.h); returns how many.
  Napi::Value PollInto(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Napi::Uint32Array words = to_u32_array(env, info[0], "cq.pollInto: words");
    verbs::CompletionQueue& cq = obj(env, "completion queue");
    scratch_.resize(std::min<std::size_t>(words.ElementLength() / kWcWords, 4096));
    verbs::Result<std::size_t> r = verbs::Error{};
    run([&] { r = cq.poll(scratch_); });
    const std::size_t n = unwrap_result(env, r);
    for (std::size_t i = 0; i < n; ++i) wc_to_words(scratch_[i], words.Data() + i * kWcWords);
    return Napi::Number::New(env, static_cast<double>(n));
  }
  // A driven engine's busy-poll without a JS turn per pass: duty cycles of
  // the CQ's engine and polls of the CQ, in C++, until a completion comes or
  // `budgetNs` passes; writes as pollInto does and returns how many. The JS
  // thread is the engine thread here, so nothing waits for a wake-up.
  Napi::Value BusyPollInto(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Napi::Uint32Array words = to_u32_array(env, info[0], "cq.busyPollInto: words");
    if (!info[1].IsNumber()) type_error(env, "cq.busyPollInto: budgetNs", "a number of ns in 0..1e9", info[1]);
    const double budget = info[1].As<Napi::Number>().DoubleValue();
    if (!(budget >= 0 && budget <= 1e9)) range_error(env, "cq.busyPollInto: budgetNs", "a number of ns in 0..1e9", info[1]);
    verbs::CompletionQueue& cq = obj(env, "completion queue");
    if (!engine_->driven()) throw Napi::Error::New(env, "cq.busyPollInto: the CQ's engine is not driven (startDriven)");
    scratch_.resize(std::min<std::size_t>(words.ElementLength() / kWcWords, 4096));
    const std::uint64_t end = monotonic_ns() + static_cast<std::uint64_t>(budget);
    std::size_t n = 0;
    for (;;) {
      engine_->do_work_once();
      verbs::Result<std::size_t> r = cq.poll(scratch_);
      n = unwrap_result(env, r);
      if (n > 0 || monotonic_ns() >= end) break;
    }
    for (std::size_t i = 0; i < n; ++i) wc_to_words(scratch_[i], words.Data() + i * kWcWords);
    return Napi::Number::New(env, static_cast<double>(n));
  }
  Napi::Value Cqe(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), obj(info.Env(), "completion queue").cqe()); }
  Napi::Value Handle(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), obj(info.Env(), "completion queue").handle());
  }
  Napi::Value Destroy(const Napi::CallbackInfo& info) {
    release();
    return info.Env().Undefined();
  }

  std::vector<verbs::Wc> scratch_;  // poll's and pollInto's, reused (JS thread only)
};

verbs::CompletionQueue* cq_of(Napi::Env env, Napi::FunctionReference& ctor, Napi::Value v, const std::string& where) {
  if (!v.IsObject() || !v.As<Napi::Object>().InstanceOf(ctor.Value()) || CqWrap::Unwrap(v.As<Napi::Object>())->get() == nullptr) {
    type_error(env, where, "a live CompletionQueue from device.createCq()", v);
  }
  return CqWrap::Unwrap(v.As<Napi::Object>())->get();
}

// ---------------------------------------------------------------- SRQ
class SrqWrap : public VerbsWrap<SrqWrap, verbs::SharedReceiveQueue> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "SharedReceiveQueue",
                       {InstanceMethod<&SrqWrap::PostRecv>("postRecv"), InstanceMethod<&SrqWrap::Modify>("modify"),
                        InstanceMethod<&SrqWrap::Query>("query"), InstanceMethod<&SrqWrap::Destroy>("destroy")});
  }
  using VerbsWrap::VerbsWrap;
  ~SrqWrap() override { release(); }

 private:
  Napi::Value PostRecv(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    verbs::SharedReceiveQueue& srq = obj(env, "SRQ");
    RecvBatch b = to_recv_wrs(env, info[0], "srq.postRecv");
    std::optional<verbs::PostRecvResult> r;
    run([&] { r.emplace(srq.post_recv(std::span<const verbs::RecvWr>(b.wrs))); });
    if (!r->ok()) throw verbs_error(env, r->error(), static_cast<long>(r->posted()));
    return Napi::Number::New(env, static_cast<double>(r->posted()));
  }
  Napi::Value Modify(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    verbs::SharedReceiveQueue& srq = obj(env, "SRQ");
    Napi::Object o = to_object(env, info[0], "srq.modify: attributes");
    verbs::SrqAttr a;
    verbs::Flags<verbs::SrqAttrMask> mask;
    if (has(o, "maxWr")) { a.max_wr = to_u32(env, o.Get("maxWr"), "srq.modify: maxWr"); mask |= verbs::SrqAttrMask::MAX_WR; }
    if (has(o, "srqLimit")) { a.srq_limit = to_u32(env, o.Get("srqLimit"), "srq.modify: srqLimit"); mask |= verbs::SrqAttrMask::LIMIT; }
    verbs::Status s;
    run([&] { s = srq.modify(a, mask); });
    if (!s.ok()) throw_status(env, s);
    return env.Undefined();
  }
  Napi::Value Query(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    verbs::SharedReceiveQueue& srq = obj(env, "SRQ");
    verbs::Result<verbs::SrqAttr> r = verbs::Error{};
    run([&] { r = srq.query(); });
    const verbs::SrqAttr a = unwrap_result(env, r);
    Napi::Object o = Napi::Object::New(env);
    o.Set("maxWr", Napi::Number::New(env, a.max_wr));
    o.Set("maxSge", Napi::Number::New(env, a.max_sge));
    o.Set("srqLimit", Napi::Number::New(env, a.srq_limit));
    return o;
  }
  Napi::Value Destroy(const Napi::CallbackInfo& info) {
    release();
    return info.Env().Undefined();
  }
};

// ---------------------------------------------------------------- QP
class QpWrap : public VerbsWrap<QpWrap, verbs::QueuePair> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "QueuePair",
                       {InstanceAccessor<&QpWrap::QpNum>("qpNum"), InstanceAccessor<&QpWrap::Type>("type"),
                        InstanceAccessor<&QpWrap::State>("state"), InstanceMethod<&QpWrap::Modify>("modify"),
                        InstanceMethod<&QpWrap::Query>("query"), InstanceMethod<&QpWrap::PostSend>("postSend"), InstanceMethod<&QpWrap::PostSendBatch>("postSendBatch"),
                        InstanceMethod<&QpWrap::PostRecv>("postRecv"), InstanceMethod<&QpWrap::PostRecvBatch>("postRecvBatch"),
                        InstanceMethod<&QpWrap::AttachMcast>("attachMcast"),
                        InstanceMethod<&QpWrap::DetachMcast>("detachMcast"), InstanceMethod<&QpWrap::Counters>("counters"),
                        InstanceMethod<&QpWrap::SetAckRequests>("setAckRequests"),
                        InstanceMethod<&QpWrap::Destroy>("destroy")});
  }
  using VerbsWrap::VerbsWrap;
  ~QpWrap() override { release_all(); }

 private:
  void release_all() {
    if (!obj_ && ahs_.empty()) return;
    EnginePtr e = engine_;
    on_engine(e, [this] {
      obj_.reset();
      ahs_.clear();  // after the QP: its WQEs may point at them
    });
  }
  Napi::Value QpNum(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), obj(info.Env(), "QP").qp_num()); }
  Napi::Value Type(const Napi::CallbackInfo& info) {
    return Napi::String::New(info.Env(), std::string(verbs::qp_type_name(obj(info.Env(), "QP").qp_type())));
  }
  Napi::Value State(const Napi::CallbackInfo& info) {
    verbs::QueuePair& qp = obj(info.Env(), "QP");
    verbs::QpState s{};
    run([&] { s = qp.state(); });
    return Napi::String::New(info.Env(), std::string(verbs::qp_state_name(s)));
  }
  Napi::Value Modify(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    verbs::QueuePair& qp = obj(env, "QP");
    verbs::QpAttr attr;
    verbs::QpAttrMaskFlags mask;
    to_qp_attr(env, info[0], attr, mask);
    verbs::Status s;
    run([&] { s = qp.modify(attr, mask); });
    if (!s.ok()) throw_status(env, s);
    return env.Undefined();
  }
  // qp.setAckRequests('per-message' | 'window'): verbs/types.h AckRequests.
  Napi::Value SetAckRequests(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    verbs::QueuePair& qp = obj(env, "QP");
    constexpr verbs::AckRequests kModes[] = {verbs::AckRequests::PER_MESSAGE, verbs::AckRequests::WINDOW};
    const verbs::AckRequests mode = kModes[to_choice(env, info[0], "qp.setAckRequests: mode", {"per-message", "window"})];
    verbs::Status s;
    run([&] { s = qp.set_ack_requests(mode); });
    if (!s.ok()) throw_status(env, s);
    return env.Undefined();
  }
  Napi::Value Query(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    verbs::QueuePair& qp = obj(env, "QP");
    verbs::Result<verbs::QpAttr> r = verbs::Error{};
    verbs::QpInitAttr init;
    const soft::SoftQp* sqp = soft::as_soft_qp(qp);
    std::uint32_t send_outstanding = 0;
    std::uint32_t recv_posted = 0;
    run([&] {
      r = qp.query();
      init = qp.init_attr();
      if (sqp != nullptr) {
        send_outstanding = sqp->send_wrs_outstanding();
        recv_posted = sqp->recv_wrs_posted();
      }
    });
    Napi::Object o = qp_attr_to_js(env, unwrap_result(env, r), init);
    o.Set("qpNum", Napi::Number::New(env, qp.qp_num()));
    if (sqp != nullptr) {
      o.Set("sendWrsOutstanding", Napi::Number::New(env, send_outstanding));
      o.Set("recvWrsPosted", Napi::Number::New(env, recv_posted));
    }
    return o;
  }
  Napi::Value PostSend(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    verbs::QueuePair& qp = obj(env, "QP");
    SendBatch b = to_send_wrs(env, info[0], &resolve_ah);
    std::vector<std::shared_ptr<verbs::AddressHandle>> used;
    for (Napi::Object& ah : b.ahs) used.push_back(AhWrap::FromValue(ah)->ah());
    std::optional<verbs::PostSendResult> r;
    run([&] {
      for (auto& ah : used) ahs_.emplace(ah.get(), ah);
      r.emplace(qp.post_send(std::span<const verbs::SendWr>(b.wrs)));
    });
    if (!r->ok()) throw verbs_error(env, r->error(), static_cast<long>(r->posted()));
    return Napi::Number::New(env, static_cast<double>(r->posted()));
  }
  Napi::Value PostRecv(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    verbs::QueuePair& qp = obj(env, "QP");
    RecvBatch b = to_recv_wrs(env, info[0], "qp.postRecv");
    std::optional<verbs::PostRecvResult> r;
    run([&] { r.emplace(qp.post_recv(std::span<const verbs::RecvWr>(b.wrs))); });
    if (!r->ok()) throw verbs_error(env, r->error(), static_cast<long>(r->posted()));
    return Napi::Number::New(env, static_cast<double>(r->posted()));
  }
  // The allocation-free repost of the JS clients' hot path: `count`
  // receives of one SGE each in `mr`, three u32 words per WR in `words`
  // (wr_id, offset in the MR, length).
  Napi::Value PostRecvBatch(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    verbs::QueuePair& qp = obj(env, "QP");
    const BatchArgs a = batch_args(info, "qp.postRecvBatch", 3);
    sges_.resize(a.count);
    recv_wrs_.resize(a.count);
    for (std::uint32_t i = 0; i < a.count; ++i) {
      const std::uint32_t* w = a.words.Data() + 3 * i;
      sges_[i] = batch_sge(env, "qp.postRecvBatch", *a.mr, i, w[1], w[2]);
      recv_wrs_[i] = verbs::RecvWr{w[0], nullptr, std::span<const verbs::Sge>(&sges_[i], 1)};
    }
    std::optional<verbs::PostRecvResult> r;
    run([&] { r.emplace(qp.post_recv(std::span<const verbs::RecvWr>(recv_wrs_))); });
    if (!r->ok()) throw verbs_error(env, r->error(), static_cast<long>(r->posted()));
    return Napi::Number::New(env, static_cast<double>(r->posted()));
  }
  // The SENDs of the JS clients' hot path, without a JS object per WR:
  // `count` SENDs of one SGE each in `mr`, five u32 words per WR in `words`
  // (wr_id low, wr_id high, offset in the MR, length, ibv_send_flags bits).
  Napi::Value PostSendBatch(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    verbs::QueuePair& qp = obj(env, "QP");
    const BatchArgs a = batch_args(info, "qp.postSendBatch", 5);
    constexpr std::uint32_t kKnownFlags = 0xf;  // FENCE | SIGNALED | SOLICITED | INLINE (types.h SendFlag)
    sges_.resize(a.count);
    send_wrs_.resize(a.count);
    for (std::uint32_t i = 0; i < a.count; ++i) {
      const std::uint32_t* w = a.words.Data() + 5 * i;
      if ((w[4] & ~kKnownFlags) != 0) {
        throw Napi::RangeError::New(env, "qp.postSendBatch: wr " + std::to_string(i) + " has unknown send flag bits " +
                                             std::to_string(w[4] & ~kKnownFlags) + " (known: FENCE 1, SIGNALED 2, SOLICITED 4, INLINE 8)");
      }
      sges_[i] = batch_sge(env, "qp.postSendBatch", *a.mr, i, w[2], w[3]);
      verbs::SendWr& wr = send_wrs_[i];
      wr = verbs::SendWr{};
      wr.wr_id = (std::uint64_t{w[1]} << 32) | w[0];
      wr.sg_list = std::span<const verbs::Sge>(&sges_[i], 1);
      wr.send_flags = verbs::SendFlags::from_bits(w[4]);
    }
    std::optional<verbs::PostSendResult> r;
    run([&] { r.emplace(qp.post_send(std::span<const verbs::SendWr>(send_wrs_))); });
    if (!r->ok()) throw verbs_error(env, r->error(), static_cast<long>(r->posted()));
    return Napi::Number::New(env, static_cast<double>(r->posted()));
  }
  Napi::Value Mcast(const Napi::CallbackInfo& info, bool attach) {
    Napi::Env env = info.Env();
    verbs::QueuePair& qp = obj(env, "QP");
    const verbs::Gid mgid = to_gid(env, info[0], attach ? "qp.attachMcast: group" : "qp.detachMcast: group");
    verbs::Status s;
    run([&] { s = attach ? qp.attach_mcast(mgid) : qp.detach_mcast(mgid); });
    if (!s.ok()) throw_status(env, s);
    return env.Undefined();
  }
  Napi::Value AttachMcast(const Napi::CallbackInfo& info) { return Mcast(info, true); }
  Napi::Value DetachMcast(const Napi::CallbackInfo& info) { return Mcast(info, false); }
  Napi::Value Counters(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const soft::SoftQp* sqp = soft::as_soft_qp(obj(env, "QP"));
    if (sqp == nullptr) return Napi::Object::New(env);
    return counters_to_js(env, sqp->counters());  // relaxed atomics: readable from any thread
  }
  Napi::Value Destroy(const Napi::CallbackInfo& info) {
    release_all();
    return info.Env().Undefined();
  }

  std::map<const verbs::AddressHandle*, std::shared_ptr<verbs::AddressHandle>> ahs_;  // engine thread only
  // The batch posts' arguments: a live MR, the words, how many WRs of
  // `words_per_wr` words (default: as many as the words hold).
  struct BatchArgs {
    const verbs::MemoryRegion* mr;
    Napi::Uint32Array words;
    std::uint32_t count;
  };
  BatchArgs batch_args(const Napi::CallbackInfo& info, const std::string& where, std::uint32_t words_per_wr) const {
    Napi::Env env = info.Env();
    const bool is_mr = info[0].IsObject() && info[0].As<Napi::Object>().InstanceOf(classes_->mr.Value());
    MrWrap* mr = is_mr ? MrWrap::Unwrap(info[0].As<Napi::Object>()) : nullptr;
    if (mr == nullptr || mr->get() == nullptr) type_error(env, where + ": mr", "a live MemoryRegion", info[0]);
    Napi::Uint32Array words = to_u32_array(env, info[1], where + ": words");
    const auto held = static_cast<std::uint32_t>(words.ElementLength() / words_per_wr);
    const std::uint32_t count = to_u32(env, info[2], where + ": count", held);
    return BatchArgs{mr->get(), words, count};
  }
  // WR i's one SGE: `length` bytes at `offset` in `mr`, or a RangeError naming the WR.
  static verbs::Sge batch_sge(Napi::Env env, const std::string& where, const verbs::MemoryRegion& mr, std::uint32_t i,
                              std::uint32_t offset, std::uint32_t length) {
    if (std::uint64_t{offset} + length > mr.length()) {
      throw Napi::RangeError::New(env, where + ": wr " + std::to_string(i) + " (offset " + std::to_string(offset) + ", length " +
                                           std::to_string(length) + ") lies outside the " + std::to_string(mr.length()) +
                                           "-byte region");
    }
    return verbs::Sge{mr.addr() + offset, length, mr.lkey()};
  }
  std::vector<verbs::Sge> sges_;  // the batch posts', reused
  std::vector<verbs::RecvWr> recv_wrs_;
  std::vector<verbs::SendWr> send_wrs_;
};

// ---------------------------------------------------------------- PD
class PdWrap : public VerbsWrap<PdWrap, verbs::ProtectionDomain> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "ProtectionDomain",
                       {InstanceMethod<&PdWrap::RegMr>("regMr"), InstanceMethod<&PdWrap::CreateAh>("createAh"),
                        InstanceMethod<&PdWrap::CreateSrq>("createSrq"), InstanceMethod<&PdWrap::CreateQp>("createQp"),
                        InstanceMethod<&PdWrap::Dealloc>("dealloc")});
  }
  using VerbsWrap::VerbsWrap;
  ~PdWrap() override { release(); }

 private:
  Napi::Value RegMr(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    verbs::ProtectionDomain& pd = obj(env, "protection domain");
    void* addr = nullptr;
    std::size_t length = 0;
    if (info[0].IsArrayBuffer()) {
      auto ab = info[0].As<Napi::ArrayBuffer>();
      addr = ab.Data();
      length = ab.ByteLength();
    } else if (info[0].IsTypedArray()) {
      auto ta = info[0].As<Napi::TypedArray>();
      addr = static_cast<std::uint8_t*>(ta.ArrayBuffer().Data()) + ta.ByteOffset();
      length = ta.ByteLength();
    } else {
      type_error(env, "pd.regMr: memory", "an ArrayBuffer, a Buffer or a typed array", info[0]);
    }
    const verbs::AccessFlags access =
        info.Length() > 1 && !info[1].IsUndefined() ? to_access(env, info[1], "pd.regMr: access") : verbs::AccessFlags{};
    verbs::Result<std::unique_ptr<verbs::MemoryRegion>> r = verbs::Error{};
    run([&] { r = pd.reg_mr(addr, length, access); });
    std::unique_ptr<verbs::MemoryRegion> mr = unwrap_result(env, r);
    Napi::Object js = make_wrap<MrWrap>(classes_->mr, engine_, engine_js(), std::move(mr), classes_);
    MrWrap::Unwrap(js)->hold(info[0].As<Napi::Object>());
    return js;
  }
  Napi::Value CreateAh(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    verbs::ProtectionDomain& pd = obj(env, "protection domain");
    const verbs::AhAttr attr = to_ah_attr(env, info[0], "pd.createAh");
    verbs::Result<std::unique_ptr<verbs::AddressHandle>> r = verbs::Error{};
    run([&] { r = pd.create_ah(attr); });
    std::shared_ptr<verbs::AddressHandle> ah = unwrap_result(env, r);
    Napi::Object js = classes_->ah.New({});
    AhWrap::Unwrap(js)->init(engine_, engine_js(), std::move(ah));
    return js;
  }
  Napi::Value CreateSrq(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    verbs::ProtectionDomain& pd = obj(env, "protection domain");
    Napi::Object o = to_object(env, info[0], "pd.createSrq: attributes", "an object {maxWr, maxSge, srqLimit}");
    verbs::SrqAttr a;
    a.max_wr = to_u32(env, o.Get("maxWr"), "pd.createSrq: maxWr");
    if (has(o, "maxSge")) a.max_sge = to_u32(env, o.Get("maxSge"), "pd.createSrq: maxSge");
    if (has(o, "srqLimit")) a.srq_limit = to_u32(env, o.Get("srqLimit"), "pd.createSrq: srqLimit");
    verbs::Result<std::unique_ptr<verbs::SharedReceiveQueue>> r = verbs::Error{};
    run([&] { r = pd.create_srq(a); });
    return make_wrap<SrqWrap>(classes_->srq, engine_, engine_js(), unwrap_result(env, r), classes_);
  }
  Napi::Value CreateQp(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    verbs::ProtectionDomain& pd = obj(env, "protection domain");
    Napi::Object o = to_object(env, info[0], "pd.createQp: options", "an object {type, sendCq, recvCq, cap, ...}");
    verbs::QpInitAttr init;
    init.qp_type = to_qp_type(env, o.Get("type"), "pd.createQp: type");
    init.send_cq = cq_of(env, classes_->cq, o.Get("sendCq"), "pd.createQp: sendCq");
    init.recv_cq = cq_of(env, classes_->cq, has(o, "recvCq") ? o.Get("recvCq") : o.Get("sendCq"), "pd.createQp: recvCq");
    if (has(o, "srq")) {
      Napi::Value s = o.Get("srq");
      if (!s.IsObject() || !s.As<Napi::Object>().InstanceOf(classes_->srq.Value()) ||
          SrqWrap::Unwrap(s.As<Napi::Object>())->get() == nullptr) {
        type_error(env, "pd.createQp: srq", "a live SharedReceiveQueue from pd.createSrq()", s);
      }
      init.srq = SrqWrap::Unwrap(s.As<Napi::Object>())->get();
    }
    init.cap = to_cap(env, o.Get("cap"), "pd.createQp: cap");
    if (has(o, "sqSigAll")) init.sq_sig_all = to_bool(env, o.Get("sqSigAll"), "pd.createQp: sqSigAll");
    if (has(o, "qpContext")) init.qp_context = to_u64(env, o.Get("qpContext"), "pd.createQp: qpContext");
    verbs::Result<std::unique_ptr<verbs::QueuePair>> r = verbs::Error{};
    run([&] { r = pd.create_qp(init); });
    return make_wrap<QpWrap>(classes_->qp, engine_, engine_js(), unwrap_result(env, r), classes_);
  }
  Napi::Value Dealloc(const Napi::CallbackInfo& info) {
    release();
    return info.Env().Undefined();
  }
};

// bufferAddress(buffer) → BigInt: where a Buffer's bytes are (for sge()).
Napi::Value BufferAddress(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info[0].IsArrayBuffer()) return u64_to_js(env, reinterpret_cast<std::uint64_t>(info[0].As<Napi::ArrayBuffer>().Data()));
  if (info[0].IsTypedArray()) {
    auto ta = info[0].As<Napi::TypedArray>();
    return u64_to_js(env, reinterpret_cast<std::uint64_t>(static_cast<std::uint8_t*>(ta.ArrayBuffer().Data()) + ta.ByteOffset()));
  }
  type_error(env, "bufferAddress: buffer", "an ArrayBuffer, a Buffer or a typed array", info[0]);
}

}  // namespace

Napi::Object wrap_pd(VerbsClasses* classes, const EnginePtr& e, Napi::Object engine_js, std::unique_ptr<verbs::ProtectionDomain> pd) {
  return make_wrap<PdWrap>(classes->pd, e, engine_js, std::move(pd), classes);
}

Napi::Object wrap_cq(VerbsClasses* classes, const EnginePtr& e, Napi::Object engine_js, std::unique_ptr<verbs::CompletionQueue> cq) {
  return make_wrap<CqWrap>(classes->cq, e, engine_js, std::move(cq), classes);
}

void init_verbs(Napi::Env env, Napi::Object exports, VerbsClasses* classes) {
  Napi::Function device = define_device(env);
  Napi::Function pd = PdWrap::Define(env);
  Napi::Function cq = CqWrap::Define(env);
  Napi::Function qp = QpWrap::Define(env);
  Napi::Function mr = MrWrap::Define(env);
  Napi::Function ah = AhWrap::Define(env);
  Napi::Function srq = SrqWrap::Define(env);
  classes->device = Napi::Persistent(device);
  classes->pd = Napi::Persistent(pd);
  classes->cq = Napi::Persistent(cq);
  classes->qp = Napi::Persistent(qp);
  classes->mr = Napi::Persistent(mr);
  classes->ah = Napi::Persistent(ah);
  classes->srq = Napi::Persistent(srq);
  Napi::Object verbs = Napi::Object::New(env);
  verbs.Set("openDevice", Napi::Function::New(env, open_device_js, "openDevice", classes));
  verbs.Set("bufferAddress", Napi::Function::New(env, BufferAddress, "bufferAddress"));
  // ibv_event_type's names by value, for the deviceEvent records (engine/record_types.h).
  Napi::Array event_types = Napi::Array::New(env, verbs::kEventTypeCount);
  for (std::uint32_t t = 0; t < static_cast<std::uint32_t>(verbs::kEventTypeCount); ++t) {
    event_types.Set(t, std::string(verbs::event_type_enum_name(static_cast<verbs::EventType>(t))));
  }
  verbs.Set("asyncEventTypes", event_types);
  // Test-only doors (src/native/testing/faults.ts), deliberately not in verbs.ts.
  verbs.Set("__testing_setFaults", Napi::Function::New(env, testing_set_faults, "__testing_setFaults", classes));
  verbs.Set("__testing_faultCounters", Napi::Function::New(env, testing_fault_counters, "__testing_faultCounters", classes));
  verbs.Set("Device", device);
  verbs.Set("ProtectionDomain", pd);
  verbs.Set("CompletionQueue", cq);
  verbs.Set("QueuePair", qp);
  verbs.Set("MemoryRegion", mr);
  verbs.Set("AddressHandle", ah);
  verbs.Set("SharedReceiveQueue", srq);
  exports.Set("verbs", verbs);
}

}  // namespace qpgate::addon
