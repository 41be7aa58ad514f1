#include "feed/feed_agent.h"

#include <algorithm>

#include "common/clock.h"
#include "feed/feed_records.h"
#include "feed/le.h"

namespace qpgate::feed {
namespace {

constexpr std::uint64_t kCloseTimeoutNs = 1'000'000'000;

}  // namespace

FeedAgent::FeedAgent(engine::CommandAgent* commands) : commands_(commands) {}
FeedAgent::~FeedAgent() = default;

void FeedAgent::on_start(engine::AgentContext& context) {
  context_ = &context;
  if (commands_ != nullptr) commands_->set_handler(records::kFeedPublish, this);
}

void FeedAgent::on_close() {
  if (commands_ != nullptr && commands_->handler(records::kFeedPublish) == this) {
    commands_->set_handler(records::kFeedPublish, nullptr);
  }
  // The engine stops: what is left goes now (a stopped engine sends nothing).
  closing_.clear();
  context_ = nullptr;
}

bool FeedAgent::on_record(std::int32_t type, const std::byte* payload, std::int32_t length) {
  if (type != records::kFeedPublish || length < records::kPublishHeaderBytes) {
    rejected_records_.add();
    return true;
  }
  const auto* p = reinterpret_cast<const std::uint8_t*>(payload);
  Publisher* pub = publisher(load_le<std::uint32_t>(p));
  if (pub == nullptr) {
    rejected_records_.add();
    return true;
  }
  const auto status = pub->publish(load_le<std::uint16_t>(p + 4),
                                   std::span<const std::uint8_t>(p + records::kPublishHeaderBytes,
                                                                 static_cast<std::size_t>(length - records::kPublishHeaderBytes)),
                                   load_le<std::uint16_t>(p + 6), load_le<std::uint64_t>(p + 8));
  return status != PublishStatus::kRetry;  // errors are counted by the publisher
}

int FeedAgent::do_work(std::uint64_t now_ns) {
  int work = 0;
  std::uint64_t deadline = UINT64_MAX;
  for (auto& [id, p] : publishers_) {
    work += p->do_work(now_ns);
    deadline = std::min(deadline, p->next_deadline_ns());
  }
  work += recovery_.do_work(now_ns);
  if (recovery_.size() > 0) deadline = std::min(deadline, now_ns + 1'000'000);  // RC completions are polled
  if (!closing_.empty()) {
    for (auto& c : closing_) work += c.publisher->do_work(now_ns);
    std::erase_if(closing_, [&](const Closing& c) { return c.publisher->drained() || now_ns >= c.give_up_ns; });
    if (!closing_.empty()) deadline = std::min(deadline, now_ns + 1'000'000);
  }
  if (deadline != UINT64_MAX && context_ != nullptr) context_->arm_deadline(deadline);
  return work;
}

int FeedAgent::deliver(std::uint64_t now_ns) {
  if (context_ == nullptr) return 0;
  int work = 0;
  for (auto& [id, p] : publishers_) work += p->reap();
  std::uint64_t deadline = UINT64_MAX;
  for (auto& [id, s] : subscribers_) {
    work += s->do_work(now_ns, *context_->from_engine);
    if (s->next_deadline_ns() != 0) deadline = std::min(deadline, s->next_deadline_ns());
  }
  if (deadline != UINT64_MAX) context_->arm_deadline(deadline);
  return work;
}

verbs::Result<std::uint32_t> FeedAgent::add_publisher(verbs::Device& device, const PublisherConfig& config,
                                                      verbs::Device* alternate) {
  auto memory = reserve(config);
  if (!memory.ok()) return memory.error();
  return add_publisher(device, config, std::move(memory).value(), alternate);
}

verbs::Result<std::uint32_t> FeedAgent::add_publisher(verbs::Device& device, const PublisherConfig& config,
                                                      PublisherReservation memory, verbs::Device* alternate) {
  PublisherConfig c = config;
  if (c.previous_session == 0) c.previous_session = last_session_;
  auto p = Publisher::create(device, c, std::move(memory), qpgate::monotonic_ns(), alternate);
  if (!p.ok()) return p.error();
  last_session_ = p.value()->session();
  const std::uint32_t id = next_id_++;
  publishers_.emplace_back(id, std::move(p).value());
  return id;
}

bool FeedAgent::remove_publisher(std::uint32_t id) {
  PublisherReservation released;  // freed here: callers that care use the other overload
  return remove_publisher(id, released);
}

bool FeedAgent::remove_publisher(std::uint32_t id, PublisherReservation& released) {
  auto it = std::find_if(publishers_.begin(), publishers_.end(), [&](const auto& e) { return e.first == id; });
  if (it == publishers_.end()) return false;
  const std::uint64_t now = qpgate::monotonic_ns();
  it->second->close(now);
  released = it->second->release_channel_memory();
  if (context_ != nullptr) closing_.push_back(Closing{std::move(it->second), now + kCloseTimeoutNs});
  publishers_.erase(it);
  return true;
}

verbs::Result<std::uint32_t> FeedAgent::add_subscriber(verbs::Device& device, SubscriberConfig config,
                                                       verbs::Device* alternate) {
  config.id = next_id_++;
  auto s = Subscriber::create(device, config, alternate);
  if (!s.ok()) return s.error();
  subscribers_.emplace_back(config.id, std::move(s).value());
  return config.id;
}

bool FeedAgent::remove_subscriber(std::uint32_t id) {
  auto it = std::find_if(subscribers_.begin(), subscribers_.end(), [&](const auto& e) { return e.first == id; });
  if (it == subscribers_.end()) return false;
  subscribers_.erase(it);
  return true;
}

verbs::Result<verbs::RcPeer> FeedAgent::open_recovery_session(verbs::Device& device, const RecoverySessionConfig& config) {
  if (publisher(config.publisher) == nullptr) {
    return verbs::Error{ENOENT, "recovery session: no publisher " + std::to_string(config.publisher)};
  }
  return recovery_.open(device, config, qpgate::monotonic_ns());
}

Publisher* FeedAgent::publisher(std::uint32_t id) const {
  for (const auto& [i, p] : publishers_) {
    if (i == id) return p.get();
  }
  return nullptr;
}

Subscriber* FeedAgent::subscriber(std::uint32_t id) const {
  for (const auto& [i, s] : subscribers_) {
    if (i == id) return s.get();
  }
  return nullptr;
}

}  // namespace qpgate::feed
