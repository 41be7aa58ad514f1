// The gateway side of bench_orders_rc, run as the product runs it: an
// engine::Engine (one pinned thread, the spin idle strategy) built by
// gateway::add_engine_agents, as the addon builds it, its SoftDeviceAgent
// driving a SoftDevice and its OrderAgent hosting one OrderService on it —
// the agents and duty cycle of createEngine + openDevice + orders.createService. Control calls go
// through Engine::run_on_engine, as the addon's do.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench_verbs.h"
#include "common/clock.h"
#include "engine/engine.h"
#include "gateway/engine_agents.h"
#include "orders/order_service.h"
#include "rc_order_client.h"
#include "verbs/soft/soft_device.h"

namespace qpgate::bench {

struct GatewayOptions {
  std::string address;
  int cpu = 0;
  std::uint32_t sessions = 1;
  std::string journal_path;
  orders::SyncPolicy sync = orders::SyncPolicy::kNoSync;  // the product's default ('none')
};

// The service config the TS layer derives from the default OrdersConfig
// (src/orders/config.ts), with one instrument, two accounts per session
// and the throttle off (the benchmark is the limit, not the throttle).
inline orders::ServiceConfig bench_service_config(const GatewayOptions& o) {
  orders::ServiceConfig c;
  orders::InstrumentConfig ins;
  ins.book = orders::BookConfig{kBenchInstrument, 1, 1, 100000, orders::SelfMatchPolicy::kCancelNewest};
  c.handler.instruments.push_back(ins);
  for (std::uint32_t i = 0; i < o.sessions; ++i) {
    c.handler.accounts.push_back(orders::AccountConfig{buy_account(i), 10'000'000'000});
    c.handler.accounts.push_back(orders::AccountConfig{sell_account(i), 10'000'000'000});
  }
  c.handler.journal.path = o.journal_path;
  c.handler.journal.sync = o.sync;
  c.handler.journal.group_max_records = 64;
  c.handler.journal.group_max_delay_us = 0;
  c.handler.order_capacity = 1 << 16;
  c.handler.client_order_id_capacity = 1 << 19;  // a run's orders
  c.recv_depth = 256;
  c.send_depth = 256;
  c.max_message_bytes = 512;
  c.back_pressure_messages = 1024;
  c.resend_capacity = 8192;
  return c;
}

class EngineGateway {
 public:
  explicit EngineGateway(const GatewayOptions& o) : options_(o) {
    verbs::soft::SoftDeviceOptions d;
    d.address_or_name = o.address;
    device_ = take(verbs::soft::open_soft_device(d), "open_soft_device " + o.address);
    engine::EngineConfig ec;
    ec.cpus = std::to_string(o.cpu);
    ec.idle = engine::IdleKind::kSpin;
    engine_ = std::make_unique<engine::Engine>(ec);
    const gateway::EngineAgents agents = gateway::add_engine_agents(*engine_);
    soft_ = agents.soft_devices;
    agent_ = agents.orders;
    engine_->start();
    verbs::Status attached;
    verbs::Result<std::uint32_t> id = verbs::Error{};
    engine_->run_on_engine([&] {
      attached = soft_->attach(*device_);
      if (attached.ok()) id = agent_->add_service(*device_, bench_service_config(o));
    });
    check(attached, "attach the soft device to the engine");
    service_id_ = take(std::move(id), "orders.createService");
  }

  ~EngineGateway() { engine_->stop(); }

  // POST /v1/sessions for each client QP, in order: session i + 1.
  std::vector<PeerWire> open_sessions(const std::vector<PeerWire>& clients) {
    std::vector<PeerWire> answers;
    for (std::uint32_t i = 0; i < clients.size(); ++i) {
      orders::SessionRequest r;
      r.session = i + 1;
      r.role = orders::SessionRole::kTrading;
      r.accounts = {buy_account(i), sell_account(i)};
      r.throttle = orders::ThrottleConfig{0, 1};
      r.remote = verbs::RcPeer{clients[i].gid, clients[i].qpn, clients[i].psn, clients[i].mtu, std::nullopt, clients[i].ack_hold_ns};
      verbs::Result<orders::SessionAnswer> a = verbs::Error{};
      engine_->run_on_engine([&] { a = service().open_session(r, qpgate::monotonic_ns()); });
      const orders::SessionAnswer s = take(std::move(a), "open_session");
      answers.push_back(PeerWire{s.qpn, s.psn, s.gid, s.mtu, s.ack_hold_ns});
    }
    return answers;
  }

  // After the run, from the engine thread: the service's own view.
  struct Figures {
    double ack_p50_us = 0, ack_p99_us = 0, ack_p999_us = 0;  // receive completion seen -> answer posted
    std::uint64_t acks = 0, journal_records = 0, journal_syncs = 0, duty_cycles = 0, idle_cycles = 0;
  };
  Figures figures() {
    Figures f;
    engine_->run_on_engine([&] {
      orders::OrderService& s = service();
      f.ack_p50_us = percentile_us(s.ack_latency(), 50);
      f.ack_p99_us = percentile_us(s.ack_latency(), 99);
      f.ack_p999_us = percentile_us(s.ack_latency(), 99.9);
      f.acks = s.ack_latency().total();
      f.journal_records = s.handler().journal().stats().records_appended;
      f.journal_syncs = s.handler().journal().stats().syncs;
    });
    const engine::EngineStats st = engine_->stats();
    f.duty_cycles = st.duty_cycles;
    f.idle_cycles = st.idle_cycles;
    return f;
  }

 private:
  orders::OrderService& service() { return *agent_->service(service_id_); }

  GatewayOptions options_;
  std::unique_ptr<verbs::soft::SoftDevice> device_;
  std::unique_ptr<engine::Engine> engine_;
  engine::SoftDeviceAgent* soft_ = nullptr;
  orders::OrderAgent* agent_ = nullptr;
  std::uint32_t service_id_ = 0;
};

}  // namespace qpgate::bench
