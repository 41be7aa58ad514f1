// The feed's engine agent: hosts the publishers and subscribers of one
// engine and drives them on its thread.
//
//   FEED_PUBLISH records (toEngine) are routed to it by the command agent
//   (it registers itself as their handler in on_start, when it was given
//   one) and handed to the
//   publisher they name; a publisher out of send slots leaves the record in
//   the ring (back-pressure).
//   do_work, the send side: every publisher (flush open frames,
//   heartbeats, post, reap), the recovery service (RC sessions answering
//   retransmission and snapshot requests from the publishers' rings and
//   snapshot stores), closing publishers until their last frames left;
//   then arms the engine deadline with the earliest heartbeat.
//   deliver, the receive side, run by its FeedDeliveryAgent: the
//   publishers' send completions, every subscriber (poll, arbitrate,
//   records to fromEngine); then arms the deadline with the earliest
//   arbitration or recovery timeout.
//
// Its builder (gateway/engine_agents.h) gives it the engine's command agent
// and adds it right after that agent, so it runs right after the records of
// each duty cycle, and adds its FeedDeliveryAgent after the device agents,
// so a frame the devices receive in a duty cycle reaches JS in that cycle
// (a driven engine's publish then runs two cycles, not three: one syscall
// per device per cycle saved; bench/README.md, "Driven delivery"). The
// owner of the engine keeps the pointers the builder returns. Tests may
// build them by hand the same way.
//
// Publishers and subscribers are added and removed on the engine thread
// (Engine::run_on_engine); their stats objects may be read from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/agent.h"
#include "engine/command_agent.h"
#include "feed/publisher.h"
#include "feed/recovery_service.h"
#include "feed/subscriber.h"

namespace qpgate::feed {

class FeedAgent final : public engine::Agent, public engine::RecordHandler {
 public:
  // `commands`: the engine's command agent, which routes FEED_PUBLISH records
  // here; nullptr for an agent driven by hand (tests).
  explicit FeedAgent(engine::CommandAgent* commands);
  ~FeedAgent() override;
  FeedAgent(const FeedAgent&) = delete;
  FeedAgent& operator=(const FeedAgent&) = delete;

  const char* name() const override { return "feed"; }
  void on_start(engine::AgentContext& context) override;
  int do_work(std::uint64_t now_ns) override;
  // The subscribers' duty cycle (FeedDeliveryAgent::do_work).
  int deliver(std::uint64_t now_ns);
  void on_close() override;
  bool on_record(std::int32_t type, const std::byte* payload, std::int32_t length) override;

  // Engine thread. Ids are never reused within an agent. `memory` is
  // reserve(config), made on another thread: adding costs the duty cycle the
  // verbs objects and a pointer hand-off. Without it, reserves here (tests).
  // `alternate`: a second device on another link, which line B leaves from
  // (a publisher) or is received on (a subscriber); see Publisher::create.
  verbs::Result<std::uint32_t> add_publisher(verbs::Device& device, const PublisherConfig& config,
                                             PublisherReservation memory, verbs::Device* alternate = nullptr);
  verbs::Result<std::uint32_t> add_publisher(verbs::Device& device, const PublisherConfig& config,
                                             verbs::Device* alternate = nullptr);
  // Sends END_OF_SESSION and frees the publisher once its frames left (or 1 s).
  bool remove_publisher(std::uint32_t id);
  // Likewise, and hands its rings and snapshot stores to `released`, for the
  // caller to free off the engine thread.
  bool remove_publisher(std::uint32_t id, PublisherReservation& released);
  verbs::Result<std::uint32_t> add_subscriber(verbs::Device& device, SubscriberConfig config,
                                              verbs::Device* alternate = nullptr);
  bool remove_subscriber(std::uint32_t id);

  // Recovery sessions (engine thread): an RC QP per subscriber, bound to a publisher.
  verbs::Result<verbs::RcPeer> open_recovery_session(verbs::Device& device, const RecoverySessionConfig& config);
  bool close_recovery_session(std::uint32_t session) { return recovery_.close(session); }
  std::vector<RecoverySessionInfo> recovery_sessions() const { return recovery_.sessions(); }

  Publisher* publisher(std::uint32_t id) const;
  Subscriber* subscriber(std::uint32_t id) const;
  std::size_t publisher_count() const { return publishers_.size(); }
  std::size_t subscriber_count() const { return subscribers_.size(); }
  std::uint64_t rejected_records() const { return rejected_records_.get(); }

 private:
  struct Closing {
    std::unique_ptr<Publisher> publisher;
    std::uint64_t give_up_ns;
  };
  engine::AgentContext* context_ = nullptr;
  engine::CommandAgent* commands_ = nullptr;
  std::vector<std::pair<std::uint32_t, std::unique_ptr<Publisher>>> publishers_;
  std::vector<std::pair<std::uint32_t, std::unique_ptr<Subscriber>>> subscribers_;
  std::vector<Closing> closing_;
  RecoveryService recovery_{[this](std::uint32_t id) { return publisher(id); }};
  std::uint32_t next_id_ = 1;
  std::uint32_t last_session_ = 0;
  engine::SingleWriterCounter rejected_records_;  // FEED_PUBLISH for no publisher, or too short
};

// The receive side of a FeedAgent as an agent of its own, added after the
// device agents (see the top of this file). Its faults stop only itself.
class FeedDeliveryAgent final : public engine::Agent {
 public:
  explicit FeedDeliveryAgent(FeedAgent& feed) : feed_(feed) {}
  const char* name() const override { return "feed-delivery"; }
  void on_start(engine::AgentContext& /*context*/) override {}  // the FeedAgent holds the context
  int do_work(std::uint64_t now_ns) override { return feed_.deliver(now_ns); }

 private:
  FeedAgent& feed_;
};

}  // namespace qpgate::feed
