// The order handler's journal records: one per accepted input, fixed-size,
// little-endian host structs. Replay runs each through the same code the live
// path ran after its checks, so books, fills, app_seqs, gateway order ids and
// trade ids come out the same; each record carries the app_seq and order id
// it was given, and replay refuses to start if they do not come out equal
// (a changed configuration, e.g. a different self-match policy, would do it).
//
// kRiskWords is not an input's record: it holds an account's remote-owned risk
// words (credit limit, kill switch) as the engine found them after a client's
// RDMA atomic changed them, so a restart puts them back (risk_region.h and
// OrderHandler::journal_risk_words say when it is written).
#pragma once

#include <cstdint>

namespace qpgate::orders {

enum class RecordType : std::uint16_t {
  kNewOrder = 1,
  kCancel = 2,
  kReplace = 3,
  kReject = 4,
  kCancelSession = 5,  // cancel-on-disconnect
  kRiskWords = 6,      // an account's remote-owned words changed
};

struct NewOrderRecord {
  std::uint64_t app_seq;  // of the Ack
  std::uint64_t order_id;
  std::uint64_t client_order_id;
  std::uint64_t account;
  std::int64_t price;
  std::int64_t quantity;
  std::uint32_t session;
  std::uint32_t instrument_id;
  std::uint8_t side;
  std::uint8_t time_in_force;
  std::uint8_t pad[6];
};

struct CancelRecord {
  std::uint64_t app_seq;  // of the CancelAck
  std::uint64_t client_order_id;
  std::uint64_t orig_client_order_id;
  std::uint32_t session;
  std::uint32_t instrument_id;
};

struct ReplaceRecord {
  std::uint64_t app_seq;  // of the ReplaceAck
  std::uint64_t client_order_id;
  std::uint64_t orig_client_order_id;
  std::int64_t price;
  std::int64_t quantity;
  std::uint32_t session;
  std::uint32_t instrument_id;
};

struct RejectRecord {
  std::uint64_t app_seq;
  std::uint64_t client_order_id;  // 0: not recorded for duplicate detection
  std::uint32_t session;
  std::uint8_t reason;
  std::uint8_t pad[3];
};

struct CancelSessionRecord {
  std::uint64_t next_app_seq;  // the session's next app_seq before the cancels
  std::uint32_t session;
  std::uint32_t pad;
};

// 24 bytes. The words' values as loaded, not the atomics that made them:
// replay stores them back, whatever sequence of FETCH_ADDs and CMP_SWAPs led there.
struct RiskWordsRecord {
  std::uint64_t account;
  std::uint64_t credit_limit;  // RemoteOwnedWords::kCreditLimit
  std::uint64_t kill_switch;   // RemoteOwnedWords::kKillSwitch (non-zero = killed)
};
static_assert(sizeof(RiskWordsRecord) == 24);

}  // namespace qpgate::orders
