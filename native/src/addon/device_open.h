// openDevice's two backends: the options of each, opening on the engine
// thread, and what a JS Device reports that only the backend knows (its
// address, interface and chosen GID). verbs_wrap.cc's DeviceWrap holds the
// verbs::Device and these facts; nothing else in the addon names a backend's
// device type.
#pragma once

#include <napi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "verbs/device.h"

namespace qpgate::addon {

class EngineWrap;

// Fixed once the device is open.
struct DeviceFacts {
  std::string address;     // the IPv4 address its GID carries
  std::string gid;         // the source GID ('::ffff:a.b.c.d')
  std::uint32_t gid_index = 0;
  std::string gid_report;  // ibv: which GID entry and why (gid_select.h); soft: ""
  std::string netdev;      // the interface
  std::uint32_t mtu = 0;   // its IP MTU
  bool loopback = false;
  std::uint8_t port = 1;
  std::string alternate_gid;  // the alternate path's source GID (verbs/source_gid.h); "" when none
};

struct OpenedDevice {
  std::unique_ptr<verbs::Device> device;
  DeviceFacts facts;
  bool events_agent = false;  // its async events go through EngineAgents::device_events
};

// openDevice(engine, {kind: 'soft', address | name, alternateAddress?, ...}) or
// {kind: 'ibv', name, port?, gidIndex?, interface?}; kind defaults to 'soft'.
// Opens on the engine thread and attaches the device to its agent. Throws a
// TypeError for malformed options and the verbs error when it cannot open.
OpenedDevice open_device(Napi::Env env, EngineWrap& engine, Napi::Value options);

// One row of a port's GID table as /v1/device shows it.
struct GidRow {
  std::uint32_t index = 0;
  std::string gid;
  std::string type;    // "RoCE v2", "RoCE v1", "IB"
  std::string netdev;  // "" when the entry names none
};
// ibv: the valid entries with their types; soft: every entry (RoCE v2).
// Engine thread.
verbs::Result<std::vector<GidRow>> gid_rows(verbs::Device& device, std::uint8_t port);

}  // namespace qpgate::addon
