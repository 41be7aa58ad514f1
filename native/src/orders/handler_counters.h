// The order handler's counters: every reject by reason, every decode error
// by kind, and the flow. Engine-thread writers, anyone reads (/metrics).
#pragma once

#include <array>

#include "engine/counters.h"
#include "orders/codec.h"
#include "orders/types.h"

namespace qpgate::orders {

using engine::SingleWriterCounter;

struct alignas(64) HandlerCounters {
  std::array<SingleWriterCounter, kRejectReasons> rejects;      // by RejectReason
  std::array<SingleWriterCounter, kDecodeErrors> decode_errors; // by DecodeError (each also a MALFORMED reject)
  SingleWriterCounter messages_in;
  SingleWriterCounter acks;
  SingleWriterCounter cancel_acks;      // answers to Cancel
  SingleWriterCounter replace_acks;
  SingleWriterCounter unsolicited_cancels;  // IOC remainder, self-match, disconnect
  SingleWriterCounter fills;            // Fill messages (two per trade)
  SingleWriterCounter trades;
  SingleWriterCounter resends;          // resent ids answered from the duplicate table
  SingleWriterCounter hellos;
  SingleWriterCounter journal_records;
  SingleWriterCounter risk_word_records;   // kRiskWords appended (a remote-owned word changed)
  SingleWriterCounter risk_words_restored; // kRiskWords replayed at open
};

}  // namespace qpgate::orders
